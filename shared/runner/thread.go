package runner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/agentsfleet/agentsfleet/shared/fault"
	"github.com/agentsfleet/agentsfleet/shared/invoke"
	"github.com/agentsfleet/agentsfleet/shared/model"
	"github.com/agentsfleet/agentsfleet/shared/run"
	"github.com/agentsfleet/agentsfleet/shared/runner/control"
	"github.com/agentsfleet/agentsfleet/shared/slack/thread"
	"github.com/agentsfleet/agentsfleet/shared/store"
	"github.com/agentsfleet/agentsfleet/shared/tool"
	"github.com/agentsfleet/agentsfleet/shared/web/wire"
)

// A run started from Slack shows its work in its thread: the runner asks
// the slack λ (invoke.Slack, the only holder of the Slack token) to post,
// as package thread says. What the thread shows is best effort: a post
// that fails is logged and the run goes on; only message's lines report
// whether they were delivered.

// threadTimeout bounds the posts other than message's lines.
const threadTimeout = 30 * time.Second

// post asks the slack λ to post req in the run's thread, waiting at most
// d. A run without a thread posts nothing.
func (x *execution) post(ctx context.Context, req thread.Request, d time.Duration) (thread.Response, error) {
	th := x.run.Thread
	if th == nil {
		return thread.Response{}, fault.RunNoThread
	}
	req.RunID, req.Fleet, req.Channel, req.ThreadTS = x.run.ID, x.run.Fleet, th.Channel, th.ThreadTS
	req.User, req.Team = th.User, th.Team
	payload, err := json.Marshal(req)
	if err != nil {
		return thread.Response{}, err
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), d)
	defer cancel()
	out, err := x.r.cfg.Invoker.Call(ctx, invoke.Slack, payload)
	if err != nil {
		if ctx.Err() != nil {
			return thread.Response{}, fmt.Errorf("the slack function had not taken it after %s", d)
		}
		return thread.Response{}, err
	}
	var resp thread.Response
	if err := json.Unmarshal(out, &resp); err != nil {
		return thread.Response{}, fmt.Errorf("the slack function answered something that is not a thread.Response: %.200q", out)
	}
	return resp, nil
}

// show posts req in the thread of a Slack run, logging a failure.
func (x *execution) show(ctx context.Context, req thread.Request) {
	if x.thread == nil {
		return
	}
	resp, err := x.post(ctx, req, threadTimeout)
	if err == nil && !resp.Delivered {
		err = errors.New(resp.Error)
	}
	if err != nil {
		x.r.log.Warn("the thread was not updated", "run_id", x.run.ID, "op", req.Op, "error", err)
	}
}

// showPlan shows a plan the model just set.
func (x *execution) showPlan(ctx context.Context, p *run.PlanUpdated) {
	steps := make([]thread.Step, len(p.Plan))
	for i, s := range p.Plan {
		steps[i] = thread.Step{Step: s.Step, Status: s.Status}
	}
	x.show(ctx, thread.Request{Op: thread.OpPlan, Explanation: p.Explanation, Plan: steps})
}

// showEnd shows how the run ended: its answer, or why it did not succeed.
func (x *execution) showEnd(ctx context.Context) {
	e := x.st.Ended
	if e == nil {
		return
	}
	switch {
	case e.Status == run.StatusSucceeded:
		answer := e.Answer
		if e.AnswerTruncated {
			answer += "\n\n[The answer was cut here; the whole of it is in the run's events.]"
		}
		x.show(ctx, thread.Request{Op: thread.OpAnswer, Status: string(e.Status), Text: answer})
	case e.Error != nil:
		x.show(ctx, thread.Request{Op: thread.OpEnded, Status: string(e.Status), Text: e.Error.Code + ": " + e.Error.Message})
	default:
		x.show(ctx, thread.Request{Op: thread.OpEnded, Status: string(e.Status), Text: "The run was " + string(e.Status) + "."})
	}
}

// messenger is the run's thread as the message tool sees it
// (control.Thread), for one execution.
type messenger struct{ x *execution }

var _ control.Thread = messenger{}

// MessageTimeout is how long message waits for Slack when
// Config.MessageTimeout is zero: the specification's 12 seconds.
const MessageTimeout = control.MessageDeliveryTimeout

// Source is where the run was started from; a run without a thread has
// no line to post (fault.RunNoThread).
func (m messenger) Source() (string, bool) { return string(m.x.run.Source), m.x.run.Thread != nil }

// Count counts the line: at most store.MaxMessageLines a run,
// fault.RunMessageCap past them.
func (m messenger) Count(ctx context.Context) error {
	_, err := m.x.r.cfg.Store.AddMessageLine(ctx, m.x.run.ID)
	return err
}

// Scrub replaces the fleet's secret values, through the webtools λ, which
// alone reads them.
func (m messenger) Scrub(ctx context.Context, text string) (string, error) {
	return m.x.scrub(ctx, text)
}

// Post posts the line through the slack λ, which has Config.MessageTimeout
// to take it.
func (m messenger) Post(ctx context.Context, text string) error {
	d := m.x.r.cfg.MessageTimeout
	if d <= 0 {
		d = MessageTimeout
	}
	resp, err := m.x.post(ctx, thread.Request{Op: thread.OpLine, Text: text}, d)
	if err == nil && !resp.Delivered {
		err = errors.New(resp.Error)
	}
	return err
}

// Posted records message.posted with the step's events.
func (m messenger) Posted(text string, delivered bool) {
	m.x.noteMessage(context.Background(), text, delivered)
}

// noteMessage records message.posted for a line, delivered or not. It is
// kept with the step's other events (messages are rare; a line is at most
// 4 KiB).
func (x *execution) noteMessage(_ context.Context, text string, delivered bool) {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.messages = append(x.messages, newEvent(run.EventMessagePosted, MessagePosted{Text: text, Delivered: delivered}))
}

// takeMessages returns the message.posted events of the step, once.
func (x *execution) takeMessages() []store.NewEvent {
	x.mu.Lock()
	defer x.mu.Unlock()
	m := x.messages
	x.messages = nil
	return m
}

// scrub replaces the values of the fleet's secrets in text by
// «secret:NAME», through the webtools λ. A fleet without secrets needs no
// call.
func (x *execution) scrub(ctx context.Context, text string) (string, error) {
	if len(x.def.Secrets) == 0 {
		return text, nil
	}
	req := wire.ScrubRequest(x.run.Fleet, x.def.Secrets, text)
	req.RunID = x.run.ID
	payload, err := json.Marshal(req)
	if err != nil {
		return "", err
	}
	out, err := x.r.cfg.Invoker.Call(ctx, invoke.Webtools, payload)
	if err != nil {
		return "", err
	}
	var res tool.Result
	if err := json.Unmarshal(out, &res); err != nil {
		return "", fmt.Errorf("the web tools answered something that is not a tool result")
	}
	if res.IsError {
		return "", errors.New(res.Output)
	}
	return res.Output, nil
}

// MessagePosted is message.posted's data: the line as posted (secrets
// replaced) and whether Slack took it.
type MessagePosted struct {
	Text      string `json:"text"`
	Delivered bool   `json:"delivered"`
}

// history is the conversation a run continues (store.Run.Continues): the
// messages of that run's last committed step, which end with its answer
// (or where it stopped). A run that continues none starts with none.
func (x *execution) history(ctx context.Context) ([]model.Message, error) {
	if x.run.Continues == "" {
		return nil, nil
	}
	ckpt, err := x.r.cfg.Store.LoadCheckpoint(ctx, x.run.Continues)
	if err != nil {
		return nil, fmt.Errorf("runner: the conversation of run %s: %w", x.run.Continues, err)
	}
	prev, err := x.r.decode(ctx, x.run.Continues, "", ckpt)
	if err != nil {
		return nil, fmt.Errorf("runner: the conversation of run %s: %w", x.run.Continues, err)
	}
	msgs := prev.Messages
	// A run cut in a tool step ends with the model's calls and no results:
	// drop them, as the model cannot answer calls it will never see.
	for len(msgs) > 0 && msgs[len(msgs)-1].Role == model.Assistant && len(msgs[len(msgs)-1].ToolCalls()) > 0 {
		msgs = msgs[:len(msgs)-1]
	}
	// And one that ends with a user turn (results, or its input) would put
	// two user turns in a row: close it.
	if len(msgs) > 0 && msgs[len(msgs)-1].Role == model.User {
		msgs = append(msgs, model.Message{Role: model.Assistant, Content: []model.Part{{Text: "(That run ended here, without an answer.)"}}})
	}
	return msgs, nil
}

// takeInbox adds the messages that reached the run since its last turn to
// the conversation, as the user's, and keeps their run.input events for the
// step's commit. Only a run with a thread has an inbox.
func (x *execution) takeInbox(ctx context.Context) error {
	if x.thread == nil {
		return nil
	}
	msgs, err := x.r.cfg.Store.Inbox(ctx, x.run.ID, x.st.InboxSeen)
	if err != nil || len(msgs) == 0 {
		return err
	}
	last := &x.st.Messages[len(x.st.Messages)-1]
	if last.Role != model.User {
		x.st.Messages = append(x.st.Messages, model.Message{Role: model.User})
		last = &x.st.Messages[len(x.st.Messages)-1]
	}
	for _, m := range msgs {
		last.Content = append(last.Content, model.Part{Text: "New message in the thread: " + m.Text})
		x.inbox = append(x.inbox, newEvent(run.EventRunInput, run.RunInput{Seq: m.Seq, Text: m.Text}))
		x.st.InboxSeen = m.Seq
	}
	return nil
}

// awaitBurst holds a Slack run's first turn until its fleet's merge window
// (fleet.Slack.MergeSeconds) has passed since the run was recorded, so that
// the messages of a burst reach the first turn together.
func (x *execution) awaitBurst(ctx context.Context) {
	if x.thread == nil || x.step != 1 || x.def.Slack.MergeSeconds <= 0 {
		return
	}
	wait := time.Until(x.run.CreatedAt.Add(time.Duration(x.def.Slack.MergeSeconds) * time.Second))
	if wait <= 0 {
		return
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}
