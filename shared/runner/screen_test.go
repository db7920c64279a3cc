//go:build linux

package runner_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync"
	"testing"

	"github.com/agentsfleet/agentsfleet/shared/callback"
	"github.com/agentsfleet/agentsfleet/shared/invoke"
	afrun "github.com/agentsfleet/agentsfleet/shared/run"
	"github.com/agentsfleet/agentsfleet/shared/runner"
	"github.com/agentsfleet/agentsfleet/shared/secret"
	"github.com/agentsfleet/agentsfleet/shared/slack/thread"
	"github.com/agentsfleet/agentsfleet/shared/store"
	"github.com/agentsfleet/agentsfleet/shared/web"
	"github.com/agentsfleet/agentsfleet/shared/web/egress"
	"github.com/agentsfleet/agentsfleet/shared/web/wire"
)

// leaked is the fleet's secret value in the screen tests.
const leaked = "ghp_Q7sEcReT9vAlUe2xZk"

// leakScript puts leaked everywhere a step's text goes: a sandbox tool's
// output (a file the fleet's folder holds, read whole and again padded so
// that the value straddles the event's 16 KiB cut), a tool's arguments, a
// plan's explanation and step, and the answer (echoed from the output, as
// the model sees it whole).
const leakScript = `[[turn]]
[[turn.tool_call]]
name = "bash"
arguments = { command = "head -c 16368 /dev/zero | tr '\\000' a; cat creds.txt" }
[[turn.tool_call]]
name = "grep"
arguments = { pattern = "` + leaked + `", path = "." }
[[turn.tool_call]]
name = "update_plan"
arguments = { explanation = "rotate ` + leaked + `", plan = [{ step = "revoke ` + leaked + `", status = "in_progress" }] }
[[turn.tool_call]]
name = "bash"
arguments = { command = "cat creds.txt" }
[[turn]]
text = "The file says {{output \"bash\"}}"
`

// leakFleet is a Slack fleet with the secret GH, whose run has a thread and
// a callback.
type leakFleet struct {
	e        *env
	slack    *slackFn
	mu       sync.Mutex
	bodies   []string // the callbacks received
	scrubs   int      // scrub calls the webtools function served
	receiver *httptest.Server
}

func newLeakFleet(t *testing.T, values secret.Map) (*leakFleet, string) {
	t.Helper()
	f := &leakFleet{slack: &slackFn{}}
	f.receiver = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		f.mu.Lock()
		f.bodies = append(f.bodies, string(b))
		f.mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(f.receiver.Close)
	addr := netip.MustParseAddrPort(f.receiver.Listener.Addr().String())
	f.e = newEnv(t, leakScript, func(c *runner.Config) {
		c.Callbacks = callback.New(callback.Config{AllowAddr: addr, Resolver: egress.Hosts{}})
	})
	svc, err := web.NewService(web.Config{Secrets: values})
	if err != nil {
		t.Fatal(err)
	}
	f.e.local.Register(invoke.Webtools, func(ctx context.Context, payload []byte) ([]byte, error) {
		var req wire.Request
		json.Unmarshal(payload, &req)
		if req.Tool == wire.ToolScrub {
			f.mu.Lock()
			f.scrubs++
			f.mu.Unlock()
		}
		return svc.Invoke(ctx, payload)
	})
	f.e.local.Register(invoke.Slack, f.slack.handle)
	f.e.write("creds.txt", "token="+leaked+"\n")
	d := f.e.fleet(definition("leaky", "bash", "grep", "update_plan") + noMerge +
		"[x-agentsfleet.secrets]\nGH = \"" + ghARN + "\"\n")
	if _, err := f.e.store.RotateWebhookSecret(ctx, d.Name); err != nil {
		t.Fatal(err)
	}
	r, _, err := f.e.store.CreateRun(ctx, store.NewRun{Fleet: d.Name, Source: store.SourceSlack, Input: []byte("check the creds"),
		Thread:      &store.Thread{Channel: "C0123", ThreadTS: "1733050000.000100", User: "U0ASKER1", Team: "T0TEAM1"},
		CallbackURL: f.receiver.URL + "/done"})
	if err != nil {
		t.Fatal(err)
	}
	if err := f.e.runner.Run(ctx, r.ID); err != nil {
		t.Fatal(err)
	}
	return f, r.ID
}

// noLeak fails t for every event, Slack post and callback body that holds
// the value or its first ten bytes.
func (f *leakFleet) noLeak(t *testing.T, runID string) {
	t.Helper()
	holds := func(s string) bool { return strings.Contains(s, leaked[:10]) }
	for _, ev := range f.e.events(runID) {
		if holds(string(ev.Data)) {
			t.Errorf("a %s event holds the secret: %.300s", ev.Type, ev.Data)
		}
	}
	for _, op := range f.slack.ops() {
		b, _ := json.Marshal(op)
		if holds(string(b)) {
			t.Errorf("a Slack %s post holds the secret: %.300s", op.Op, b)
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.bodies) != 1 {
		t.Errorf("%d callbacks, want 1", len(f.bodies))
	}
	for _, b := range f.bodies {
		if holds(b) {
			t.Errorf("the callback body holds the secret: %.300s", b)
		}
	}
}

// TestScreenEverythingThatLeaves: a fleet's secret value in a sandbox
// tool's output, in tool arguments, in a plan and in the answer reaches no
// event, no Slack post and no callback body: each holds «secret:GH»
// instead, screened by one scrub call a step, and the event's cut output
// holds no part of a value the cut would split. The model still saw the
// value (its answer echoes the output it got).
func TestScreenEverythingThatLeaves(t *testing.T) {
	t.Parallel()
	f, runID := newLeakFleet(t, secret.Map{ghARN: leaked})
	run, end := f.e.ended(runID)
	if run.Status != store.StatusSucceeded || end.Answer != "The file says token=«secret:GH»\n[exit code 0]" {
		t.Fatalf("run %s, answer %q, error %+v; want succeeded, the answer screened", run.Status, end.Answer, end.Error)
	}
	f.noLeak(t, runID)
	var calls, results, plans int
	for _, ev := range f.e.events(runID) {
		switch ev.Type {
		case afrun.EventToolCall:
			var c afrun.ToolCall
			json.Unmarshal(ev.Data, &c)
			if c.Name == "grep" && !strings.Contains(string(c.Arguments), `"pattern":"«secret:GH»"`) {
				t.Errorf("grep's tool.call arguments = %s, want the pattern screened", c.Arguments)
			}
			calls++
		case afrun.EventToolResult:
			var r afrun.ToolResult
			json.Unmarshal(ev.Data, &r)
			if r.Name == "bash" && len(r.Output) > 16000 && !r.Truncated {
				t.Errorf("the padded output was not marked truncated")
			}
			results++
		case afrun.EventPlanUpdated:
			var p afrun.PlanUpdated
			json.Unmarshal(ev.Data, &p)
			if p.Explanation != "rotate «secret:GH»" || p.Plan[0].Step != "revoke «secret:GH»" {
				t.Errorf("plan.updated = %+v, want it screened", p)
			}
			plans++
		}
	}
	if calls != 4 || results != 4 || plans != 1 {
		t.Errorf("%d tool.call, %d tool.result, %d plan.updated; want 4, 4, 1", calls, results, plans)
	}
	var shown bool
	for _, op := range f.slack.ops() {
		if op.Op == thread.OpPlan {
			shown = op.Explanation == "rotate «secret:GH»" && op.Plan[0].Step == "revoke «secret:GH»"
		}
	}
	if !shown {
		t.Errorf("the thread was not shown the screened plan: %+v", f.slack.ops())
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.bodies) == 1 && !strings.Contains(f.bodies[0], "«secret:GH»") {
		t.Errorf("the callback body %.300s does not hold the screened answer", f.bodies[0])
	}
	// One scrub for the tool step's text, one for the answer.
	if f.scrubs != 2 {
		t.Errorf("%d scrub calls, want 2: one a step", f.scrubs)
	}
}

// TestScreenWithholds: when the fleet's secrets cannot be read, what a
// step could not screen is withheld — every tool argument, output, plan
// step and the answer replaced by a note saying why — and the run goes on,
// as a web tool's result is withheld then: no event, post or callback holds
// the value.
func TestScreenWithholds(t *testing.T) {
	t.Parallel()
	f, runID := newLeakFleet(t, secret.Map{}) // GH cannot be read
	run, end := f.e.ended(runID)
	if run.Status != store.StatusSucceeded || !strings.HasPrefix(end.Answer, "(withheld: this could not be screened for the fleet's secret values") ||
		!strings.Contains(end.Answer, "GH") {
		t.Fatalf("run %s, answer %q; want succeeded, the answer withheld saying why (the secret GH)", run.Status, end.Answer)
	}
	f.noLeak(t, runID)
	for _, ev := range f.e.events(runID) {
		var data struct {
			Arguments   json.RawMessage  `json:"arguments"`
			Output      string           `json:"output"`
			Explanation string           `json:"explanation"`
			Plan        []afrun.PlanStep `json:"plan"`
		}
		json.Unmarshal(ev.Data, &data)
		switch ev.Type {
		case afrun.EventToolCall:
			if string(data.Arguments) != `{"withheld":"(withheld: it could not be screened for the fleet's secret values)"}` {
				t.Errorf("tool.call arguments = %s, want them withheld", data.Arguments)
			}
		case afrun.EventToolResult:
			if !strings.HasPrefix(data.Output, "(withheld: this could not be screened") {
				t.Errorf("tool.result output = %.200q, want it withheld", data.Output)
			}
		case afrun.EventPlanUpdated:
			if !strings.HasPrefix(data.Explanation, "(withheld") || !strings.HasPrefix(data.Plan[0].Step, "(withheld") || data.Plan[0].Status != "in_progress" {
				t.Errorf("plan.updated = %s, want its text withheld", ev.Data)
			}
		}
	}
	if ops := f.slack.ops(); len(ops) == 0 || ops[len(ops)-1].Op != thread.OpAnswer || !strings.HasPrefix(ops[len(ops)-1].Text, "(withheld") {
		t.Errorf("the thread's last post = %+v, want the withheld answer", ops[len(ops)-1])
	}
}

// TestNoScreenWithoutSecrets: a fleet that declares no secrets is never
// screened: no call to the webtools function.
func TestNoScreenWithoutSecrets(t *testing.T) {
	t.Parallel()
	e := newEnv(t, leakScript)
	var mu sync.Mutex
	called := 0
	e.local.Register(invoke.Webtools, func(context.Context, []byte) ([]byte, error) {
		mu.Lock()
		called++
		mu.Unlock()
		return nil, io.ErrUnexpectedEOF
	})
	e.write("creds.txt", "token="+leaked+"\n")
	d := e.fleet(definition("plain", "bash", "grep", "update_plan"))
	id := e.start(d, "check the creds")
	if err := e.runner.Run(ctx, id); err != nil {
		t.Fatal(err)
	}
	if run, end := e.ended(id); run.Status != store.StatusSucceeded || !strings.Contains(end.Answer, leaked) {
		t.Fatalf("run %s, answer %q: a fleet without secrets has nothing screened", run.Status, end.Answer)
	}
	if called != 0 {
		t.Errorf("%d calls to the webtools function, want none", called)
	}
}

// TestScreenChildAgents: a child's task and answer are screened where its
// events keep them (child.started, child.ended) and in its parent's step
// (the delegate_agent call and its result), while the child's model still
// got its task whole.
func TestScreenChildAgents(t *testing.T) {
	t.Parallel()
	e, _ := childEnv(t, map[string]string{
		"parent": "[[turn]]\n[[turn.tool_call]]\nname = \"delegate_agent\"\narguments = '{\"task\": \"quick " + leaked + "\"}'\n[[turn]]\ntext = \"done\"\n",
		"quick":  "[[turn]]\ntext = \"ok {{input}}\"\n",
	})
	svc, err := web.NewService(web.Config{Secrets: secret.Map{ghARN: leaked}})
	if err != nil {
		t.Fatal(err)
	}
	e.local.Register(invoke.Webtools, svc.Invoke)
	d := e.fleet(childDefinition + "[x-agentsfleet.secrets]\nGH = \"" + ghARN + "\"\n")
	runID := e.start(d, "parent")
	e.finish(runID)
	var ended afrun.ChildEnded
	for _, ev := range e.events(runID) {
		if strings.Contains(string(ev.Data), leaked[:10]) {
			t.Errorf("a %s event (agent %q) holds the secret: %.300s", ev.Type, ev.Agent, ev.Data)
		}
		if ev.Type == afrun.EventChildEnded {
			json.Unmarshal(ev.Data, &ended)
		}
	}
	if ended.Status != store.ChildDone || ended.Answer != "ok quick «secret:GH»" {
		t.Errorf("child.ended = %+v, want done with the answer screened", ended)
	}
}
