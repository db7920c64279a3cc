package slack_test

import (
	"encoding/json"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	goslack "github.com/slack-go/slack"

	"github.com/agentsfleet/agentsfleet/shared/run"
	"github.com/agentsfleet/agentsfleet/shared/slack/thread"
	"github.com/agentsfleet/agentsfleet/shared/store"
)

// waiting moves run id, as its runner would, to waiting on one approval per
// call named, and returns the approvals' ids.
func (e *env) waiting(id string, calls ...string) []string {
	e.t.Helper()
	if _, err := e.store.Transition(ctx, id, store.StatusRunning, ""); err != nil {
		e.t.Fatal(err)
	}
	if _, err := e.store.AcquireLease(ctx, id, "inv", time.Minute); err != nil {
		e.t.Fatal(err)
	}
	var wait []store.NewApproval
	var ids []string
	for _, c := range calls {
		aid := store.NewApprovalID(time.Now())
		ids = append(ids, aid)
		wait = append(wait, store.NewApproval{ID: aid, CallID: c, Tool: "http_request",
			Arguments: json.RawMessage(`{"method":"POST","url":"https://pay.example/charge"}`), ExpiresAt: time.Now().Add(time.Hour)})
	}
	if _, err := e.store.CommitStep(ctx, id, store.Step{Holder: "inv", Number: 1, WhileRunning: true, Wait: wait,
		Events: []store.NewEvent{{Type: run.EventApprovalRequested}}}); err != nil {
		e.t.Fatal(err)
	}
	if err := e.store.ReleaseLease(ctx, id, "inv"); err != nil {
		e.t.Fatal(err)
	}
	return ids
}

// decideBy is a click of Approve or Deny (action) on approval aid of run
// id by user, in channelID.
func decideBy(t *testing.T, action, id, aid, user, channelID string) events.APIGatewayV2HTTPRequest {
	req := stopRequest(t, thread.ApprovalValue(id, aid), channelID)
	form, _ := url.ParseQuery(string(body(t, req)))
	payload := strings.ReplaceAll(form.Get("payload"), thread.StopAction, action)
	payload = strings.Replace(payload, `"user":{"id":"U0USER123"`, `"user":{"id":"`+user+`"`, 1)
	setBody(&req, []byte("payload="+url.QueryEscape(payload)))
	return req
}

func TestApprovalButtons(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	e.fleet("ops", "[x-agentsfleet.approval]\ntools = [\"read\"]\n[x-agentsfleet.slack]\nallow_approve = [\"S0LEADS\"]\n")
	e.slack.AddUserGroup("S0LEADS", "U0LEAD001")
	if _, err := e.store.PutSlackRoute(ctx, channel, "ops"); err != nil {
		t.Fatal(err)
	}
	e.deliver(load(t, "app_mention.json")) // by U0USER123
	id := e.runs("ops")[0].ID
	ids := e.waiting(id, "c1", "c2")
	e.local.Wait()
	started := e.invoked.Load()

	// The starter is not on allow_approve; a click from another channel
	// decides nothing, whoever clicks.
	e.deliver(decideBy(t, thread.ApproveAction, id, ids[0], "U0USER123", channel))
	e.deliver(decideBy(t, thread.ApproveAction, id, ids[0], "U0LEAD001", "C0ELSEWHERE"))
	if a, err := e.store.GetApproval(ctx, id, ids[0]); err != nil || a.Status != run.DecisionPending {
		t.Fatalf("after refused clicks the approval is %+v, %v; want pending", a, err)
	}
	eph := e.slack.ephemerals()
	if len(eph) != 2 || eph[0].User != "U0USER123" || !strings.Contains(eph[0].Text, "allow_approve") || eph[0].ThreadTS != threadTS ||
		!strings.Contains(eph[1].Text, "does not answer in this channel") {
		t.Fatalf("ephemeral messages = %+v, want the starter told of allow_approve and the other channel refused", eph)
	}
	if posts := e.slack.Posts(); len(posts) != 0 {
		t.Fatalf("a refused click was answered for everyone: %+v", posts)
	}

	// A member of the group denies one call: the run waits on the other.
	e.deliver(decideBy(t, thread.DenyAction, id, ids[0], "U0LEAD001", channel))
	if r := e.run(id); r.Status != store.StatusWaiting || r.PendingApprovals != 1 {
		t.Fatalf("after one of two decisions the run is %s with %d pending, want waiting on 1", r.Status, r.PendingApprovals)
	}
	// The same button again decides nothing more.
	e.deliver(decideBy(t, thread.ApproveAction, id, ids[0], "U0LEAD001", channel))
	if a, _ := e.store.GetApproval(ctx, id, ids[0]); a.Status != run.DecisionDeny || a.By != "slack:T0TEAM123/U0LEAD001" {
		t.Fatalf("approval = %+v, want denied by slack:T0TEAM123/U0LEAD001", a)
	}
	if eph := e.slack.ephemerals(); len(eph) != 3 || !strings.Contains(eph[2].Text, "decided already") {
		t.Fatalf("ephemeral messages = %+v, want a third saying it was decided already", eph)
	}
	// The last decision starts the runner again, and takes the buttons
	// off the message they were on.
	_, msgTS, err := e.slack.Client().PostMessage(channel, goslack.MsgOptionText("This run waits for a person", false), goslack.MsgOptionTS(threadTS))
	if err != nil {
		t.Fatal(err)
	}
	last := decideBy(t, thread.ApproveAction, id, ids[1], "U0LEAD001", channel)
	form, _ := url.ParseQuery(string(body(t, last)))
	setBody(&last, []byte("payload="+url.QueryEscape(strings.ReplaceAll(form.Get("payload"), "1796123397.000200", msgTS))))
	e.deliver(last)
	if r := e.run(id); r.Status != store.StatusRunning || r.PendingApprovals != 0 {
		t.Fatalf("after the last decision the run is %s with %d pending, want running", r.Status, r.PendingApprovals)
	}
	e.local.Wait()
	if got := e.invoked.Load(); got != started+1 {
		t.Fatalf("the runner was started %d times after the last decision, want once", got-started)
	}
	upd := e.slack.Last("chat.update")
	if upd.Error != "" || upd.Args["ts"] != msgTS || strings.Contains(upd.Args["blocks"], thread.ApproveAction) ||
		!strings.Contains(upd.Args["text"], "denied by slack:T0TEAM123/U0LEAD001") || !strings.Contains(upd.Args["text"], "approved by slack:T0TEAM123/U0LEAD001") {
		t.Fatalf("chat.update = %+v; want the approval message to say what was decided, without buttons", upd)
	}
	posts := e.slack.Posts()
	if len(posts) != 3 || !strings.Contains(posts[0].Text, "Denied by <@U0LEAD001>") || !strings.Contains(posts[0].Text, "waits on its other") ||
		!strings.Contains(posts[2].Text, "Approved by <@U0LEAD001>") || !strings.Contains(posts[2].Text, "goes on") || posts[2].ThreadTS != threadTS {
		t.Fatalf("posts = %+v, want the denial, the test's approval message, then the approval answered in the thread", posts)
	}
}

// A fleet without allow_approve lets nobody decide from Slack, and says
// how to decide instead; Stop on a waiting run ends it through a runner.
func TestApprovalButtonsNeedAllowApprove(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	e.fleet("ops", "[x-agentsfleet.approval]\ntools = [\"read\"]\n")
	if _, err := e.store.PutSlackRoute(ctx, channel, "ops"); err != nil {
		t.Fatal(err)
	}
	e.deliver(load(t, "app_mention.json"))
	id := e.runs("ops")[0].ID
	ids := e.waiting(id, "c1")
	e.deliver(decideBy(t, thread.ApproveAction, id, ids[0], "U0USER123", channel))
	if eph := e.slack.ephemerals(); len(eph) != 1 || !strings.Contains(eph[0].Text, "Nobody may decide") || !strings.Contains(eph[0].Text, "runs:approve") {
		t.Fatalf("ephemeral messages = %+v, want one saying nobody may and how to decide instead", eph)
	}
	e.local.Wait()
	started := e.invoked.Load()
	e.deliver(stopRequest(t, id, channel))
	if r := e.run(id); r.Status != store.StatusCancelled {
		t.Fatalf("Stop left the waiting run %s", r.Status)
	}
	e.local.Wait()
	if got := e.invoked.Load(); got != started+1 {
		t.Fatalf("stopping a waiting run started the runner %d times, want once (to end it)", got-started)
	}
}
