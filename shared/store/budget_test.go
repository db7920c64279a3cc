package store_test

import (
	"testing"

	"github.com/agentsfleet/agentsfleet/shared/fault"
	"github.com/agentsfleet/agentsfleet/shared/store"
)

func TestSpend(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.fleet(t, "ops")
	limited, _, err := e.CreateRun(ctx, store.NewRun{Fleet: "ops", Source: store.SourceAPI, Limits: store.Budget{Tokens: 100, ToolCalls: 2}})
	if err != nil {
		t.Fatal(err)
	}
	free := e.run(t, "ops", false)
	steps := []struct {
		name              string
		runID             string
		tokens, toolCalls int64
		want              fault.Code
		wantSpent         store.Budget
	}{
		{"within", limited.ID, 60, 1, fault.Code{}, store.Budget{Tokens: 60, ToolCalls: 1}},
		{"tokens would exceed", limited.ID, 41, 0, fault.RunBudgetSpent, store.Budget{}},
		{"up to the limit", limited.ID, 40, 1, fault.Code{}, store.Budget{Tokens: 100, ToolCalls: 2}},
		{"tool calls would exceed", limited.ID, 0, 1, fault.RunBudgetSpent, store.Budget{}},
		{"nothing more", limited.ID, 0, 0, fault.Code{}, store.Budget{Tokens: 100, ToolCalls: 2}},
		{"no limits", free.ID, 1e12, 1e6, fault.Code{}, store.Budget{Tokens: 1e12, ToolCalls: 1e6}},
		{"negative", free.ID, -1, 0, fault.RequestInvalid, store.Budget{}},
		{"no run", "run_nope", 1, 1, fault.RunNotFound, store.Budget{}},
	}
	for _, st := range steps { // in order
		spent, err := e.Spend(ctx, st.runID, st.tokens, st.toolCalls)
		if st.want == (fault.Code{}) && err != nil || st.want != (fault.Code{}) && !errorsIs(err, st.want) || spent != st.wantSpent {
			t.Fatalf("%s: Spend = %+v, %v; want %+v, %s", st.name, spent, err, st.wantSpent, st.want.ID())
		}
	}
	got, _ := e.GetRun(ctx, limited.ID)
	if got.Spent != (store.Budget{Tokens: 100, ToolCalls: 2}) || got.Limits != (store.Budget{Tokens: 100, ToolCalls: 2}) {
		t.Fatalf("run spent %+v of %+v; refused spends must add nothing", got.Spent, got.Limits)
	}
}

func TestConcurrentSpendNeverExceeds(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.fleet(t, "ops")
	r, _, err := e.CreateRun(ctx, store.NewRun{Fleet: "ops", Source: store.SourceAPI, Limits: store.Budget{Tokens: 1000}})
	if err != nil {
		t.Fatal(err)
	}
	// A run and its children spend on the run: 30 spenders of 70 tokens fit 14 times.
	errs := make([]error, 30)
	parallel(len(errs), func(i int) { _, errs[i] = e.Spend(ctx, r.ID, 70, 1) })
	ok := 0
	for _, err := range errs {
		if err == nil {
			ok++
		} else {
			wantCode(t, err, fault.RunBudgetSpent)
		}
	}
	got, _ := e.GetRun(ctx, r.ID)
	if ok != 14 || got.Spent.Tokens != 980 || got.Spent.ToolCalls != 14 {
		t.Fatalf("%d spends passed, spent %+v; want 14 and 980 tokens", ok, got.Spent)
	}
}
