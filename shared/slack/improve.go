package slack

import (
	"context"
	"errors"
	"fmt"
	"strings"

	goslack "github.com/slack-go/slack"

	"github.com/agentsfleet/agentsfleet/shared/fault"
	"github.com/agentsfleet/agentsfleet/shared/fleet"
	"github.com/agentsfleet/agentsfleet/shared/improve"
	"github.com/agentsfleet/agentsfleet/shared/scope"
	"github.com/agentsfleet/agentsfleet/shared/slack/thread"
	"github.com/agentsfleet/agentsfleet/shared/store"
)

// improveScope dedupes, by event_id, the Slack messages an improvement
// chat takes (its start and its replies).
const improveScope = "slack-improve"

// improveCommand is how a mention starts a chat: "improve NAME …".
const improveCommand = "improve"

// chats is the improvement chats over the Handler's store and invoker.
func (h *Handler) chats() *improve.Chats {
	return &improve.Chats{Store: h.cfg.Store, Invoker: h.cfg.Invoker}
}

// improveRequest reads "improve NAME [message]" from a mention's input.
func improveRequest(input string) (fleetName, message string, ok bool) {
	rest, found := strings.CutPrefix(input, improveCommand+" ")
	if !found {
		return "", "", false
	}
	fleetName, message, _ = strings.Cut(strings.TrimSpace(rest), " ")
	if strings.TrimSpace(message) == "" {
		message = "Let's improve this fleet. Read its Definition and its recent runs, and tell me what you would change."
	}
	return fleetName, strings.TrimSpace(message), fleetName != ""
}

// claimed reports whether this delivery of m's event is the first: the
// chat's messages are taken once however often Slack retries.
func (h *Handler) claimed(ctx context.Context, m message) (bool, error) {
	_, first, err := h.cfg.Store.ClaimIdempotencyKey(ctx, improveScope, m.eventID, "", 0)
	return first, err
}

// startChat opens a chat about fleetName in m's thread, if m's author may
// start the fleet's runs (allow_start): the chat reads the fleet's runs
// and answers in the channel.
func (h *Handler) startChat(ctx context.Context, m message, fleetName, text string) error {
	if ok, err := h.mayStart(ctx, m, fleetName); err != nil || !ok {
		return err
	}
	if first, err := h.claimed(ctx, m); err != nil || !first {
		return err
	}
	th := store.ChatThread{Channel: m.channel, ThreadTS: m.threadTS}
	if id, ok, err := h.cfg.Store.ChatOfThread(ctx, m.channel, m.threadTS); err != nil || ok {
		if ok {
			h.answer(ctx, m.channel, m.threadTS, "This thread holds the improvement chat "+id+" already; reply here to talk to it, or start another chat in a new thread.")
		}
		return err
	}
	imp, err := h.chats().Start(ctx, fleetName, text, store.Origin{By: m.user, Via: store.OriginSlack}, th)
	if errors.Is(err, fault.FleetNotFound) {
		h.answer(ctx, m.channel, m.threadTS, "There is no fleet "+fleetName+" to improve.")
		return nil
	}
	if err != nil {
		return err
	}
	if err := h.cfg.Store.RecordChatThread(ctx, m.channel, m.threadTS, imp.ID); err != nil {
		return err
	}
	h.answer(ctx, m.channel, m.threadTS, fmt.Sprintf("Improvement chat %s about %s: thinking… Reply in this thread to talk to it.", imp.ID, fleetName))
	return nil
}

// toChat posts m, a reply in a chat's thread, to the chat id.
func (h *Handler) toChat(ctx context.Context, m message, id string) error {
	imp, err := h.cfg.Store.GetImprovement(ctx, id)
	if err != nil {
		return err
	}
	if ok, err := h.mayStart(ctx, m, imp.Fleet); err != nil || !ok {
		return err
	}
	if first, err := h.claimed(ctx, m); err != nil || !first {
		return err
	}
	input := m.input()
	if input == "" {
		return nil
	}
	_, err = h.chats().Post(ctx, id, input, m.user)
	switch {
	case errors.Is(err, fault.ImproveBusy):
		h.whisper(ctx, m.channel, m.threadTS, m.user, "The chat's agent is still answering the last message; post yours again once it has.")
		return nil
	case errors.Is(err, fault.ImproveClosed):
		h.answer(ctx, m.channel, m.threadTS, "This improvement chat is closed; mention me with `improve "+imp.Fleet+"` in a new thread to start another.")
		return nil
	}
	return err
}

// improveAction is an Apply or Discard button of chat id, pressed in
// ic's channel: only in the chat's own thread's channel, and only by
// someone on the fleet's allow_apply (a fleet without it applies nothing
// from Slack). Applying from Slack holds every tool scope: the list is
// the Slack door's scopes.
func (h *Handler) improveAction(ctx context.Context, ic goslack.InteractionCallback, action, id string) error {
	channel := ic.Channel.ID
	if channel == "" {
		channel = ic.Container.ChannelID
	}
	user := ic.User.ID
	imp, err := h.cfg.Store.GetImprovement(ctx, id)
	if errors.Is(err, fault.ImproveNotFound) || (err == nil && imp.Slack.Channel != channel) {
		h.log.Warn("slack: an improvement button refused: no such chat in this channel", "improvement_id", id, "channel", channel)
		h.whisper(ctx, channel, ic.Container.ThreadTs, user, "There is no improvement chat "+id+" in this channel.")
		return nil
	}
	if err != nil {
		return err
	}
	where := imp.Slack.ThreadTS
	ok, text, err := h.mayApply(ctx, imp.Fleet, user)
	if err != nil {
		return err
	}
	if !ok {
		h.log.Info("slack: an improvement button refused: not on allow_apply", "improvement_id", id, "user", user)
		h.whisper(ctx, channel, where, user, text)
		return nil
	}
	if action == thread.DiscardAction {
		if _, err := h.cfg.Store.DiscardImprovement(ctx, id); err != nil && !errors.Is(err, fault.ImproveClosed) {
			return err
		}
		h.answer(ctx, channel, where, fmt.Sprintf("Discarded by <@%s>: nothing was applied.", user))
		return nil
	}
	rev, err := h.chats().Apply(ctx, id, scope.Names(), store.Origin{By: user, Via: store.OriginSlack})
	if code, ok := fault.CodeOf(err); ok {
		var fe *fault.Error
		msg := code.Error()
		if errors.As(err, &fe) {
			msg = fe.Msg
		}
		h.answer(ctx, channel, where, "Not applied: "+msg)
		return nil
	}
	if err != nil {
		return err
	}
	h.answer(ctx, channel, where, fmt.Sprintf("Applied by <@%s>: %s is at revision %d. Runs already started keep theirs.", user, imp.Fleet, rev.Number))
	return nil
}

// mayApply says whether user is on fleetName's allow_apply; when not,
// text is what to tell them.
func (h *Handler) mayApply(ctx context.Context, fleetName, user string) (ok bool, text string, err error) {
	return h.optedIn(ctx, fleetName, user, optIn{
		list: func(a fleet.SlackAccess) []string { return a.AllowApply }, key: "allow_apply", act: "apply %s's proposals",
		nobody: "Nobody may apply %s's Definition from Slack: it sets no [x-agentsfleet.slack] allow_apply. " +
			"Apply the proposal with `agentsfleet improve`'s prompt or POST /v1/improvements/ID/apply and a key.",
	})
}
