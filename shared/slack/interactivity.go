package slack

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"

	goslack "github.com/slack-go/slack"

	"github.com/agentsfleet/agentsfleet/shared/fault"
	"github.com/agentsfleet/agentsfleet/shared/slack/thread"
	"github.com/agentsfleet/agentsfleet/shared/store"
)

// interactivity is POST /slack/interactivity: a form whose payload field
// is the interaction's JSON. A block_actions payload with the Stop button
// (action_id thread.StopAction, value the run id) cancels the run and says
// so in its thread; an improvement chat's Apply or Discard button
// (thread.ApplyAction, thread.DiscardAction; value the chat's id) applies
// or discards its proposal (improveAction); a call's Approve or Deny
// button (thread.ApproveAction, thread.DenyAction) decides the approval a
// run waits on (approvalAction); every other interaction is acknowledged
// and ignored.
func (h *Handler) interactivity(w http.ResponseWriter, r *http.Request) {
	body, ok := h.verified(w, r)
	if !ok {
		return
	}
	form, err := url.ParseQuery(string(body))
	payload := form.Get("payload")
	if err != nil || payload == "" {
		writeError(w, http.StatusBadRequest, fault.RequestInvalid.ID(), "an interaction is a form with a payload field")
		return
	}
	var ic goslack.InteractionCallback
	if err := json.Unmarshal([]byte(payload), &ic); err != nil {
		writeError(w, http.StatusBadRequest, fault.RequestInvalid.ID(), "the interaction's payload is not JSON Slack sends")
		return
	}
	if ic.Type == goslack.InteractionTypeBlockActions {
		for _, a := range ic.ActionCallback.BlockActions {
			var err error
			switch {
			case a == nil:
			case a.ActionID == thread.StopAction:
				err = h.stop(r.Context(), ic, a.Value)
			case a.ActionID == thread.ApplyAction || a.ActionID == thread.DiscardAction:
				err = h.improveAction(r.Context(), ic, a.ActionID, a.Value)
			case a.ActionID == thread.ApproveAction || a.ActionID == thread.DenyAction:
				err = h.approvalAction(r.Context(), ic, a.ActionID, a.Value)
			}
			if err != nil {
				h.internal(w, r, err)
				return
			}
		}
	}
	w.WriteHeader(http.StatusOK)
}

// stop cancels the run a Stop button names, if it is the run of the thread
// the button was clicked in and the person who clicked may stop it (its
// starter, or as the fleet's access lists say: mayStop), and answers in
// that thread; a person who may not is told why in a message only they
// see. It returns an error only for what is wrong inside agentsfleet.
func (h *Handler) stop(ctx context.Context, ic goslack.InteractionCallback, runID string) error {
	channel, clicked := clickedIn(ic)
	who := "someone"
	if ic.User.ID != "" {
		who = "<@" + ic.User.ID + ">"
	}
	run, err := h.cfg.Store.GetRun(ctx, runID)
	switch {
	case errors.Is(err, fault.RunNotFound), errors.Is(err, fault.RequestInvalid):
		h.answer(ctx, channel, clicked, "There is no run "+runID+" to stop.")
		return nil
	case err != nil:
		return err
	}
	// The button's value is the app's own, but the check costs nothing: a
	// run is stopped only from its own thread's channel.
	if run.Thread == nil || run.Thread.Channel != channel {
		h.log.Warn("slack: Stop refused: the run does not answer in this channel", "run_id", runID, "channel", channel)
		h.answer(ctx, channel, clicked, "Run "+runID+" does not answer in this channel, so it cannot be stopped from here.")
		return nil
	}
	ok, why, err := h.mayStop(ctx, run.Fleet, runID, run.Thread.User, ic.User.ID)
	if err != nil {
		return err
	}
	if !ok {
		h.log.Info("slack: Stop refused: not the starter nor on the fleet's stop list", "run_id", runID, "fleet", run.Fleet, "user", ic.User.ID)
		h.whisper(ctx, channel, clicked, ic.User.ID, why)
		return nil
	}
	stopped, err := h.cfg.Store.Transition(ctx, runID, store.StatusCancelled, "stopped from Slack by "+userOr(ic.User.ID))
	if errors.Is(err, fault.RunBadTransition) {
		status := run.Status
		if cur, err := h.cfg.Store.GetRun(ctx, runID); err == nil {
			status = cur.Status
		}
		h.answer(ctx, run.Thread.Channel, run.Thread.ThreadTS, fmt.Sprintf("Run %s had already ended (%s); there is nothing to stop.", runID, status))
		return nil
	}
	if err != nil {
		return err
	}
	if stopped.PendingApprovals > 0 {
		// A waiting run has no invocation to notice the cancel: one is
		// started to end it (its run.ended and callback).
		h.startRunner(ctx, runID)
	}
	h.answer(ctx, run.Thread.Channel, run.Thread.ThreadTS, fmt.Sprintf("Stopped by %s: run %s is cancelled.", who, runID))
	return nil
}

// clickedIn is where a button was clicked: the channel, and the thread
// of the message it is on (the message itself when it is in none).
func clickedIn(ic goslack.InteractionCallback) (channel, threadTS string) {
	channel = ic.Channel.ID
	if channel == "" {
		channel = ic.Container.ChannelID
	}
	threadTS = ic.Message.ThreadTimestamp
	if threadTS == "" {
		threadTS = ic.Container.ThreadTs
	}
	if threadTS == "" {
		threadTS = ic.Container.MessageTs
	}
	return channel, threadTS
}

func userOr(id string) string {
	if id == "" {
		return "an unknown user"
	}
	return id
}
