//go:build linux

package runner_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentsfleet/agentsfleet/shared/invoke"
	"github.com/agentsfleet/agentsfleet/shared/model"
	afrun "github.com/agentsfleet/agentsfleet/shared/run"
	"github.com/agentsfleet/agentsfleet/shared/runner"
	"github.com/agentsfleet/agentsfleet/shared/secret"
	"github.com/agentsfleet/agentsfleet/shared/slack/thread"
	"github.com/agentsfleet/agentsfleet/shared/store"
	"github.com/agentsfleet/agentsfleet/shared/web"
)

// slackFn is the slack λ as the runner sees it (invoke.Slack): it keeps
// every request and answers with answer, or waits for ctx when answer
// returns nil.
type slackFn struct {
	mu     sync.Mutex
	got    []thread.Request
	answer func(thread.Request) *thread.Response
}

func (f *slackFn) handle(ctx context.Context, payload []byte) ([]byte, error) {
	var req thread.Request
	if err := json.Unmarshal(payload, &req); err != nil {
		return nil, err
	}
	f.mu.Lock()
	f.got = append(f.got, req)
	answer := f.answer
	f.mu.Unlock()
	resp := &thread.Response{Delivered: true}
	if answer != nil {
		resp = answer(req)
	}
	if resp == nil {
		<-ctx.Done() // Slack never takes it
		return nil, ctx.Err()
	}
	return json.Marshal(resp)
}

func (f *slackFn) ops() []thread.Request {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]thread.Request(nil), f.got...)
}

// slackRun records a run from a Slack thread.
func (e *env) slackRun(fleet, input string) string {
	e.t.Helper()
	r, _, err := e.store.CreateRun(ctx, store.NewRun{Fleet: fleet, Source: store.SourceSlack, Input: []byte(input),
		Thread: &store.Thread{Channel: "C0123", ThreadTS: "1733050000.000100", User: "U0ASKER1", Team: "T0TEAM1"}})
	if err != nil {
		e.t.Fatal(err)
	}
	return r.ID
}

func messages(n int, text string) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "[[turn]]\n[[turn.tool_call]]\nname = \"message\"\narguments = { text = '%s %d' }\n", text, i+1)
	}
	return b.String()
}

func TestMessageLines(t *testing.T) {
	t.Parallel()
	script := messages(9, `deploying <!channel> <@U042> & <!here> with ghp_s3cret`) +
		"[[turn]]\n[[turn.tool_call]]\nname = \"update_plan\"\narguments = { plan = [{ step = \"deploy\", status = \"completed\" }] }\n" +
		"[[turn]]\ntext = \"deployed\"\n"
	slack := &slackFn{}
	e := newEnv(t, script, func(c *runner.Config) { c.MessageTimeout = 300 * time.Millisecond })
	e.local.Register(invoke.Slack, slack.handle)
	svc, err := web.NewService(web.Config{Secrets: secret.Map{ghARN: "ghp_s3cret"}})
	if err != nil {
		t.Fatal(err)
	}
	e.local.Register(invoke.Webtools, svc.Invoke)
	d := e.fleet(definition("talker", "message", "update_plan") + "[x-agentsfleet.secrets]\nGH = \"" + ghARN + "\"\n")

	runID := e.slackRun(d.Name, "ship it")
	if err := e.runner.Run(ctx, runID); err != nil {
		t.Fatal(err)
	}
	res := e.results(runID)
	for i, r := range res[:8] {
		if r.IsError || r.Output != "Posted to the thread." {
			t.Fatalf("line %d = %+v", i+1, r)
		}
	}
	if r := res[8]; !r.IsError || !strings.Contains(r.Output, "UZ-RUN-020") {
		t.Fatalf("9th line = %+v, want UZ-RUN-020", r)
	}
	ops := slack.ops()
	var lines []string
	var kinds []thread.Op
	for _, op := range ops {
		kinds = append(kinds, op.Op)
		if op.Op == thread.OpLine {
			lines = append(lines, op.Text)
		}
		if op.Channel != "C0123" || op.ThreadTS != "1733050000.000100" || op.RunID != runID {
			t.Fatalf("a post went to %s/%s for %s", op.Channel, op.ThreadTS, op.RunID)
		}
		if op.User != "U0ASKER1" || op.Team != "T0TEAM1" {
			t.Fatalf("a %s post names user %q of team %q, want the run's asker U0ASKER1 of T0TEAM1", op.Op, op.User, op.Team)
		}
	}
	if len(lines) != 8 {
		t.Fatalf("%d lines posted, want 8: %v", len(lines), kinds)
	}
	want := "deploying &lt;!channel&gt; &lt;@U042&gt; &amp; &lt;!here&gt; with «secret:GH» 1"
	if lines[0] != want {
		t.Fatalf("line 1 posted as %q, want %q (secret replaced, mentions inert)", lines[0], want)
	}
	if kinds[0] != thread.OpWorking || kinds[len(kinds)-2] != thread.OpPlan || kinds[len(kinds)-1] != thread.OpAnswer || ops[len(ops)-1].Text != "deployed" {
		t.Fatalf("posts = %v, want working first, then the lines, the plan and the answer", kinds)
	}
	// message.posted says what was posted, and the secret never reached the log.
	posted := 0
	for _, ev := range e.events(runID) {
		if strings.Contains(string(ev.Data), "ghp_s3cret") && ev.Type != afrun.EventToolCall {
			t.Fatalf("the secret is in a %s event: %s", ev.Type, ev.Data)
		}
		if ev.Type == afrun.EventMessagePosted {
			posted++
			var m runner.MessagePosted
			json.Unmarshal(ev.Data, &m)
			if !m.Delivered || !strings.Contains(m.Text, "«secret:GH»") {
				t.Fatalf("message.posted = %+v", m)
			}
		}
	}
	if posted != 8 {
		t.Fatalf("%d message.posted events, want 8", posted)
	}
}

func TestMessageLimits(t *testing.T) {
	t.Parallel()
	script := `[[turn]]
[[turn.tool_call]]
name = "message"
arguments = { text = "slow" }
[[turn.tool_call]]
name = "message"
arguments = { text = "refused" }
[[turn.tool_call]]
name = "message"
arguments = { text = "` + strings.Repeat("é", 2049) + `" }
[[turn]]
text = "still answered"
`
	slack := &slackFn{answer: func(r thread.Request) *thread.Response {
		switch r.Text {
		case "slow":
			return nil // never taken
		case "refused":
			return &thread.Response{Error: "channel_not_found"}
		}
		return &thread.Response{Delivered: true}
	}}
	e := newEnv(t, script, func(c *runner.Config) { c.MessageTimeout = 300 * time.Millisecond })
	e.local.Register(invoke.Slack, slack.handle)
	d := e.fleet(definition("limits", "message") + noMerge)

	runID := e.slackRun(d.Name, "go")
	if err := e.runner.Run(ctx, runID); err != nil {
		t.Fatal(err)
	}
	res := e.results(runID)
	if len(res) != 3 {
		t.Fatalf("results = %+v", res)
	}
	if !res[0].IsError || !strings.Contains(res[0].Output, "not delivered") || !strings.Contains(res[0].Output, "had not taken it after 300ms") {
		t.Errorf("a line Slack never takes = %q", res[0].Output)
	}
	if !res[1].IsError || !strings.Contains(res[1].Output, "not delivered (channel_not_found)") {
		t.Errorf("a line Slack refuses = %q", res[1].Output)
	}
	if !res[2].IsError || !strings.Contains(res[2].Output, "4098 bytes; a line is at most 4096") {
		t.Errorf("a line of 4098 bytes = %q", res[2].Output)
	}
	if run, end := e.ended(runID); run.Status != store.StatusSucceeded || end.Answer != "still answered" {
		t.Fatalf("run %s, answer %q", run.Status, end.Answer)
	}
	if ops := slack.ops(); ops[len(ops)-1].Op != thread.OpAnswer {
		t.Fatalf("the answer did not reach the thread: %v", ops)
	}

	// A run from the API has no thread.
	apiRun := e.start(d, "go")
	if err := e.runner.Run(ctx, apiRun); err != nil {
		t.Fatal(err)
	}
	if r := e.results(apiRun)[0]; !r.IsError || !strings.Contains(r.Output, "UZ-RUN-019") {
		t.Fatalf("message from an API run = %+v, want UZ-RUN-019", r)
	}
}

func TestFailedRunIsSaidInTheThread(t *testing.T) {
	t.Parallel()
	// One turn, then the script has no answer: the model fails the run.
	slack := &slackFn{}
	e := newEnv(t, "[[turn]]\n[[turn.tool_call]]\nname = \"update_plan\"\narguments = { plan = [{ step = \"try\", status = \"in_progress\" }] }\n")
	e.local.Register(invoke.Slack, slack.handle)
	d := e.fleet(definition("fails", "update_plan") + noMerge)
	runID := e.slackRun(d.Name, "go")
	if err := e.runner.Run(ctx, runID); err != nil {
		t.Fatal(err)
	}
	ops := slack.ops()
	last := ops[len(ops)-1]
	if last.Op != thread.OpEnded || last.Status != "failed" || !strings.Contains(last.Text, afrun.CodeModel) {
		t.Fatalf("posts = %+v; want the failure, with its code, last", ops)
	}
	if ops[1].Op != thread.OpPlan || len(ops[1].Plan) != 1 || ops[1].Plan[0].Status != "in_progress" {
		t.Fatalf("the plan was not shown: %+v", ops)
	}
}

const ghARN = "arn:aws:secretsmanager:eu-west-1:123456789012:secret:gh-AbCdEf"

// TestRunContinuesAConversation: a run that continues another starts from
// that run's conversation, then its own input.
func TestRunContinuesAConversation(t *testing.T) {
	t.Parallel()
	e := newEnv(t, "[[turn]]\ntext = \"noted\"\n[[turn]]\ntext = \"you first said: {{input}}\"\n")
	d := e.fleet(definition("talk", "read") + noMerge)
	first := e.slackRun(d.Name, "remember the number 42")
	if err := e.runner.Run(ctx, first); err != nil {
		t.Fatal(err)
	}
	r, _, err := e.store.CreateRun(ctx, store.NewRun{Fleet: d.Name, Source: store.SourceSlack, Input: []byte("what was it?"),
		Thread: &store.Thread{Channel: "C0123", ThreadTS: "1733050000.000100"}, Continues: first})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.runner.Run(ctx, r.ID); err != nil {
		t.Fatal(err)
	}
	if _, end := e.ended(r.ID); end.Answer != "you first said: remember the number 42" {
		t.Fatalf("answer = %q; want the second turn, with the first run's input", end.Answer)
	}
	// A run of another fleet cannot be continued.
	other := e.fleet(definition("other", "read"))
	_, _, err = e.store.CreateRun(ctx, store.NewRun{Fleet: other.Name, Source: store.SourceAPI, Input: []byte("x"), Continues: first})
	if err == nil || !strings.Contains(err.Error(), "no run "+first+" of fleet other") {
		t.Fatalf("continuing another fleet's run = %v", err)
	}
}

// noMerge turns off the Slack merge window in these tests' fleets.
const noMerge = "[x-agentsfleet.slack]\nmerge_seconds = 0\n"

// recorder keeps the conversation of every model call, and calls onCall
// (if set) before answering the n-th.
type recorder struct {
	model.Model
	mu     sync.Mutex
	seen   [][]model.Message
	onCall func(n int)
}

func (r *recorder) Converse(ctx context.Context, req model.Request) (model.Response, error) {
	r.mu.Lock()
	r.seen = append(r.seen, append([]model.Message(nil), req.Messages...))
	n, f := len(r.seen), r.onCall
	r.mu.Unlock()
	if f != nil {
		f(n)
	}
	return r.Model.Converse(ctx, req)
}

// lastUserText is the text of the last user message of the n-th call.
func (r *recorder) lastUserText(n int) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	msgs := r.seen[n-1]
	var b strings.Builder
	for _, p := range msgs[len(msgs)-1].Content {
		b.WriteString(p.Text + "|")
	}
	return b.String()
}

// TestRepliesReachTheWorkingRun: a burst of messages before the first turn
// joins it (the merge window), and a reply while the run works reaches its
// next turn; each is a run.input event.
func TestRepliesReachTheWorkingRun(t *testing.T) {
	t.Parallel()
	var rec *recorder
	e := newEnv(t, "[[turn]]\n[[turn.tool_call]]\nname = \"read\"\narguments = { path = \"notes.txt\" }\n[[turn]]\ntext = \"done\"\n",
		func(c *runner.Config) { rec = &recorder{Model: c.Model}; c.Model = rec })
	e.write("notes.txt", "db-1 is full\n")
	d := e.fleet(definition("listener", "read") + "[x-agentsfleet.slack]\nmerge_seconds = 1\n")
	runID := e.slackRun(d.Name, "check the disks")
	// Sent right after the mention: within the merge window.
	if _, err := e.store.SendToRun(ctx, runID, "and db-2 too"); err != nil {
		t.Fatal(err)
	}
	rec.onCall = func(n int) {
		if n == 1 { // a reply while the first turn works
			if _, err := e.store.SendToRun(ctx, runID, "stop after db-2"); err != nil {
				t.Error(err)
			}
		}
	}
	if err := e.runner.Run(ctx, runID); err != nil {
		t.Fatal(err)
	}
	if got := rec.lastUserText(1); got != "check the disks|New message in the thread: and db-2 too|" {
		t.Fatalf("first turn saw %q; want the mention and the burst together", got)
	}
	if got := rec.lastUserText(2); !strings.HasSuffix(got, "|New message in the thread: stop after db-2|") {
		t.Fatalf("second turn saw %q; want the read's result, then the reply", got)
	}
	var inputs []string
	for _, ev := range e.events(runID) {
		if ev.Type == afrun.EventRunInput {
			var in afrun.RunInput
			json.Unmarshal(ev.Data, &in)
			inputs = append(inputs, fmt.Sprint(in.Seq, " ", in.Text))
		}
	}
	if strings.Join(inputs, ";") != "1 and db-2 too;2 stop after db-2" {
		t.Fatalf("run.input events = %v", inputs)
	}
}
