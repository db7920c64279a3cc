//go:build linux

package runner_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	afrun "github.com/agentsfleet/agentsfleet/shared/run"
	"github.com/agentsfleet/agentsfleet/shared/runner"
	"github.com/agentsfleet/agentsfleet/shared/store"
)

// approvalScript asks for a bash call that waits for a person beside a
// read that does not, then answers with the last output.
const approvalScript = `
[[turn]]
[[turn.tool_call]]
name = "bash"
arguments = { command = "echo ran >> log.txt; echo bash ran" }
[[turn.tool_call]]
name = "read"
arguments = { path = "a.txt" }
[[turn]]
text = "finished: {{output \"bash\"}}"
`

const approvalTable = "[x-agentsfleet.approval]\ntools = [\"bash\"]\n"

// waitingApproval starts a run of approvalScript and returns it waiting,
// with the id of its one approval, having checked that nothing of the
// answer ran.
func waitingApproval(t *testing.T, e *env) (string, string) {
	t.Helper()
	e.write("a.txt", "notes\n")
	id := e.start(e.fleet(definition("approver", "bash", "read")+approvalTable), "do it")
	if err := e.runner.Run(ctx, id); err != nil {
		t.Fatal(err)
	}
	r, err := e.store.GetRun(ctx, id)
	if err != nil || r.Status != store.StatusWaiting || r.PendingApprovals != 1 || r.LeaseHolder != "" {
		t.Fatalf("run %+v, %v; want it waiting for one approval, its lease released", r, err)
	}
	if got, want := types(e.events(id)), []string{afrun.EventRunStarted, afrun.EventToolCall, afrun.EventToolCall, afrun.EventApprovalRequested}; !slices.Equal(got, want) {
		t.Fatalf("events %v, want %v", got, want)
	}
	if _, err := os.Stat(filepath.Join(e.work, "log.txt")); err == nil {
		t.Fatal("the call that waits for a person ran")
	}
	var req afrun.ApprovalRequested
	json.Unmarshal(e.events(id)[3].Data, &req)
	if req.Tool != "bash" || !strings.Contains(string(req.Arguments), "echo ran") || req.ExpiresAt.Sub(time.Now()) < 23*time.Hour {
		t.Fatalf("approval.requested %+v: want bash's call, expiring in 24 h", req)
	}
	return id, req.ApprovalID
}

// TestApprovalWaitsAcrossARestart: the run waits with nothing of the
// answer run, is started again while it waits (a retry) and does nothing,
// then a new runner resumes it after the approval: every call of the
// answer runs once, no tool.call is repeated, and the model is asked once
// more only.
func TestApprovalWaitsAcrossARestart(t *testing.T) {
	t.Parallel()
	e := newEnv(t, approvalScript)
	id, apr := waitingApproval(t, e)
	before := len(e.events(id))
	if err := e.runner.Run(ctx, id); err != nil {
		t.Fatal(err)
	}
	if r, _ := e.store.GetRun(ctx, id); r.Status != store.StatusWaiting || len(e.events(id)) != before || e.modelHit != 1 {
		t.Fatalf("started while waiting: %s with %d events and %d model calls; want it left waiting as it was", r.Status, len(e.events(id)), e.modelHit)
	}
	if _, resume, err := e.store.Decide(ctx, id, apr, afrun.DecisionApprove, "key:k_ops", "go ahead"); err != nil || !resume {
		t.Fatalf("Decide: resume=%v, %v", resume, err)
	}
	restarted, err := runner.New(e.cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := restarted.Run(ctx, id); err != nil {
		t.Fatal(err)
	}
	run, end := e.ended(id)
	if run.Status != store.StatusSucceeded || end.Answer != "finished: bash ran\n[exit code 0]" {
		t.Fatalf("run %s, answer %q", run.Status, end.Answer)
	}
	if got := e.read("log.txt"); got != "ran\n" {
		t.Errorf("log.txt = %q, want the approved command run once", got)
	}
	evs := types(e.events(id))
	want := []string{afrun.EventRunStarted, afrun.EventToolCall, afrun.EventToolCall, afrun.EventApprovalRequested,
		afrun.EventApprovalDecided, afrun.EventToolResult, afrun.EventToolResult, afrun.EventRunEnded}
	if !slices.Equal(evs, want) {
		t.Errorf("events %v, want %v", evs, want)
	}
	var dec afrun.ApprovalDecided
	json.Unmarshal(e.events(id)[4].Data, &dec)
	if dec != (afrun.ApprovalDecided{ApprovalID: apr, Decision: afrun.DecisionApprove, By: "key:k_ops", Note: "go ahead"}) {
		t.Errorf("approval.decided %+v", dec)
	}
	if e.modelHit != 2 || run.Spent.ToolCalls != 2 {
		t.Errorf("%d model calls and %d tool calls spent, want 2 and 2", e.modelHit, run.Spent.ToolCalls)
	}
}

// TestApprovalDenied: the denied call does not run and the model is told
// who denied it and why; the call beside it runs.
func TestApprovalDenied(t *testing.T) {
	t.Parallel()
	e := newEnv(t, strings.Replace(approvalScript, `{{output \"bash\"}}`, `{{last_error}}`, 1))
	id, apr := waitingApproval(t, e)
	if _, _, err := e.store.Decide(ctx, id, apr, afrun.DecisionDeny, "key:k_ops", "no deploys on Friday"); err != nil {
		t.Fatal(err)
	}
	if err := e.runner.Run(ctx, id); err != nil {
		t.Fatal(err)
	}
	run, end := e.ended(id)
	if run.Status != store.StatusSucceeded || !strings.Contains(end.Answer, "key:k_ops denied this call, saying: no deploys on Friday") {
		t.Fatalf("run %s, answer %q; want the model told of the denial and its note", run.Status, end.Answer)
	}
	if _, err := os.Stat(filepath.Join(e.work, "log.txt")); err == nil {
		t.Error("the denied command ran")
	}
	res := e.results(id)
	if len(res) != 2 || !res[0].IsError || res[1].IsError || !strings.Contains(res[1].Output, "notes") {
		t.Errorf("results %+v: want bash refused and read run", res)
	}
}

// TestApprovalExpires: nobody answers; the sweep's expiry resumes the run
// and the model is told the call expired.
func TestApprovalExpires(t *testing.T) {
	t.Parallel()
	e := newEnv(t, strings.Replace(approvalScript, `{{output \"bash\"}}`, `{{last_error}}`, 1))
	id, _ := waitingApproval(t, e)
	later := store.New(e.db, e.table, store.WithClock(func() time.Time { return time.Now().Add(25 * time.Hour) }))
	resumed, err := later.ExpireApprovals(ctx, time.Now().Add(25*time.Hour), 0)
	if err != nil || !slices.Equal(resumed, []string{id}) {
		t.Fatalf("ExpireApprovals = %v, %v; want the run", resumed, err)
	}
	if err := e.runner.Run(ctx, id); err != nil {
		t.Fatal(err)
	}
	run, end := e.ended(id)
	if run.Status != store.StatusSucceeded || !strings.Contains(end.Answer, "nobody approved this call within 24 h") {
		t.Fatalf("run %s, answer %q; want the model told the approval expired", run.Status, end.Answer)
	}
	if _, err := os.Stat(filepath.Join(e.work, "log.txt")); err == nil {
		t.Error("the expired command ran")
	}
}

// TestCancelWhileWaiting: a cancelled waiting run ends at once, in the
// invocation its cancel starts, and its approval can no longer be given.
func TestCancelWhileWaiting(t *testing.T) {
	t.Parallel()
	e := newEnv(t, approvalScript)
	id, apr := waitingApproval(t, e)
	if _, err := e.store.Transition(ctx, id, store.StatusCancelled, "cancelled"); err != nil {
		t.Fatal(err)
	}
	if err := e.runner.Run(ctx, id); err != nil {
		t.Fatal(err)
	}
	if run, end := e.ended(id); run.Status != store.StatusCancelled || end.Status != store.StatusCancelled {
		t.Fatalf("run %s, run.ended %s; want cancelled", run.Status, end.Status)
	}
	if _, _, err := e.store.Decide(ctx, id, apr, afrun.DecisionApprove, "key:k_ops", ""); err == nil {
		t.Error("an approval of a cancelled run was taken")
	}
	if _, err := os.Stat(filepath.Join(e.work, "log.txt")); err == nil {
		t.Error("the command of a cancelled run ran")
	}
}

// TestChildCannotGoAroundApproval: a child agent's call of a tool that
// waits for a person is refused, never run and never waited on: spawning
// a child is no way around the approval.
func TestChildCannotGoAroundApproval(t *testing.T) {
	t.Parallel()
	e, _ := childEnv(t, map[string]string{
		"parent": `[[turn]]
[[turn.tool_call]]
name = "delegate_agent"
arguments = '{"task": "sneak", "tools": ["bash"]}'
[[turn]]
text = "parent saw: {{last_output}}"
`,
		"sneak": `[[turn]]
[[turn.tool_call]]
name = "bash"
arguments = { command = "echo ran >> log.txt" }
[[turn]]
text = "child saw: {{last_error}}"
`,
	})
	d := e.fleet(childDefinition + approvalTable)
	runID := e.start(d, "parent")
	e.finish(runID)
	run, end := e.ended(runID)
	if run.Status != store.StatusSucceeded || !strings.Contains(end.Answer, "which a child agent cannot wait for") {
		t.Fatalf("run %s, answer %q; want the child's bash refused for needing approval", run.Status, end.Answer)
	}
	if _, err := os.Stat(filepath.Join(e.work, "log.txt")); err == nil {
		t.Error("the child ran a command that needs approval")
	}
	if n, _ := e.store.ListApprovals(ctx, runID); len(n) != 0 {
		t.Errorf("approvals %+v, want none asked for a child", n)
	}
}
