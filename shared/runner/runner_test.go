//go:build linux

package runner_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentsfleet/agentsfleet/shared/fault"
	afrun "github.com/agentsfleet/agentsfleet/shared/run"
	"github.com/agentsfleet/agentsfleet/shared/runner"
	"github.com/agentsfleet/agentsfleet/shared/store"
)

// everyTool reads, greps, globs, lists, plans, patches, runs bash and
// drives an exec_command session, then answers with what bash printed.
const everyTool = `
[[turn]]
text = "Looking first."
[[turn.tool_call]]
name = "update_plan"
arguments = { explanation = "start", plan = [{ step = "look", status = "in_progress" }, { step = "fix", status = "pending" }] }
[[turn.tool_call]]
name = "list"
arguments = { path = "." }
[[turn.tool_call]]
name = "read"
arguments = { path = "notes.txt" }
[[turn.tool_call]]
name = "grep"
arguments = { pattern = "TODO" }
[[turn.tool_call]]
name = "glob"
arguments = { pattern = "*.txt" }

[[turn]]
[[turn.tool_call]]
name = "apply_patch"
arguments = { input = "*** Begin Patch\n*** Update File: notes.txt\n@@\n-TODO: fix the build\n+DONE: fixed the build\n*** End Patch" }

[[turn]]
[[turn.tool_call]]
name = "bash"
arguments = { command = "cat notes.txt; echo ran >> calls.log" }

[[turn]]
[[turn.tool_call]]
name = "exec_command"
arguments = { cmd = "cat", yield_time_ms = 300 }

[[turn]]
[[turn.tool_call]]
name = "write_stdin"
arguments = { session_id = "{{session_id}}", chars = "hello session\n", yield_time_ms = 500 }

[[turn]]
[[turn.tool_call]]
name = "update_plan"
arguments = { plan = [{ step = "look", status = "completed" }, { step = "fix", status = "completed" }] }

[[turn]]
text = "Done. bash said: {{output \"bash\"}}"
`

func TestRunUsesEveryTool(t *testing.T) {
	t.Parallel()
	e := newEnv(t, everyTool)
	e.write("notes.txt", "TODO: fix the build\n")
	d := e.fleet(definition("every", "apply_patch", "bash", "exec_command", "glob", "grep", "list", "read", "update_plan", "write_stdin"))
	id := e.start(d, "fix the notes")
	if err := e.runner.Run(ctx, id); err != nil {
		t.Fatal(err)
	}
	run, end := e.ended(id)
	if run.Status != store.StatusSucceeded || end.Status != store.StatusSucceeded || end.Error != nil {
		t.Fatalf("run %s, ended %+v", run.Status, end)
	}
	if want := "Done. bash said: DONE: fixed the build\n[exit code 0]"; end.Answer != want {
		t.Errorf("answer %q, want %q", end.Answer, want)
	}
	if got := e.read("notes.txt"); got != "DONE: fixed the build\n" {
		t.Errorf("notes.txt = %q: the patch did not apply", got)
	}
	res := e.results(id)
	var names []string
	for _, r := range res {
		names = append(names, r.Name)
		if r.IsError {
			t.Errorf("%s failed: %s", r.Name, r.Output)
		}
	}
	want := []string{"update_plan", "list", "read", "grep", "glob", "apply_patch", "bash", "exec_command", "write_stdin", "update_plan"}
	if !slices.Equal(names, want) {
		t.Errorf("results %v, want %v (in call order)", names, want)
	}
	if len(res) == len(want) {
		if !strings.Contains(res[1].Output, "notes.txt") || !strings.Contains(res[2].Output, "1\tTODO: fix the build") ||
			!strings.Contains(res[3].Output, "notes.txt:1:TODO: fix the build") || !strings.Contains(res[7].Output, "Process running with session ID") ||
			!strings.Contains(res[8].Output, "hello session") {
			t.Errorf("unexpected tool outputs: %+v", res)
		}
	}
	// The events of DESIGN §11, in order.
	ty := types(e.events(id))
	if ty[0] != afrun.EventRunStarted || ty[len(ty)-1] != afrun.EventRunEnded || strings.Count(strings.Join(ty, " "), afrun.EventPlanUpdated) != 2 ||
		strings.Count(strings.Join(ty, " "), afrun.EventToolCall) != len(want) {
		t.Errorf("event types %v", ty)
	}
	if end.Usage.ToolCalls != int64(len(want)) || end.Usage.InputTokens == 0 || end.Usage.OutputTokens == 0 {
		t.Errorf("usage %+v", end.Usage)
	}
	if run.Spent.ToolCalls != int64(len(want)) || run.Spent.Tokens != end.Usage.InputTokens+end.Usage.OutputTokens {
		t.Errorf("spent %+v, usage %+v", run.Spent, end.Usage)
	}
	if e.sandbox.Running(id) {
		t.Error("the run's sandbox was not released")
	}
	// A duplicate delivery after the end does nothing.
	before := len(e.events(id))
	if err := e.runner.Run(ctx, id); err != nil || len(e.events(id)) != before {
		t.Errorf("a second invocation of an ended run: %v, %d events (was %d)", err, len(e.events(id)), before)
	}
}

// appendTwice calls bash three times; each call appends a line, so a
// repeated call shows as a fourth line.
const appendThrice = `
[[turn]]
[[turn.tool_call]]
name = "bash"
arguments = { command = "echo one >> calls.log" }
[[turn]]
[[turn.tool_call]]
name = "bash"
arguments = { command = "echo two >> calls.log" }
[[turn]]
[[turn.tool_call]]
name = "bash"
arguments = { command = "echo three >> calls.log" }
[[turn]]
text = "appended"
`

// steppingClock moves on by step each time it is read.
type steppingClock struct {
	t    atomic.Int64
	step time.Duration
}

func (c *steppingClock) Now() time.Time { return time.Unix(0, c.t.Add(int64(c.step))) }

func TestDeadlineHandsTheRunOver(t *testing.T) {
	t.Parallel()
	clock := &steppingClock{step: 5 * time.Minute}
	clock.t.Store(time.Now().UnixNano())
	e := newEnv(t, appendThrice, func(c *runner.Config) { c.Now = clock.Now; c.Margin = time.Minute })
	d := e.fleet(definition("deadline", "bash"))
	id := e.start(d, "append")
	// The deadline is 12 minutes away by the stepping clock: the third
	// look at it finds less than the margin left.
	dctx, cancel := context.WithDeadline(ctx, clock.Now().Add(12*time.Minute))
	defer cancel()
	if err := e.runner.Run(dctx, id); err != nil {
		t.Fatal(err)
	}
	mid, _ := e.store.GetRun(ctx, id)
	if mid.Status != store.StatusRunning || mid.CheckpointStep < 2 {
		t.Fatalf("after the first invocation: %s at step %d; want running, some steps done", mid.Status, mid.CheckpointStep)
	}
	e.local.Wait() // the invocation it started
	run, end := e.ended(id)
	if run.Status != store.StatusSucceeded || end.Answer != "appended" {
		t.Fatalf("run %s, ended %+v", run.Status, end)
	}
	if got := e.read("calls.log"); got != "one\ntwo\nthree\n" {
		t.Errorf("calls.log = %q: a tool call ran twice or not at all", got)
	}
}

// TestCutToolStepRunsNoCallTwice: an invocation that dies in a tool step
// after the calls ran, before it committed, leaves them to the next, whose
// calls carry the same Idempotency-Keys: sandboxd answers them from its
// cache instead of running them again.
func TestCutToolStepRunsNoCallTwice(t *testing.T) {
	t.Parallel()
	// The first call appends, then keeps running: the invocation is cut
	// while it runs, so its step cannot commit.
	e := newEnv(t, strings.Replace(appendThrice, `echo one >> calls.log`, `echo one >> calls.log; sleep 1`, 1))
	d := e.fleet(definition("cut", "bash"))
	id := e.start(d, "append")
	first, cancel := context.WithCancel(ctx)
	defer cancel()
	var once atomic.Bool
	e.onNote = func(n runner.Note) {
		if n.Calling != nil && once.CompareAndSwap(false, true) {
			go func() {
				wait(t, "the first call to run", func() bool { return strings.Contains(e.readMaybe("calls.log"), "one") })
				cancel()
			}()
		}
	}
	if err := e.runner.Run(first, id); err == nil {
		t.Fatal("the cut invocation returned no error")
	}
	if mid, _ := e.store.GetRun(ctx, id); mid.Status != store.StatusRunning {
		t.Fatalf("after the cut: %s", mid.Status)
	}
	e.onNote = nil
	if err := e.runner.Run(ctx, id); err != nil {
		t.Fatal(err)
	}
	run, _ := e.ended(id)
	if run.Status != store.StatusSucceeded {
		t.Fatalf("run %s", run.Status)
	}
	if got := e.read("calls.log"); got != "one\ntwo\nthree\n" {
		t.Errorf("calls.log = %q: a tool call ran twice", got)
	}
	if n := strings.Count(strings.Join(types(e.events(id)), " "), afrun.EventToolResult); n != 3 {
		t.Errorf("%d tool results, want 3", n)
	}
}

func TestRacingInvocationsRunEachStepOnce(t *testing.T) {
	t.Parallel()
	e := newEnv(t, appendThrice)
	d := e.fleet(definition("race", "bash"))
	id := e.start(d, "append")
	errs := make(chan error, 4)
	for range 4 {
		go func() { errs <- e.runner.Run(ctx, id) }()
	}
	for range 4 {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
	// The invocations that found the lease held returned at once; the one
	// holding it ran the run to its end.
	run, end := e.ended(id)
	if run.Status != store.StatusSucceeded || end.Answer != "appended" {
		t.Fatalf("run %s, ended %+v", run.Status, end)
	}
	if got := e.read("calls.log"); got != "one\ntwo\nthree\n" {
		t.Errorf("calls.log = %q", got)
	}
	if n := strings.Count(strings.Join(types(e.events(id)), " "), afrun.EventToolResult); n != 3 {
		t.Errorf("%d tool results, want 3", n)
	}
}

func TestUnavailableToolRefusedBeforeTheModel(t *testing.T) {
	t.Parallel()
	e := newEnv(t, appendThrice)
	d := e.fleet(definition("browse", "bash", "browser_open"))
	id := e.start(d, "look at a page")
	if err := e.runner.Run(ctx, id); err != nil {
		t.Fatal(err)
	}
	run, end := e.ended(id)
	if run.Status != store.StatusFailed || end.Error == nil || end.Error.Code != afrun.CodeDefinition ||
		!strings.Contains(end.Error.Message, `tool "browser_open" is not available in this deployment; available: apply_patch, bash,`) {
		t.Fatalf("run %s, ended %+v", run.Status, end.Error)
	}
	if e.modelHit != 0 {
		t.Errorf("the model was called %d times", e.modelHit)
	}
	if !strings.Contains(run.StatusReason, "browser_open") {
		t.Errorf("status reason %q does not name the tool", run.StatusReason)
	}
}

func TestBadArgumentsAreAnsweredAndTheRunGoesOn(t *testing.T) {
	t.Parallel()
	e := newEnv(t, `
[[turn]]
[[turn.tool_call]]
name = "read"
arguments = { path = 3 }
[[turn.tool_call]]
name = "bash"
arguments = { cmd = "ls" }
[[turn.tool_call]]
name = "webfetch"
arguments = { url = "https://example.com/" }
[[turn]]
text = "noted: {{last_error}}"
`)
	d := e.fleet(definition("args", "bash", "read"))
	id := e.start(d, "go")
	if err := e.runner.Run(ctx, id); err != nil {
		t.Fatal(err)
	}
	run, _ := e.ended(id)
	if run.Status != store.StatusSucceeded {
		t.Fatalf("run %s", run.Status)
	}
	res := e.results(id)
	want := []string{
		`read: argument "path" must be a string, not 3`,
		`bash: unknown argument "cmd"; the arguments are command`,
		`there is no tool "webfetch" for this fleet; its tools are bash, read`,
	}
	for i, w := range want {
		if i >= len(res) || !res[i].IsError || res[i].Output != w {
			t.Errorf("result %d = %+v, want the error %q", i, res[i:], w)
		}
	}
}

func TestBudget(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, limits, want string
	}{
		{"tool calls", "tool_calls = 2", "tool calls"},
		{"tokens", "tokens = 300", "tokens"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, appendThrice)
			d := e.fleet(definition("budget", "bash") + "[x-agentsfleet.limits.budget]\n" + tc.limits + "\n")
			id := e.start(d, "append")
			if err := e.runner.Run(ctx, id); err != nil {
				t.Fatal(err)
			}
			run, end := e.ended(id)
			if run.Status != store.StatusFailed || end.Error == nil || end.Error.Code != fault.RunBudgetSpent.ID() || !strings.Contains(end.Error.Message, tc.want) {
				t.Fatalf("run %s, error %+v; want UZ-RUN-402 naming %s", run.Status, end.Error, tc.want)
			}
			if run.Spent.ToolCalls > run.Limits.ToolCalls && run.Limits.ToolCalls > 0 || run.Spent.Tokens > run.Limits.Tokens && run.Limits.Tokens > 0 {
				t.Errorf("spent %+v past the limits %+v", run.Spent, run.Limits)
			}
		})
	}
}

// TestCancelledRunStops: a run cancelled between turns stops before the
// next (the status is watched), and one cancelled while a turn's tools run
// stops at that turn's commit, which writes nothing.
func TestCancelledRunStops(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		on      string        // the note that cancels
		watch   time.Duration // how often the status is read
		results int           // tool.result events committed
	}{
		{"between turns", afrun.EventToolResult, 10 * time.Millisecond, 1},
		{"while its tools run", afrun.EventToolCall, time.Hour, 0}, // only the commit notices
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, appendThrice, func(c *runner.Config) { c.Watch = tc.watch })
			d := e.fleet(definition("cancel", "bash"))
			id := e.start(d, "append")
			var once atomic.Bool
			watched := runner.CancelSeen(id)
			e.onNote = func(n runner.Note) {
				seen := n.Event != nil && n.Event.Type == tc.on || n.Calling != nil && tc.on == afrun.EventToolCall
				if seen && once.CompareAndSwap(false, true) {
					if _, err := e.store.Transition(ctx, id, store.StatusCancelled, "stopped by a person"); err != nil {
						t.Error(err)
					}
					if tc.watch < time.Second {
						// The next turn waits until the watch has read the status.
						select {
						case <-watched:
						case <-time.After(30 * time.Second):
							t.Error("the watch did not see the cancellation in 30 s")
						}
					}
				}
			}
			if err := e.runner.Run(ctx, id); err != nil {
				t.Fatal(err)
			}
			run, end := e.ended(id)
			if run.Status != store.StatusCancelled || end.Status != store.StatusCancelled {
				t.Fatalf("run %s, ended %s", run.Status, end.Status)
			}
			if got := e.read("calls.log"); got != "one\n" {
				t.Errorf("calls.log = %q: the run went on after it was cancelled", got)
			}
			if n := len(e.results(id)); n != tc.results {
				t.Errorf("%d tool results committed, want %d", n, tc.results)
			}
			if e.sandbox.Running(id) {
				t.Error("the cancelled run's sandbox was not released")
			}
		})
	}
}

func TestSandboxThatDiesIsReplaced(t *testing.T) {
	t.Parallel()
	e := newEnv(t, appendThrice+`
[[turn]]
text = "unused"
`)
	d := e.fleet(definition("dies", "bash"))
	id := e.start(d, "append")
	var once atomic.Bool
	e.onNote = func(n runner.Note) {
		if n.Event != nil && n.Event.Type == afrun.EventToolResult && once.CompareAndSwap(false, true) {
			e.sandbox.Kill(id)
		}
	}
	if err := e.runner.Run(ctx, id); err != nil {
		t.Fatal(err)
	}
	run, _ := e.ended(id)
	if run.Status != store.StatusSucceeded {
		t.Fatalf("run %s", run.Status)
	}
	res := e.results(id)
	if len(res) != 3 || !res[1].IsError || !strings.Contains(res[1].Output, "bash: the sandbox stopped answering") || res[2].IsError {
		t.Fatalf("results %+v; want the second call to fail for the dead sandbox and the third to run in a new one", res)
	}
	if e.sandbox.Started != 2 {
		t.Errorf("%d sandboxes started, want 2", e.sandbox.Started)
	}
	if got := e.read("calls.log"); got != "one\nthree\n" {
		t.Errorf("calls.log = %q", got)
	}
}

func TestModelErrorEndsTheRunWithItsMessage(t *testing.T) {
	t.Parallel()
	e := newEnv(t, `
[[turn]]
text = "only one turn"
stop = "other"
`)
	d := e.fleet(definition("short", "bash"))
	id := e.start(d, "go")
	if err := e.runner.Run(ctx, id); err != nil {
		t.Fatal(err)
	}
	// The one turn answers (a refusal-like stop with text still answers).
	run, end := e.ended(id)
	if run.Status != store.StatusSucceeded || end.Answer != "only one turn" {
		t.Fatalf("run %s, %+v", run.Status, end)
	}
	e2 := newEnv(t, `
[[turn]]
[[turn.tool_call]]
name = "bash"
arguments = { command = "true" }
`)
	d2 := e2.fleet(definition("ends", "bash"))
	id2 := e2.start(d2, "go")
	if err := e2.runner.Run(ctx, id2); err != nil {
		t.Fatal(err)
	}
	run2, end2 := e2.ended(id2)
	if run2.Status != store.StatusFailed || end2.Error == nil || end2.Error.Code != afrun.CodeModel || !strings.Contains(end2.Error.Message, "has no turn 2") {
		t.Fatalf("run %s, %+v; want failed with the model's message", run2.Status, end2.Error)
	}
}

// readMaybe is the file's content, or "" while it does not exist.
func (e *env) readMaybe(name string) string {
	b, _ := readFile(e.work, name)
	return b
}

// TestLapsedLeaseIsTakenOver: an invocation that died holding the run's
// lease (it cannot release it) leaves the run to the next invocation,
// which waits for the lease to lapse and runs the run to its end; a live
// holder, renewing its lease, keeps the run and the invocation leaves at
// once.
func TestLapsedLeaseIsTakenOver(t *testing.T) {
	t.Parallel()
	const lease = 3 * time.Second
	clock := newFakeClock()
	e := newEnv(t, appendThrice, clock.on, func(c *runner.Config) { c.Lease = lease })
	d := e.fleet(definition("lapse", "bash"))

	dead := e.start(d, "append")
	// A holder that renewed last 2.2 s ago, then died: 0.8 s left.
	if _, err := e.store.AcquireLease(ctx, dead, "inv_killed", 800*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	began := clock.Now()
	if err := e.runner.Run(ctx, dead); err != nil {
		t.Fatal(err)
	}
	if waited := clock.Since(began); waited < 800*time.Millisecond {
		t.Errorf("ran after %v by the clock, before the dead holder's lease lapsed", waited)
	}
	if run, end := e.ended(dead); run.Status != store.StatusSucceeded || end.Answer != "appended" {
		t.Fatalf("the run of the dead holder: %s, %+v; want it taken over and finished", run.Status, end)
	}

	live := e.start(d, "append")
	if _, err := e.store.AcquireLease(ctx, live, "inv_alive", lease); err != nil {
		t.Fatal(err)
	}
	began = clock.Now()
	if err := e.runner.Run(ctx, live); err != nil {
		t.Fatal(err)
	}
	if run, err := e.store.GetRun(ctx, live); err != nil || run.Status != store.StatusQueued || clock.Since(began) != 0 {
		t.Fatalf("a live holder's run: %+v, %v after %v by the clock; want it left queued, at once", run.Status, err, clock.Since(began))
	}
	// It misses its renewals from now on: once it has missed one, the next
	// invocation waits for the lease to lapse and takes over.
	clock.Advance(lease / 2)
	if err := e.runner.Run(ctx, live); err != nil {
		t.Fatal(err)
	}
	if run, _ := e.ended(live); run.Status != store.StatusSucceeded {
		t.Fatalf("after the live holder stopped renewing: %s", run.Status)
	}
}

// TestRunKilledTwiceFails: the second takeover of a run from a dead
// invocation fails the run, saying why, instead of giving it to a last
// retry that may die too and leave it running for ever.
func TestRunKilledTwiceFails(t *testing.T) {
	t.Parallel()
	e := newEnv(t, appendThrice, newFakeClock().on, func(c *runner.Config) { c.Lease = 3 * time.Second })
	d := e.fleet(definition("killed", "bash"))
	id := e.start(d, "append")
	// A first takeover already happened, and that invocation died too.
	if _, err := e.store.AcquireLease(ctx, id, "inv_first_retry", 3*time.Second); err != nil {
		t.Fatal(err)
	}
	if n, err := e.store.NoteTakeover(ctx, id, "inv_first_retry"); err != nil || n != 1 {
		t.Fatalf("NoteTakeover = %d, %v", n, err)
	}
	if _, err := e.store.NoteTakeover(ctx, id, "inv_someone_else"); !errors.Is(err, fault.RunLeaseHeld) {
		t.Fatalf("NoteTakeover by another than the holder = %v, want %s", err, fault.RunLeaseHeld.ID())
	}
	if _, err := e.store.AcquireLease(ctx, id, "inv_first_retry", 600*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if err := e.runner.Run(ctx, id); err != nil {
		t.Fatal(err)
	}
	run, end := e.ended(id)
	if run.Status != store.StatusFailed || end.Error == nil || end.Error.Code != afrun.CodeStopped || !strings.Contains(end.Error.Message, "stopped 2 times") {
		t.Fatalf("run %s, ended %+v; want it failed with %s", run.Status, end, afrun.CodeStopped)
	}
	if n := len(e.results(id)); n != 0 {
		t.Errorf("%d tool calls ran; the run must end before any", n)
	}
}
