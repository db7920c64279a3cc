package store_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/agentsfleet/agentsfleet/shared/fault"
	"github.com/agentsfleet/agentsfleet/shared/store"
)

func TestStartChildWithKeyStartsOnce(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.fleet(t, "ops")
	r := e.running(t, "ops")

	kids := make([]store.Child, 10)
	created := make([]bool, 10)
	errs := make([]error, 10)
	parallel(10, func(i int) {
		kids[i], created[i], errs[i] = e.StartChild(ctx, store.NewChild{RunID: r.ID, Task: "look", Key: "step-3-call-0"})
	})
	n := 0
	for i := range kids {
		if errs[i] != nil {
			t.Fatalf("StartChild %d: %v", i, errs[i])
		}
		if kids[i].ID != kids[0].ID {
			t.Fatalf("retries started %s and %s; want one child", kids[0].ID, kids[i].ID)
		}
		if created[i] {
			n++
		}
	}
	if n != 1 {
		t.Fatalf("%d starts say they created the child, want 1", n)
	}
	run, _ := e.GetRun(ctx, r.ID)
	if run.ChildrenStarted != 1 || run.ChildrenRunning != 1 {
		t.Fatalf("run counts %d started, %d running; want 1 and 1", run.ChildrenStarted, run.ChildrenRunning)
	}
	// Another key, another child.
	other, created2, err := e.StartChild(ctx, store.NewChild{RunID: r.ID, Task: "look", Key: "step-3-call-1"})
	if err != nil || !created2 || other.ID == kids[0].ID {
		t.Fatalf("StartChild(other key) = %s, %v, %v; want a new child", other.ID, created2, err)
	}
}

func TestChildSteps(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.fleet(t, "ops")
	r, _, err := e.CreateRun(ctx, store.NewRun{Fleet: "ops", Source: store.SourceAPI, Limits: store.Budget{Tokens: 1000, ToolCalls: 20}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.Transition(ctx, r.ID, store.StatusRunning, ""); err != nil {
		t.Fatal(err)
	}
	c, _, err := e.StartChild(ctx, store.NewChild{RunID: r.ID, Task: "count", Tools: []string{"read"},
		Limits: store.Budget{ToolCalls: 3}})
	if err != nil || c.Limits.ToolCalls != 3 {
		t.Fatalf("StartChild = %+v, %v", c, err)
	}

	// The child's lease, held by one invocation at a time.
	if _, err := e.AcquireChildLease(ctx, r.ID, c.ID, "inv-a", time.Minute); err != nil {
		t.Fatal(err)
	}
	_, err = e.AcquireChildLease(ctx, r.ID, c.ID, "inv-b", time.Minute)
	wantCode(t, err, fault.RunLeaseHeld)
	_, err = e.AcquireChildLease(ctx, r.ID, "child_nope", "inv-b", time.Minute)
	wantCode(t, err, fault.ChildNotFound)
	// The run's lease is another lease.
	if _, err := e.AcquireLease(ctx, r.ID, "inv-run", time.Minute); err != nil {
		t.Fatalf("AcquireLease(run) while a child is leased: %v", err)
	}

	step := func(holder string, n int64, spend store.Budget, end *store.ChildEnd, types ...string) (int64, error) {
		evs := make([]store.NewEvent, len(types))
		for i, typ := range types {
			evs[i] = store.NewEvent{Type: typ, Data: []byte(`{}`)}
		}
		return e.CommitChildStep(ctx, r.ID, c.ID, store.ChildStep{Step: store.Step{Holder: holder, Number: n,
			Checkpoint: []byte(fmt.Sprintf(`{"n":%d}`, n)), Events: evs, Spend: spend}, End: end})
	}
	if seq, err := step("inv-a", 1, store.Budget{}, nil, "child.started"); err != nil || seq != 1 {
		t.Fatalf("step 1 = %d, %v; want seq 1", seq, err)
	}
	// The run's own step and the child's share the log.
	if _, err := e.CommitStep(ctx, r.ID, store.Step{Holder: "inv-run", Number: 1, Events: []store.NewEvent{{Type: "tool.call"}}}); err != nil {
		t.Fatal(err)
	}
	if seq, err := step("inv-a", 2, store.Budget{Tokens: 100, ToolCalls: 2}, nil, "tool.call", "tool.result"); err != nil || seq != 3 {
		t.Fatalf("step 2 = %d, %v; want seq 3", seq, err)
	}
	if _, err := step("inv-a", 2, store.Budget{}, nil); !errors.Is(err, store.ErrStepCommitted) {
		t.Fatalf("step 2 again = %v, want ErrStepCommitted", err)
	}
	_, err = step("inv-b", 3, store.Budget{}, nil)
	wantCode(t, err, fault.RunLeaseHeld)
	// Its share holds 3 calls: 2 spent, 2 more are refused and nothing is written.
	_, err = step("inv-a", 3, store.Budget{ToolCalls: 2}, nil, "tool.call")
	wantCode(t, err, fault.RunBudgetSpent)
	ckpt, err := e.LoadChildCheckpoint(ctx, r.ID, c.ID)
	if err != nil || ckpt.Step != 2 || string(ckpt.Data) != `{"n":2}` {
		t.Fatalf("LoadChildCheckpoint = %d %s, %v; want step 2", ckpt.Step, ckpt.Data, err)
	}
	run, _ := e.GetRun(ctx, r.ID)
	if run.Spent != (store.Budget{Tokens: 100, ToolCalls: 2}) || run.Events != 4 {
		t.Fatalf("run spent %+v with %d events; want the child's 100 tokens and 2 calls, 4 events", run.Spent, run.Events)
	}
	got, _ := e.GetChild(ctx, r.ID, c.ID)
	if got.Spent != (store.Budget{Tokens: 100, ToolCalls: 2}) || got.CheckpointStep != 2 {
		t.Fatalf("child = %+v; want 100 tokens, 2 calls spent at step 2", got)
	}

	// The events carry the child's id; the run's own carry none.
	mine, err := e.ListAgentEvents(ctx, r.ID, c.ID, 10)
	if err != nil || len(mine) != 3 || mine[0].Type != "child.started" || mine[2].Type != "tool.result" || mine[0].Agent != c.ID {
		t.Fatalf("ListAgentEvents(child) = %+v, %v; want its 3 events, oldest first", mine, err)
	}
	last, _ := e.ListAgentEvents(ctx, r.ID, c.ID, 1)
	if len(last) != 1 || last[0].Seq != 4 {
		t.Fatalf("ListAgentEvents(child, 1) = %+v; want seq 4", last)
	}
	top, _ := e.ListAgentEvents(ctx, r.ID, "", 10)
	if len(top) != 1 || top[0].Seq != 2 || top[0].Agent != "" {
		t.Fatalf("ListAgentEvents(run) = %+v; want seq 2", top)
	}

	// Ending with a step stops counting the child as working.
	if _, err := step("inv-a", 3, store.Budget{Tokens: 10}, &store.ChildEnd{Status: store.ChildDone, Result: "42"}, "child.ended"); err != nil {
		t.Fatal(err)
	}
	got, _ = e.GetChild(ctx, r.ID, c.ID)
	run, _ = e.GetRun(ctx, r.ID)
	if got.Status != store.ChildDone || got.Result != "42" || got.EndedAt.IsZero() || run.ChildrenRunning != 0 {
		t.Fatalf("after the end: child %+v, run counts %d working", got, run.ChildrenRunning)
	}
	_, err = step("inv-a", 4, store.Budget{}, nil)
	if !errors.Is(err, store.ErrChildEnded) {
		t.Fatalf("a step after the end = %v, want ErrChildEnded", err)
	}
}

func TestChildStepsStopWhenInterruptedOrRunEnded(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.fleet(t, "ops")
	r := e.running(t, "ops")
	a, _ := startChild(e, r.ID, "", "a", nil)
	b, _ := startChild(e, r.ID, "", "b", nil)
	for _, c := range []store.Child{a, b} {
		if _, err := e.AcquireChildLease(ctx, r.ID, c.ID, "inv-"+c.ID, time.Minute); err != nil {
			t.Fatal(err)
		}
	}
	commit := func(c store.Child, n int64) error {
		_, err := e.CommitChildStep(ctx, r.ID, c.ID, store.ChildStep{Step: store.Step{Holder: "inv-" + c.ID, Number: n,
			Events: []store.NewEvent{{Type: "tool.call"}}}})
		return err
	}
	// Interrupted from outside, with its event: its next step is refused.
	ended, _, err := e.FinishChild(ctx, r.ID, a.ID, store.ChildInterrupted, "", store.NewEvent{Type: "child.ended", Data: []byte(`{}`)})
	if err != nil || ended.Status != store.ChildInterrupted {
		t.Fatalf("FinishChild = %+v, %v", ended, err)
	}
	if err := commit(a, 1); !errors.Is(err, store.ErrChildEnded) {
		t.Fatalf("step of an interrupted child = %v, want ErrChildEnded", err)
	}
	if _, _, err := e.FinishChild(ctx, r.ID, a.ID, store.ChildInterrupted, "", store.NewEvent{Type: "child.ended"}); !errors.Is(err, store.ErrChildEnded) {
		t.Fatalf("FinishChild twice = %v, want ErrChildEnded", err)
	}
	run, _ := e.GetRun(ctx, r.ID)
	if run.Events != 1 || run.ChildrenRunning != 1 {
		t.Fatalf("run has %d events and %d working; want the one child.ended and b", run.Events, run.ChildrenRunning)
	}
	if err := commit(b, 1); err != nil {
		t.Fatal(err)
	}
	// The run ends: b's next step is refused, and the run's end interrupts it.
	if _, err := e.Transition(ctx, r.ID, store.StatusSucceeded, ""); err != nil {
		t.Fatal(err)
	}
	if err := commit(b, 2); !errors.Is(err, store.ErrRunEnded) {
		t.Fatalf("step after the run ended = %v, want ErrRunEnded", err)
	}
	out, err := e.InterruptRunningChildren(ctx, r.ID, func(c store.Child) []store.NewEvent {
		return []store.NewEvent{{Type: "child.ended", Data: []byte(`{"child_id":"` + c.ID + `","status":"` + string(c.Status) + `"}`)}}
	})
	if err != nil || len(out) != 1 || out[0].ID != b.ID {
		t.Fatalf("InterruptRunningChildren = %+v, %v; want b", out, err)
	}
	evs, _, _ := e.ListEvents(ctx, r.ID, 1, 10)
	if len(evs) != 3 || string(evs[2].Data) != `{"child_id":"`+b.ID+`","status":"interrupted"}` {
		t.Fatalf("events = %+v; want child.ended of a, b's step, child.ended of b", evs)
	}
}

func TestGrandchildSpendsItsParentsShare(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.fleet(t, "ops")
	r := e.running(t, "ops")
	p, _, err := e.StartChild(ctx, store.NewChild{RunID: r.ID, Task: "lead", Limits: store.Budget{Tokens: 500}})
	if err != nil {
		t.Fatal(err)
	}
	g, _, err := e.StartChild(ctx, store.NewChild{RunID: r.ID, ParentID: p.ID, Task: "help"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.AcquireChildLease(ctx, r.ID, g.ID, "inv-g", time.Minute); err != nil {
		t.Fatal(err)
	}
	spend := func(n, tokens int64) error {
		_, err := e.CommitChildStep(ctx, r.ID, g.ID, store.ChildStep{Step: store.Step{Holder: "inv-g", Number: n, Spend: store.Budget{Tokens: tokens}}})
		return err
	}
	if err := spend(1, 400); err != nil {
		t.Fatal(err)
	}
	err = spend(2, 200)
	wantCode(t, err, fault.RunBudgetSpent)
	if pp, _ := e.GetChild(ctx, r.ID, p.ID); pp.Spent.Tokens != 400 {
		t.Fatalf("parent's share spent %d, want 400", pp.Spent.Tokens)
	}
	if err := spend(2, 100); err != nil {
		t.Fatalf("spending the share exactly: %v", err)
	}
}
