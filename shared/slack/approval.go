package slack

import (
	"context"
	"errors"
	"fmt"
	"strings"

	goslack "github.com/slack-go/slack"

	"github.com/agentsfleet/agentsfleet/shared/fault"
	"github.com/agentsfleet/agentsfleet/shared/fleet"
	"github.com/agentsfleet/agentsfleet/shared/run"
	"github.com/agentsfleet/agentsfleet/shared/run/start"
	"github.com/agentsfleet/agentsfleet/shared/slack/thread"
)

// approvalAction decides the approval an Approve or Deny button names
// (value thread.ApprovalValue's), if the button was clicked in the run's
// own channel and the person who clicked is on the fleet's allow_approve
// (mayApprove), and says so in the run's thread; the last decision the run
// waited on starts its next invocation. A refusal is told in a message
// only the person who clicked sees. It returns an error only for what is
// wrong inside agentsfleet.
func (h *Handler) approvalAction(ctx context.Context, ic goslack.InteractionCallback, action, value string) error {
	channel, clicked := clickedIn(ic)
	user := ic.User.ID
	runID, approvalID, ok := thread.ParseApprovalValue(value)
	if !ok {
		h.log.Warn("slack: an approval button with a value not the app's", "value", value)
		h.whisper(ctx, channel, clicked, user, "That button names no approval.")
		return nil
	}
	r, err := h.cfg.Store.GetRun(ctx, runID)
	switch {
	case errors.Is(err, fault.RunNotFound), errors.Is(err, fault.RequestInvalid):
		h.whisper(ctx, channel, clicked, user, "There is no run "+runID+" to decide on.")
		return nil
	case err != nil:
		return err
	}
	// As with Stop: a run's approvals are decided only from its own
	// thread's channel.
	if r.Thread == nil || r.Thread.Channel != channel {
		h.log.Warn("slack: an approval refused: the run does not answer in this channel", "run_id", runID, "channel", channel)
		h.whisper(ctx, channel, clicked, user, "Run "+runID+" does not answer in this channel, so its approvals cannot be decided from here.")
		return nil
	}
	where := r.Thread.ThreadTS
	ok, why, err := h.mayApprove(ctx, r.Fleet, user)
	if err != nil {
		return err
	}
	if !ok {
		h.log.Info("slack: an approval refused: not on allow_approve", "run_id", runID, "fleet", r.Fleet, "user", user)
		h.whisper(ctx, channel, where, user, why)
		return nil
	}
	decision, verb := run.DecisionApprove, "Approved"
	if action == thread.DenyAction {
		decision, verb = run.DecisionDeny, "Denied"
	}
	a, resume, err := h.cfg.Store.Decide(ctx, runID, approvalID, decision, "slack:"+ic.Team.ID+"/"+user, "")
	if errors.Is(err, fault.ApprovalNotFound) || errors.Is(err, fault.ApprovalDecided) {
		var fe *fault.Error
		msg := err.Error()
		if errors.As(err, &fe) {
			msg = fe.Msg
		}
		h.whisper(ctx, channel, where, user, "Nothing was decided: "+msg+".")
		return nil
	}
	if err != nil {
		return err
	}
	what := a.Tool
	if a.Secret != "" {
		what = fmt.Sprintf("%s's use of the secret %s for %s", a.Tool, a.Secret, thread.Inert(a.Host))
	}
	text := fmt.Sprintf("%s by <@%s>: %s (%s).", verb, user, what, a.ID)
	if resume {
		h.startRunner(ctx, runID)
		text += " The run goes on."
		h.closeApprovals(ctx, channel, ic, runID)
	} else {
		text += " The run waits on its other approvals."
	}
	h.answer(ctx, channel, where, text)
	return nil
}

// Updater replaces a message's text and blocks (chat.update). The Handler
// finds it on its Poster, to take the buttons off an approval message once
// every approval on it is decided.
type Updater interface {
	Update(ctx context.Context, channel, ts, text string) error
}

// closeApprovals replaces the approval message the button was on with
// what became of each approval of the run: none is pending any more, so
// its buttons can decide nothing.
func (h *Handler) closeApprovals(ctx context.Context, channel string, ic goslack.InteractionCallback, runID string) {
	u, ok := h.cfg.Post.(Updater)
	ts := ic.Container.MessageTs
	if ts == "" {
		ts = ic.Message.Timestamp
	}
	if !ok || ts == "" {
		return
	}
	all, err := h.cfg.Store.ListApprovals(ctx, runID)
	if err != nil {
		h.log.Warn("slack: the approvals to show could not be read", "run_id", runID, "error", err)
		return
	}
	lines := []string{"Decided:"}
	for _, a := range all {
		what := a.Tool
		if a.Secret != "" {
			what = fmt.Sprintf("%s with the secret %s for %s %s", a.Tool, a.Secret, a.Method, a.Host)
		}
		lines = append(lines, fmt.Sprintf("%s (%s): %s by %s", what, a.ID, decided[a.Status], a.By))
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), ReplyTimeout)
	defer cancel()
	if err := u.Update(ctx, channel, ts, strings.Join(lines, "\n")); err != nil {
		h.log.Warn("slack: the approval message keeps its buttons", "run_id", runID, "error", err)
	}
}

// decided is how the approval message says what became of an approval.
var decided = map[run.Decision]string{run.DecisionApprove: "approved", run.DecisionDeny: "denied", run.DecisionExpired: "expired",
	run.DecisionPending: "pending"}

// mayApprove reports whether user may decide approvals of fleetName's runs
// from Slack: only the people and user groups on its [x-agentsfleet.slack]
// allow_approve, and nobody when it sets none (a decision is then made with
// a key holding runs:approve). text says why not.
func (h *Handler) mayApprove(ctx context.Context, fleetName, user string) (ok bool, text string, err error) {
	return h.optedIn(ctx, fleetName, user, optIn{
		list: func(a fleet.SlackAccess) []string { return a.AllowApprove }, key: "allow_approve", act: "decide %s's approvals",
		nobody: "Nobody may decide %s's approvals from Slack: it sets no [x-agentsfleet.slack] allow_approve. " +
			"Decide with `agentsfleet approve` or `agentsfleet deny`, or POST /v1/runs/ID/approvals/APPROVAL_ID with a key that has runs:approve.",
	})
}

// startRunner starts a runner invocation for run id. A start that fails is
// logged: the lapsed sweep starts a running run that nobody holds.
func (h *Handler) startRunner(ctx context.Context, id string) {
	if err := start.Invoke(ctx, h.cfg.Invoker, id); err != nil {
		h.log.Error("slack: start the runner", "run_id", id, "error", err)
	}
}
