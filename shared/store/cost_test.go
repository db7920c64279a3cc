package store_test

import (
	"testing"
	"time"

	"github.com/agentsfleet/agentsfleet/shared/store"
)

// TestRunTotalsForItsCost: the tokens of every agent's committed steps, by
// kind, and the runner's time add up on the run item, from items that
// have none yet; a step refused adds nothing.
func TestRunTotalsForItsCost(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.fleet(t, "ops")
	r := e.running(t, "ops")
	if _, err := e.AcquireLease(ctx, r.ID, "inv-run", time.Minute); err != nil {
		t.Fatal(err)
	}
	if _, err := e.CommitStep(ctx, r.ID, store.Step{Holder: "inv-run", Number: 1, Spend: store.Budget{Tokens: 70},
		Tokens: store.Tokens{Input: 50, Output: 20}}); err != nil {
		t.Fatal(err)
	}
	c, err := startChild(e, r.ID, "", "count", nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.AcquireChildLease(ctx, r.ID, c.ID, "inv-child", time.Minute); err != nil {
		t.Fatal(err)
	}
	if _, err := e.CommitChildStep(ctx, r.ID, c.ID, store.ChildStep{Step: store.Step{Holder: "inv-child", Number: 1,
		Spend: store.Budget{Tokens: 12}, Tokens: store.Tokens{Input: 9, Output: 3}}}); err != nil {
		t.Fatal(err)
	}
	// Not the holder: refused, and nothing added.
	if _, err := e.CommitStep(ctx, r.ID, store.Step{Holder: "inv-other", Number: 2, Tokens: store.Tokens{Input: 1000}}); err == nil {
		t.Fatal("a step from another holder was committed")
	}
	for _, rt := range []store.RunTime{{Runner: 1500 * time.Millisecond}, {Runner: 2 * time.Second, Sandbox: time.Second}, {}} {
		if err := e.AddRunTime(ctx, r.ID, rt); err != nil {
			t.Fatal(err)
		}
	}
	got, err := e.GetRun(ctx, r.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Tokens != (store.Tokens{Input: 59, Output: 23}) || got.Spent.Tokens != 82 {
		t.Errorf("tokens %+v, spent %+v; want 59 in, 23 out, 82 spent", got.Tokens, got.Spent)
	}
	if got.Time != (store.RunTime{Runner: 3500 * time.Millisecond, Sandbox: time.Second}) {
		t.Errorf("time %+v, want the runner's 3.5s and the sandbox's 1s", got.Time)
	}
	// A run that is gone keeps nothing, and that is not an error.
	if err := e.AddRunTime(ctx, "run_gone", store.RunTime{Runner: time.Second}); err != nil {
		t.Errorf("AddRunTime of a run that is gone: %v", err)
	}
}
