//go:build linux

package runner_test

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	afrun "github.com/agentsfleet/agentsfleet/shared/run"

	"github.com/agentsfleet/agentsfleet/shared/invoke"
	"github.com/agentsfleet/agentsfleet/shared/model"
	"github.com/agentsfleet/agentsfleet/shared/model/scripted"
	"github.com/agentsfleet/agentsfleet/shared/runner"
	"github.com/agentsfleet/agentsfleet/shared/secret"
	"github.com/agentsfleet/agentsfleet/shared/store"
	"github.com/agentsfleet/agentsfleet/shared/web"
)

// byTask is a model fake that answers each conversation with the script of
// its task: the first user message (a run's input, a child's task), matched
// by its longest prefix among the scripts. A task held after n answers
// waits, for every answer past the n-th, until the hold is released (or the
// call is cancelled).
type byTask struct {
	mu      sync.Mutex
	scripts map[string]*scripted.Model
	holds   map[string]*hold
	offered map[string][][]string // the tool names offered, by task key, each call
}

type hold struct {
	after   int
	release chan struct{}
}

func newByTask(t *testing.T, scripts map[string]string) *byTask {
	t.Helper()
	b := &byTask{scripts: map[string]*scripted.Model{}, holds: map[string]*hold{}, offered: map[string][][]string{}}
	for key, src := range scripts {
		m, err := scripted.Parse([]byte(src), key+".toml")
		if err != nil {
			t.Fatalf("script %q: %v", key, err)
		}
		b.scripts[key] = m
	}
	return b
}

// hold makes the task key's answers past the n-th wait; close the channel
// to release them.
func (b *byTask) hold(key string, n int) chan struct{} {
	b.mu.Lock()
	defer b.mu.Unlock()
	h := &hold{after: n, release: make(chan struct{})}
	b.holds[key] = h
	return h.release
}

func (b *byTask) Converse(ctx context.Context, req model.Request) (model.Response, error) {
	task := ""
	if len(req.Messages) > 0 {
		task = req.Messages[0].Text()
	}
	key := ""
	for k := range b.scripts {
		if strings.HasPrefix(task, k) && len(k) > len(key) {
			key = k
		}
	}
	b.mu.Lock()
	m, h := b.scripts[key], b.holds[key]
	names := make([]string, len(req.Tools))
	for i, tl := range req.Tools {
		names[i] = tl.Name
	}
	b.offered[key] = append(b.offered[key], names)
	var gate chan struct{}
	if h != nil && len(b.offered[key]) > h.after {
		gate = h.release
	}
	b.mu.Unlock()
	if m == nil {
		return model.Response{}, &model.Error{Provider: "byTask", Message: "no script for the task " + task}
	}
	if gate != nil {
		select {
		case <-gate:
		case <-ctx.Done():
			return model.Response{}, ctx.Err()
		}
	}
	return m.Converse(ctx, req)
}

func (b *byTask) calls(key string) [][]string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return slices.Clone(b.offered[key])
}

// childEnv is a runner whose model answers by task.
func childEnv(t *testing.T, scripts map[string]string, opts ...func(*runner.Config)) (*env, *byTask) {
	t.Helper()
	bt := newByTask(t, scripts)
	e := newEnv(t, "[[turn]]\ntext = \"unused\"\n", append([]func(*runner.Config){func(c *runner.Config) { c.Model = bt }}, opts...)...)
	return e, bt
}

// finish runs the run to its end and waits for every invocation it
// started (its children's, its hand-overs).
func (e *env) finish(runID string) {
	e.t.Helper()
	if err := e.runner.Run(ctx, runID); err != nil {
		e.t.Fatal(err)
	}
	wait(e.t, "the run to end", func() bool {
		r, err := e.store.GetRun(ctx, runID)
		return err == nil && r.Status.Terminal()
	})
	e.local.Wait()
}

// childResults are the run's own agent's results of the child tools.
func (e *env) agentResults(runID, agent string) []afrun.ToolResult {
	var out []afrun.ToolResult
	for _, ev := range e.events(runID) {
		if ev.Type == afrun.EventToolResult && ev.Agent == agent {
			var r afrun.ToolResult
			json.Unmarshal(ev.Data, &r)
			out = append(out, r)
		}
	}
	return out
}

func (e *env) children(runID string) []store.Child {
	e.t.Helper()
	kids, err := e.store.ListChildren(ctx, runID)
	if err != nil {
		e.t.Fatal(err)
	}
	return kids
}

const childDefinition = `name = "kids"
instructions = "Split the work."
[x-agentsfleet]
tools = ["bash", "delegate_agent", "exec_command", "inspect_agent", "interrupt_agent", "list_agents", "read", "spawn_agent", "wait_agent", "write_stdin"]
`

// spawns is a turn of n spawn_agent calls, each with the task prefix+i.
func spawns(n int, prefix string, extra string) string {
	var b strings.Builder
	b.WriteString("[[turn]]\n")
	for i := range n {
		b.WriteString("[[turn.tool_call]]\nname = \"spawn_agent\"\narguments = '{\"task\": \"" + prefix + string(rune('a'+i)) + "\"" + extra + "}'\n")
	}
	return b.String()
}

func TestFiveSpawnsRaceForFourPlaces(t *testing.T) {
	t.Parallel()
	e, bt := childEnv(t, map[string]string{
		"parent": spawns(5, "slow ", "") + "[[turn]]\ntext = \"spawned\"\n",
		"slow":   "[[turn]]\ntext = \"finished\"\n",
	})
	gate := bt.hold("slow", 0)
	d := e.fleet(childDefinition)
	runID := e.start(d, "parent")
	if err := e.runner.Run(ctx, runID); err != nil {
		t.Fatal(err)
	}
	res := e.agentResults(runID, "")
	if len(res) != 5 {
		t.Fatalf("%d results, want 5", len(res))
	}
	var capped, started int
	for _, r := range res {
		switch {
		case r.IsError && strings.Contains(r.Output, "child_cap_reached") && strings.Contains(r.Output, "at most 4 at once"):
			capped++
		case !r.IsError && strings.Contains(r.Output, `"status": "running"`):
			started++
		default:
			t.Errorf("unexpected result %+v", r)
		}
	}
	if started != 4 || capped != 1 {
		t.Fatalf("%d started and %d capped, want 4 and 1", started, capped)
	}
	// The run answered while they worked: they end interrupted.
	close(gate)
	e.local.Wait()
	kids := e.children(runID)
	if len(kids) != 4 {
		t.Fatalf("%d children, want 4", len(kids))
	}
	for _, k := range kids {
		if k.Status != store.ChildInterrupted {
			t.Errorf("child %s is %s, want interrupted", k.ID, k.Status)
		}
	}
	if run, _ := e.store.GetRun(ctx, runID); run.ChildrenRunning != 0 || run.Status != store.StatusSucceeded {
		t.Fatalf("run %s with %d children working, want succeeded with none", run.Status, run.ChildrenRunning)
	}
	// Each interrupted child has one child.ended, written before run.ended.
	evs := e.events(runID)
	ended := map[string]int{}
	for i, ev := range evs {
		if ev.Type == afrun.EventChildEnded {
			var d afrun.ChildEnded
			json.Unmarshal(ev.Data, &d)
			ended[d.ChildID]++
			if d.InterruptedBy != afrun.InterruptedByRunEnd || i > len(evs)-2 {
				t.Errorf("child.ended %+v at %d of %d", d, i, len(evs))
			}
		}
	}
	for _, k := range kids {
		if ended[k.ID] != 1 {
			t.Errorf("child %s has %d child.ended, want 1", k.ID, ended[k.ID])
		}
	}
}

func TestSeventeenthChildIsRefused(t *testing.T) {
	t.Parallel()
	delegates := func(from int) string {
		var b strings.Builder
		b.WriteString("[[turn]]\n")
		for i := range 4 {
			b.WriteString("[[turn.tool_call]]\nname = \"delegate_agent\"\narguments = '{\"task\": \"quick " + string(rune('a'+from+i)) + "\", \"tools\": [\"read\"]}'\n")
		}
		return b.String()
	}
	e, bt := childEnv(t, map[string]string{
		"parent": delegates(0) + delegates(4) + delegates(8) + delegates(12) + spawns(1, "quick ", "") + "[[turn]]\ntext = \"done\"\n",
		"quick":  "[[turn]]\ntext = \"ok {{input}}\"\n",
	})
	d := e.fleet(childDefinition)
	runID := e.start(d, "parent")
	e.finish(runID)
	res := e.agentResults(runID, "")
	if len(res) != 17 {
		t.Fatalf("%d results, want 17", len(res))
	}
	for i, r := range res[:16] {
		if r.IsError || !strings.Contains(r.Output, `"status": "done"`) || !strings.Contains(r.Output, `"answer": "ok quick`) {
			t.Fatalf("delegate %d = %+v, want done with its answer", i, r)
		}
	}
	if last := res[16]; !last.IsError || !strings.Contains(last.Output, "child_cap_reached") || !strings.Contains(last.Output, "at most 16 in all") {
		t.Fatalf("17th spawn = %+v, want child_cap_reached for the 16 in all", last)
	}
	if n := len(bt.calls("quick")); n != 16 {
		t.Fatalf("the children asked the model %d times, want 16", n)
	}
	// A child holding only read was offered only read.
	for _, offered := range bt.calls("quick") {
		if !slices.Equal(offered, []string{"read"}) {
			t.Fatalf("a child was offered %v, want [read]", offered)
		}
	}
}

func TestChildToolsAndIDsAreChecked(t *testing.T) {
	t.Parallel()
	e, bt := childEnv(t, map[string]string{
		"parent": `[[turn]]
[[turn.tool_call]]
name = "spawn_agent"
arguments = '{"task": "x", "tools": ["http_request"]}'
[[turn.tool_call]]
name = "wait_agent"
arguments = '{"child_id": "child_NOPE", "timeout_seconds": 1}'
[[turn.tool_call]]
name = "inspect_agent"
arguments = '{"child_id": "child_NOPE"}'
[[turn.tool_call]]
name = "interrupt_agent"
arguments = '{"child_id": "child_NOPE"}'
[[turn.tool_call]]
name = "delegate_agent"
arguments = '{"task": "middle"}'
[[turn]]
text = "done"
`,
		"middle": `[[turn]]
[[turn.tool_call]]
name = "delegate_agent"
arguments = '{"task": "grand", "tools": ["spawn_agent"]}'
[[turn.tool_call]]
name = "delegate_agent"
arguments = '{"task": "grand"}'
[[turn]]
text = "middle saw: {{last_output}}"
`,
		"grand": "[[turn]]\ntext = \"grand done\"\n",
	})
	d := e.fleet(childDefinition)
	runID := e.start(d, "parent")
	e.finish(runID)
	res := e.agentResults(runID, "")
	wants := []string{
		`spawn_agent: child_tool_not_held: you do not hold "http_request"`,
		`child_not_found: this run never issued child_id "child_NOPE"`,
		`child_not_found`,
		`child_not_found`,
		`"status": "done"`,
	}
	if len(res) != len(wants) {
		t.Fatalf("%d results, want %d: %+v", len(res), len(wants), res)
	}
	for i, w := range wants {
		if !strings.Contains(res[i].Output, w) || res[i].IsError != (i < 4) {
			t.Errorf("result %d = %q (error %v), want %q", i, res[i].Output, res[i].IsError, w)
		}
	}
	if !strings.Contains(res[4].Output, "middle saw:") || !strings.Contains(res[4].Output, "grand done") {
		t.Errorf("the delegate's answer %q does not carry the grandchild's", res[4].Output)
	}
	// The middle child: naming a child tool for a grandchild is refused;
	// without tools the grandchild gets the rest of what the middle holds.
	kids := e.children(runID)
	var middle, grand store.Child
	for _, k := range kids {
		switch k.Depth {
		case 1:
			middle = k
		case 2:
			grand = k
		}
	}
	mres := e.agentResults(runID, middle.ID)
	if len(mres) != 2 || !mres[0].IsError || !strings.Contains(mres[0].Output, `none of the six child-agent tools; leave "spawn_agent" out`) {
		t.Fatalf("middle's results = %+v", mres)
	}
	if grand.ParentID != middle.ID || len(kids) != 2 {
		t.Fatalf("children = %+v; want middle and one grandchild under it", kids)
	}
	for _, offered := range bt.calls("grand") {
		for _, name := range offered {
			if strings.HasSuffix(name, "_agent") || name == "list_agents" {
				t.Fatalf("the grandchild was offered %s: %v", name, offered)
			}
		}
		if !slices.Contains(offered, "bash") || !slices.Contains(offered, "read") {
			t.Fatalf("the grandchild was offered %v, want the middle's other tools", offered)
		}
	}
	// child.started says who started whom.
	for _, ev := range e.events(runID) {
		if ev.Type == afrun.EventChildStarted {
			var s afrun.ChildStarted
			json.Unmarshal(ev.Data, &s)
			if s.ChildID == grand.ID && (s.ParentID != middle.ID || s.Depth != 2 || ev.Agent != grand.ID) {
				t.Errorf("grandchild's child.started = %+v (agent %s)", s, ev.Agent)
			}
		}
	}
}

func TestChildBudgetShareIsEnforced(t *testing.T) {
	t.Parallel()
	e, _ := childEnv(t, map[string]string{
		"parent": `[[turn]]
[[turn.tool_call]]
name = "delegate_agent"
arguments = '{"task": "greedy", "budget": {"tool_calls": 2}}'
[[turn]]
[[turn.tool_call]]
name = "bash"
arguments = '{"command": "echo parent goes on"}'
[[turn]]
text = "done"
`,
		"greedy": `[[turn]]
[[turn.tool_call]]
name = "bash"
arguments = '{"command": "echo one"}'
[[turn]]
[[turn.tool_call]]
name = "bash"
arguments = '{"command": "echo two"}'
[[turn.tool_call]]
name = "bash"
arguments = '{"command": "echo three"}'
[[turn]]
text = "never"
`,
	})
	d := e.fleet(childDefinition)
	runID := e.start(d, "parent")
	e.finish(runID)
	res := e.agentResults(runID, "")
	if len(res) != 2 || !strings.Contains(res[0].Output, `"status": "failed"`) || !strings.Contains(res[0].Output, "UZ-RUN-402") ||
		!strings.Contains(res[0].Output, "1 of the 2 tool calls of its share left") {
		t.Fatalf("delegate = %+v; want failed on its share", res)
	}
	if !strings.Contains(res[1].Output, "parent goes on") {
		t.Fatalf("the parent's own call = %+v", res[1])
	}
	run, end := e.ended(runID)
	if run.Status != store.StatusSucceeded || end.Answer != "done" {
		t.Fatalf("run %s, answer %q", run.Status, end.Answer)
	}
	if run.Spent.ToolCalls != 3 {
		t.Fatalf("run spent %d tool calls, want 3 (delegate, the child's one, bash)", run.Spent.ToolCalls)
	}
}

func TestInterruptClosesTheChildsSessions(t *testing.T) {
	t.Parallel()
	e, bt := childEnv(t, map[string]string{
		"parent": `[[turn]]
[[turn.tool_call]]
name = "spawn_agent"
arguments = '{"task": "sleeper"}'
[[turn]]
[[turn.tool_call]]
name = "wait_agent"
arguments = '{"child_id": "{{child_id}}", "timeout_seconds": 3}'
[[turn]]
[[turn.tool_call]]
name = "inspect_agent"
arguments = '{"child_id": "{{child_id}}"}'
[[turn.tool_call]]
name = "bash"
arguments = '{"command": "pgrep -fx \"sleep 4711\" >/dev/null && echo session running || echo session gone"}'
[[turn]]
[[turn.tool_call]]
name = "interrupt_agent"
arguments = '{"child_id": "{{child_id}}"}'
[[turn]]
[[turn.tool_call]]
name = "wait_agent"
arguments = '{"child_id": "{{child_id}}"}'
[[turn.tool_call]]
name = "bash"
arguments = '{"command": "pgrep -fx \"sleep 4711\" >/dev/null && echo session running || echo session gone"}'
[[turn]]
text = "stopped it"
`,
		"sleeper": `[[turn]]
[[turn.tool_call]]
name = "exec_command"
arguments = '{"cmd": "sleep 4711", "yield_time_ms": 250}'
[[turn]]
text = "never"
`,
	})
	// The child starts its session, then its next answer never comes: it
	// is still working when the parent interrupts it.
	bt.hold("sleeper", 1)
	d := e.fleet(childDefinition)
	runID := e.start(d, "parent")
	e.finish(runID)
	res := e.agentResults(runID, "")
	if len(res) != 7 {
		t.Fatalf("%d results: %+v", len(res), res)
	}
	if !strings.Contains(res[1].Output, `"status": "running"`) {
		t.Errorf("wait = %q, want still running", res[1].Output)
	}
	if !strings.Contains(res[2].Output, `"task": "sleeper"`) || !strings.Contains(res[2].Output, "called exec_command") {
		t.Errorf("inspect = %q, want the task and its recent calls", res[2].Output)
	}
	if !strings.Contains(res[3].Output, "session running") {
		t.Errorf("before the interrupt: %q, want the child's session running", res[3].Output)
	}
	if !strings.Contains(res[4].Output, `"status": "interrupted"`) || !strings.Contains(res[5].Output, `"status": "interrupted"`) {
		t.Errorf("interrupt and wait = %q, %q", res[4].Output, res[5].Output)
	}
	if !strings.Contains(res[6].Output, "session gone") {
		t.Errorf("after the interrupt, in the same run: %q, want the child's session gone", res[6].Output)
	}
	kids := e.children(runID)
	if len(kids) != 1 || kids[0].Status != store.ChildInterrupted {
		t.Fatalf("children = %+v", kids)
	}
	// Its one child.ended says the run's own agent interrupted it.
	n := 0
	for _, ev := range e.events(runID) {
		if ev.Type == afrun.EventChildEnded {
			n++
			var d afrun.ChildEnded
			json.Unmarshal(ev.Data, &d)
			if d.InterruptedBy != afrun.InterruptedByAgent || ev.Agent != "" {
				t.Errorf("child.ended = %+v by agent %q", d, ev.Agent)
			}
		}
	}
	if n != 1 {
		t.Fatalf("%d child.ended, want 1", n)
	}
}

func TestChildOutlivesItsParentsHandOver(t *testing.T) {
	t.Parallel()
	e, bt := childEnv(t, map[string]string{
		"parent": `[[turn]]
[[turn.tool_call]]
name = "delegate_agent"
arguments = '{"task": "long job"}'
[[turn]]
[[turn.tool_call]]
name = "wait_agent"
arguments = '{"child_id": "{{child_id}}", "timeout_seconds": 60}'
[[turn]]
text = "collected: {{last_output}}"
`,
		"long job": `[[turn]]
[[turn.tool_call]]
name = "bash"
arguments = '{"command": "echo step one"}'
[[turn]]
text = "the long answer"
`,
	}, func(c *runner.Config) { c.Margin = 8 * time.Second })
	gate := bt.hold("long job", 0)
	d := e.fleet(childDefinition)
	runID := e.start(d, "parent")
	// The first invocation's delegate waits until 5 s before its hand-over
	// moment, commits "still working" and hands the run over.
	dctx, cancel := context.WithTimeout(ctx, 27*time.Second)
	defer cancel()
	if err := e.runner.Run(dctx, runID); err != nil {
		t.Fatal(err)
	}
	res := e.agentResults(runID, "")
	if len(res) != 1 || !strings.Contains(res[0].Output, `"status": "running"`) || !strings.Contains(res[0].Output, "Still working") {
		t.Fatalf("after the first invocation: %+v; want the delegate cut short", res)
	}
	close(gate)
	wait(t, "the run to end", func() bool {
		r, err := e.store.GetRun(ctx, runID)
		return err == nil && r.Status.Terminal()
	})
	e.local.Wait()
	run, end := e.ended(runID)
	if run.Status != store.StatusSucceeded || !strings.Contains(end.Answer, "the long answer") {
		t.Fatalf("run %s, answer %q", run.Status, end.Answer)
	}
	// Collected once, and no child step ran twice.
	n := 0
	for _, r := range e.agentResults(runID, "") {
		n += strings.Count(r.Output, "the long answer")
	}
	if n != 1 {
		t.Fatalf("the child's answer reached the parent %d times, want 1", n)
	}
	kids := e.children(runID)
	if len(kids) != 1 || kids[0].Status != store.ChildDone {
		t.Fatalf("children = %+v", kids)
	}
	seen := map[string]bool{}
	for _, ev := range e.events(runID) {
		if ev.Agent != kids[0].ID {
			continue
		}
		k := ev.Type + string(ev.Data)
		if seen[k] {
			t.Fatalf("the child committed %s twice", k)
		}
		seen[k] = true
	}
	if got := len(bt.calls("long job")); got != 2 {
		t.Fatalf("the child asked the model %d times, want 2", got)
	}
}

// TestChildGetsOnlyItsShareOfSecretsAndHosts: a spawn may narrow the
// fleet's secrets and hosts for its child; naming one the parent lacks is
// refused, and without them the child gets all of the parent's.
func TestChildGetsOnlyItsShareOfSecretsAndHosts(t *testing.T) {
	t.Parallel()
	e, _ := childEnv(t, map[string]string{
		"parent": `[[turn]]
[[turn.tool_call]]
name = "spawn_agent"
arguments = '{"task": "narrow", "secrets": ["GH"], "hosts": ["api.github.com"]}'
[[turn.tool_call]]
name = "spawn_agent"
arguments = '{"task": "wide"}'
[[turn.tool_call]]
name = "spawn_agent"
arguments = '{"task": "greedy", "secrets": ["AWS_ROOT"]}'
[[turn.tool_call]]
name = "spawn_agent"
arguments = '{"task": "roaming", "hosts": ["evil.example"]}'
[[turn]]
text = "done"
`,
		"narrow": "[[turn]]\ntext = \"ok\"\n",
		"wide":   "[[turn]]\ntext = \"ok\"\n",
	})
	d := e.fleet(`name = "scoped"
instructions = "Split the work."
[x-agentsfleet]
tools = ["http_request", "spawn_agent"]
[x-agentsfleet.network]
hosts = ["api.github.com", "hooks.slack.com"]
[x-agentsfleet.secrets]
GH = "arn:aws:secretsmanager:eu-west-1:123456789012:secret:gh-AbCdEf"
SLACK = "arn:aws:secretsmanager:eu-west-1:123456789012:secret:slack-AbCdEf"
`)
	// A fleet with secrets has each step screened by the webtools function.
	svc, err := web.NewService(web.Config{Secrets: secret.Map{ghARN: "ghp_gh", "arn:aws:secretsmanager:eu-west-1:123456789012:secret:slack-AbCdEf": "xoxb-slack"}})
	if err != nil {
		t.Fatal(err)
	}
	e.local.Register(invoke.Webtools, svc.Invoke)
	runID := e.start(d, "parent")
	e.finish(runID)
	res := e.agentResults(runID, "")
	if len(res) != 4 || res[0].IsError || res[1].IsError {
		t.Fatalf("results = %+v", res)
	}
	if !res[2].IsError || !strings.Contains(res[2].Output, `you hold no secret "AWS_ROOT"`) || !strings.Contains(res[2].Output, "GH, SLACK") {
		t.Errorf("a secret the parent lacks = %q", res[2].Output)
	}
	if !res[3].IsError || !strings.Contains(res[3].Output, `"evil.example" is not an entry of your host list`) {
		t.Errorf("a host the parent lacks = %q", res[3].Output)
	}
	kids := e.children(runID)
	if len(kids) != 2 {
		t.Fatalf("children = %+v", kids)
	}
	for _, k := range kids {
		switch k.Task {
		case "narrow":
			if !slices.Equal(k.Secrets, []string{"GH"}) || !slices.Equal(k.Hosts, []string{"api.github.com"}) {
				t.Errorf("narrow child holds %v and %v", k.Secrets, k.Hosts)
			}
		case "wide":
			if !slices.Equal(k.Secrets, []string{"GH", "SLACK"}) || !slices.Equal(k.Hosts, []string{"api.github.com", "hooks.slack.com"}) {
				t.Errorf("wide child holds %v and %v", k.Secrets, k.Hosts)
			}
		}
	}
}
