package slack

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/slack-go/slack/slackevents"

	"github.com/agentsfleet/agentsfleet/shared/fault"
	"github.com/agentsfleet/agentsfleet/shared/fleet"
	"github.com/agentsfleet/agentsfleet/shared/run/start"
	"github.com/agentsfleet/agentsfleet/shared/store"
)

// IdempotencyScope is the scope of the runs' idempotency keys: a Slack
// event_id starts at most one run.
const IdempotencyScope = "slack"

// answerScope is the scope of the claims that make the Handler answer an
// event at most once when it starts no run.
const answerScope = "slack-answer"

// RouteHelp is the answer to a mention in a channel that reaches no fleet.
const RouteHelp = "This channel is not routed to a fleet yet, so I cannot start anything here. " +
	"Route it with `agentsfleet slack route %s FLEET`, or `PUT /v1/slack/routes/%s` with `{\"fleet\": \"FLEET\"}` " +
	"(a key with the slack:admin scope), then mention me again. " +
	"A deployment can also set a default fleet for every channel without a route: AGENTSFLEET_SLACK_DEFAULT_FLEET."

// DMRouteHelp is the answer to a direct message that reaches no fleet:
// the deployment's default fleet is for channels only.
const DMRouteHelp = "Direct messages to me reach a fleet only where a route says, so I cannot start anything here. " +
	"Someone with a key holding the slack:admin scope can route this conversation with `agentsfleet slack route %s FLEET`, " +
	"or `PUT /v1/slack/routes/%s` with `{\"fleet\": \"FLEET\"}`; or mention me in a channel routed to a fleet."

// message is one Slack message that may start a run.
type message struct {
	eventID  string
	kind     string // "mention", "dm" or "reply"
	channel  string
	ts       string // the message's own
	threadTS string // the thread the run answers in
	user     string
	team     string // the user's team: chat.startStream's recipient_team_id
	text     string // as Slack wrote it, the app's mention still in it
	bot      string // the app's bot user id, "" if the event did not say
}

// events is POST /slack/events.
func (h *Handler) events(w http.ResponseWriter, r *http.Request) {
	body, ok := h.verified(w, r)
	if !ok {
		return
	}
	ev, err := slackevents.ParseEvent(json.RawMessage(body), slackevents.OptionNoVerifyToken())
	if err != nil {
		var outer struct {
			Type string `json:"type"`
		}
		if json.Unmarshal(body, &outer) != nil || outer.Type == "" {
			writeError(w, http.StatusBadRequest, fault.RequestInvalid.ID(), "the body is not an Events API payload")
			return
		}
		// Signed by Slack but not an event this door reads (an inner event
		// slack-go does not know): acknowledged, so Slack does not retry it.
		h.log.Debug("slack: event not read", "type", outer.Type, "error", err)
		w.WriteHeader(http.StatusOK)
		return
	}
	switch ev.Type {
	case slackevents.URLVerification:
		v, _ := ev.Data.(*slackevents.EventsAPIURLVerificationEvent)
		if v == nil || v.Challenge == "" {
			writeError(w, http.StatusBadRequest, fault.RequestInvalid.ID(), "url_verification without a challenge")
			return
		}
		writeJSON(w, http.StatusOK, map[string]string{"challenge": v.Challenge})
		return
	case slackevents.CallbackEvent:
	default:
		w.WriteHeader(http.StatusOK) // app_rate_limited and the like: nothing to do
		return
	}
	cb, _ := ev.Data.(*slackevents.EventsAPICallbackEvent)
	if cb == nil || cb.EventID == "" {
		writeError(w, http.StatusBadRequest, fault.RequestInvalid.ID(), "event_callback without an event_id")
		return
	}
	m, ok := h.read(r.Context(), cb, ev.InnerEvent)
	if ok {
		if err := h.start(r.Context(), m); err != nil {
			h.internal(w, r, err)
			return
		}
	}
	w.WriteHeader(http.StatusOK)
}

// botUser is the app's bot user id, from the event's authorizations.
func botUser(cb *slackevents.EventsAPICallbackEvent) string {
	for _, a := range cb.Authorizations {
		if a.IsBot && a.UserID != "" {
			return a.UserID
		}
	}
	if len(cb.AuthedUsers) > 0 {
		return cb.AuthedUsers[0]
	}
	return ""
}

// read says whether an inner event is a message that may start a run: an
// app mention, a direct message to the app, or a message in a thread (the
// store is asked whether a run answered there). The app's own messages,
// other bots', edits, deletions and other subtypes are not.
func (h *Handler) read(ctx context.Context, cb *slackevents.EventsAPICallbackEvent, inner slackevents.EventsAPIInnerEvent) (message, bool) {
	bot := botUser(cb)
	m := message{eventID: cb.EventID, bot: bot}
	switch e := inner.Data.(type) {
	case *slackevents.AppMentionEvent:
		if e.BotID != "" || e.User == "" || e.User == bot || e.Edited != nil || e.Channel == "" || e.TimeStamp == "" {
			return message{}, false
		}
		m.kind, m.channel, m.ts, m.threadTS, m.user, m.text = "mention", e.Channel, e.TimeStamp, e.ThreadTimeStamp, e.User, e.Text
	case *slackevents.MessageEvent:
		switch e.SubType {
		case "", "file_share", "thread_broadcast":
		default:
			return message{}, false // bot_message, message_changed, message_deleted, channel_join, …
		}
		if e.BotID != "" || e.User == "" || e.User == bot || e.Channel == "" || e.TimeStamp == "" {
			return message{}, false
		}
		m.channel, m.ts, m.threadTS, m.user, m.text = e.Channel, e.TimeStamp, e.ThreadTimeStamp, e.User, e.Text
		switch {
		case e.ChannelType == "im":
			m.kind = "dm"
		case bot != "" && strings.Contains(e.Text, "<@"+bot):
			return message{}, false // the app_mention of the same message starts the run
		case e.ThreadTimeStamp == "" || e.ThreadTimeStamp == e.TimeStamp:
			return message{}, false // a message in a channel, not addressed to the app
		default:
			m.kind = "reply" // starts a run only where one answered (start)
		}
	default:
		return message{}, false
	}
	if m.threadTS == "" {
		m.threadTS = m.ts // a new thread under the message
	}
	m.team = userTeam(cb)
	return m, true
}

// userTeam is the team of the user who wrote the event's message: the
// event's user_team (set where a channel is shared between workspaces), else
// its team, else the workspace the event came from (the callback's team_id).
func userTeam(cb *slackevents.EventsAPICallbackEvent) string {
	var inner struct {
		UserTeam string `json:"user_team"`
		Team     string `json:"team"`
	}
	if cb.InnerEvent != nil {
		_ = json.Unmarshal(*cb.InnerEvent, &inner) // slack-go has parsed it already
	}
	switch {
	case inner.UserTeam != "":
		return inner.UserTeam
	case inner.Team != "":
		return inner.Team
	}
	return cb.TeamID
}

// input is the run's input: the text without the app's mention, with
// Slack's three escapes undone.
func (m message) input() string {
	t := m.text
	if m.bot != "" {
		t = strings.ReplaceAll(t, "<@"+m.bot+">", "")
		for {
			i := strings.Index(t, "<@"+m.bot+"|")
			if i < 0 {
				break
			}
			j := strings.IndexByte(t[i:], '>')
			if j < 0 {
				break
			}
			t = t[:i] + t[i+j+1:]
		}
	} else if m.kind == "mention" {
		// Without the app's id, the mention that triggered the event is
		// taken to be the one the text starts with.
		if s := strings.TrimSpace(t); strings.HasPrefix(s, "<@") {
			if j := strings.IndexByte(s, '>'); j > 0 {
				t = s[j+1:]
			}
		}
	}
	t = strings.NewReplacer("&lt;", "<", "&gt;", ">", "&amp;", "&").Replace(t)
	return strings.TrimSpace(t)
}

// start starts the run m asks for, or answers in its thread why none
// starts. It returns an error only for what a retry may cure (the store,
// the invocation): the delivery is then answered 500 and Slack retries it.
func (h *Handler) start(ctx context.Context, m message) error {
	st := h.cfg.Store
	if m.threadTS != m.ts {
		if id, ok, err := st.ChatOfThread(ctx, m.channel, m.threadTS); err != nil || ok {
			if ok {
				return h.toChat(ctx, m, id)
			}
			return err
		}
	}
	if name, text, ok := improveRequest(m.input()); ok && m.kind != "reply" {
		return h.startChat(ctx, m, name, text)
	}
	fleetName, from, continues := "", "", ""
	if m.threadTS != m.ts {
		th, ok, err := st.SlackThreadRun(ctx, m.channel, m.threadTS)
		if err != nil {
			return err
		}
		if ok {
			fleetName, from, continues = th.Fleet, "thread", th.RunID
		}
	}
	if m.kind == "reply" && fleetName == "" {
		return nil // a thread no run answered in: not addressed to the app
	}
	if fleetName == "" {
		route, ok, err := st.SlackRoute(ctx, m.channel)
		if err != nil && !errors.Is(err, fault.RequestInvalid) {
			return err
		}
		if ok {
			fleetName, from = route.Fleet, "route"
		}
	}
	if fleetName == "" && h.cfg.DefaultFleet != "" && m.kind != "dm" {
		// Direct messages reach a fleet only where a route says: anyone in
		// the workspace can write to the app.
		fleetName, from = h.cfg.DefaultFleet, "default"
	}
	if fleetName == "" {
		if m.kind == "dm" {
			return h.answerOnce(ctx, m, fmt.Sprintf(DMRouteHelp, m.channel, m.channel))
		}
		return h.answerOnce(ctx, m, fmt.Sprintf(RouteHelp, m.channel, m.channel))
	}
	if ok, err := h.mayStart(ctx, m, fleetName); err != nil || !ok {
		return err
	}
	input := m.input()
	if input == "" {
		if m.kind == "reply" {
			return nil // a file or an empty reply: nothing to ask
		}
		return h.answerOnce(ctx, m, "Mention me with what you want done, such as \"@agentsfleet why did last night's deploy fail?\", and I will start a run of "+fleetName+" in this thread.")
	}
	if continues != "" {
		if handed, err := h.toWorkingRun(ctx, m, fleetName, continues, input); err != nil || handed {
			return err
		}
	}
	run, _, err := start.Run(ctx, st, h.cfg.Invoker, store.NewRun{Fleet: fleetName, Source: store.SourceSlack,
		Thread: &store.Thread{Channel: m.channel, ThreadTS: m.threadTS, User: m.user, Team: m.team}, Input: []byte(input),
		Idempotency: &store.IdempotencyKey{Scope: IdempotencyScope, Key: m.eventID}, Continues: continues})
	switch {
	case errors.Is(err, fault.FleetNotFound):
		why := "the fleet " + fleetName + " does not exist"
		switch from {
		case "route":
			why += fmt.Sprintf(", but this channel is routed to it: apply it, or route the channel elsewhere with `agentsfleet slack route %s FLEET`", m.channel)
		case "default":
			why += ", but it is this deployment's default fleet (AGENTSFLEET_SLACK_DEFAULT_FLEET): apply it, or route this channel with `agentsfleet slack route " + m.channel + " FLEET`"
		}
		return h.answerOnce(ctx, m, "I could not start a run: "+why+".")
	case errors.Is(err, fault.FleetPaused):
		return h.answerOnce(ctx, m, "I could not start a run: the fleet "+fleetName+" is paused. Resume it with `agentsfleet resume "+fleetName+"`, then ask again.")
	case err != nil:
		if code, ok := fault.CodeOf(err); ok && code != fault.RunBadTransition {
			var fe *fault.Error
			msg := code.Error()
			if errors.As(err, &fe) {
				msg = fe.Msg
			}
			return h.answerOnce(ctx, m, "I could not start a run of "+fleetName+": "+msg)
		}
		return err
	}
	// The record is written after the run, and again on every retry: a
	// crash in between leaves a run whose thread a retry records.
	return st.RecordSlackThread(ctx, m.channel, m.threadTS, run.ID, run.Fleet)
}

// answerOnce posts text in m's thread unless an earlier delivery of m's
// event did: a claim on the event_id, separate from the runs', makes
// retries and concurrent deliveries answer once.
func (h *Handler) answerOnce(ctx context.Context, m message, text string) error {
	_, claimed, err := h.cfg.Store.ClaimIdempotencyKey(ctx, answerScope, m.eventID, "", 0)
	if err != nil {
		return err
	}
	if claimed {
		h.answer(ctx, m.channel, m.threadTS, text)
	}
	return nil
}

// inboxScope dedupes the messages handed to a working run, by event_id.
const inboxScope = "slack-inbox"

// toWorkingRun hands a message in the thread of a run still working to
// that run, as its fleet says (fleet.Slack.OnReply): queued for the run's
// next turn (handed true), or the run interrupted so that a new run goes
// on with the conversation and the message (handed false: the caller
// starts it). A run that has ended is left alone (handed false).
func (h *Handler) toWorkingRun(ctx context.Context, m message, fleetName, runID, input string) (handed bool, err error) {
	st := h.cfg.Store
	run, err := st.GetRun(ctx, runID)
	if err != nil || (run.Status != store.StatusQueued && run.Status != store.StatusRunning) {
		return false, nil // gone or ended: a new run continues it
	}
	rev, err := st.GetRevision(ctx, run.Fleet, run.Revision)
	if err != nil {
		return false, err
	}
	def, err := fleet.ParseJSON(rev.Definition)
	if err != nil {
		return false, err
	}
	// One claim per event: a retry neither queues it again nor interrupts
	// the run the first delivery started.
	prev, claimed, err := st.ClaimIdempotencyKey(ctx, inboxScope, m.eventID, runID, 0)
	if err != nil {
		return false, err
	}
	interrupt := def.Slack.OnReply == fleet.ReplyInterrupt
	if !claimed {
		// Queued before: done. Interrupted before: the caller's start
		// finds the run that delivery started, by the event's key.
		return !interrupt && prev == runID, nil
	}
	if interrupt {
		_, err := st.Transition(ctx, runID, store.StatusCancelled, "interrupted by a new message in its thread")
		if err != nil && !errors.Is(err, fault.RunBadTransition) {
			return false, err
		}
		return false, nil
	}
	if _, err := st.SendToRun(ctx, runID, input); errors.Is(err, store.ErrRunEnded) {
		return false, nil // it ended meanwhile: a new run continues it
	} else if err != nil {
		return false, err
	}
	h.log.Info("slack: a reply queued for the working run", "run_id", runID, "fleet", fleetName, "event_id", m.eventID)
	return true, nil
}
