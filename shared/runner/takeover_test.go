//go:build linux

package runner_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	afrun "github.com/agentsfleet/agentsfleet/shared/run"
	"github.com/agentsfleet/agentsfleet/shared/store"
)

// lapse moves clock, the store's, past the expiry of the lease until
// returns.
func lapse(clock *fakeClock, until func() time.Time) {
	clock.Advance(until().Sub(clock.Now()) + time.Millisecond)
}

// TestLapsedLeaseFoundLapsedIsCounted: an invocation that arrives after a
// dead holder's lease has run out (the sweep's, or a late retry) takes it
// at once, and the takeover counts as one after waiting for the lapse
// does: the second fails the run with runner_stopped before any step.
func TestLapsedLeaseFoundLapsedIsCounted(t *testing.T) {
	t.Parallel()
	clock := newFakeClock()
	e := newEnv(t, appendThrice, clock.on)
	d := e.fleet(definition("relapse", "bash"))
	id := e.start(d, "append")
	leaseOf := func() time.Time {
		r, err := e.store.GetRun(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		return r.LeaseUntil
	}
	// The first invocation dies holding the lease; a second takes it over
	// once it ran out, and dies too.
	if _, err := e.store.AcquireLease(ctx, id, "inv_first", time.Millisecond); err != nil {
		t.Fatal(err)
	}
	lapse(clock, leaseOf)
	r, err := e.store.AcquireLease(ctx, id, "inv_retry", 50*time.Millisecond)
	if err != nil || r.LapsedHolder != "inv_first" {
		t.Fatalf("AcquireLease after the lapse = %q, %v; want inv_first named", r.LapsedHolder, err)
	}
	if n, err := e.store.NoteTakeover(ctx, id, "inv_retry"); err != nil || n != 1 {
		t.Fatalf("NoteTakeover = %d, %v", n, err)
	}
	lapse(clock, leaseOf)

	began := clock.Now()
	if err := e.runner.Run(ctx, id); err != nil {
		t.Fatal(err)
	}
	if took := clock.Since(began); took != 0 {
		t.Errorf("waited %v by the runner's clock: a lease already lapsed is taken at once", took)
	}
	run, end := e.ended(id)
	if run.Status != store.StatusFailed || end.Error == nil || end.Error.Code != afrun.CodeStopped || !strings.Contains(end.Error.Message, "stopped 2 times") {
		t.Fatalf("run %s, ended %+v; want it failed with %s", run.Status, end, afrun.CodeStopped)
	}
	if n := len(e.results(id)); n != 0 {
		t.Errorf("%d tool calls ran; the run must end before any", n)
	}
}

// TestChildKilledTwiceFails: a child agent's lease taken over from a dead
// invocation a second time fails the child with runner_stopped (its
// parent reads why in child.ended), as a run's does, instead of leaving it
// running for ever.
func TestChildKilledTwiceFails(t *testing.T) {
	t.Parallel()
	clock := newFakeClock()
	e := newEnv(t, appendThrice, clock.on)
	d := e.fleet(definition("kids", "bash"))
	id := e.start(d, "append")
	if _, err := e.store.Transition(ctx, id, store.StatusRunning, ""); err != nil {
		t.Fatal(err)
	}
	kid, _, err := e.store.StartChild(ctx, store.NewChild{RunID: id, Task: "append", Tools: []string{"bash"}})
	if err != nil {
		t.Fatal(err)
	}
	leaseOf := func() time.Time {
		c, err := e.store.GetChild(ctx, id, kid.ID)
		if err != nil {
			t.Fatal(err)
		}
		return c.LeaseUntil
	}
	if _, err := e.store.AcquireChildLease(ctx, id, kid.ID, "inv_first", time.Millisecond); err != nil {
		t.Fatal(err)
	}
	lapse(clock, leaseOf)
	c, err := e.store.AcquireChildLease(ctx, id, kid.ID, "inv_retry", 50*time.Millisecond)
	if err != nil || c.LapsedHolder != "inv_first" {
		t.Fatalf("AcquireChildLease after the lapse = %q, %v", c.LapsedHolder, err)
	}
	if n, err := e.store.NoteChildTakeover(ctx, id, kid.ID, "inv_retry"); err != nil || n != 1 {
		t.Fatalf("NoteChildTakeover = %d, %v", n, err)
	}
	lapse(clock, leaseOf)

	if err := e.runner.RunChild(ctx, id, kid.ID); err != nil {
		t.Fatal(err)
	}
	got, err := e.store.GetChild(ctx, id, kid.ID)
	if err != nil || got.Status != store.ChildFailed || !strings.HasPrefix(got.Result, afrun.CodeStopped+": ") {
		t.Fatalf("child %s %q, %v; want it failed with %s", got.Status, got.Result, err, afrun.CodeStopped)
	}
	var ended *afrun.ChildEnded
	for _, ev := range e.events(id) {
		if ev.Type == afrun.EventChildEnded {
			ended = new(afrun.ChildEnded)
			if err := json.Unmarshal(ev.Data, ended); err != nil {
				t.Fatal(err)
			}
		}
	}
	if ended == nil || ended.Status != store.ChildFailed || ended.Error == nil || ended.Error.Code != afrun.CodeStopped ||
		!strings.Contains(ended.Error.Message, "handing the child agent over") {
		t.Fatalf("child.ended = %+v; want failed with %s", ended, afrun.CodeStopped)
	}
	if n := len(e.results(id)); n != 0 {
		t.Errorf("%d tool calls ran; the child must end before any", n)
	}
	if run, err := e.store.GetRun(ctx, id); err != nil || run.ChildrenRunning != 0 {
		t.Errorf("run: %d children running, %v; want the failed child no longer counted", run.ChildrenRunning, err)
	}
}
