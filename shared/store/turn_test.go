package store_test

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/agentsfleet/agentsfleet/shared/fault"
	"github.com/agentsfleet/agentsfleet/shared/store"
)

// turnsOf is what ListTurns returns, as "step:data" strings.
func turnsOf(t *testing.T, e *env, runID, agent string, from, to int64) string {
	t.Helper()
	turns, err := e.ListTurns(ctx, runID, agent, from, to)
	if err != nil {
		t.Fatalf("ListTurns(%q, %d, %d): %v", agent, from, to, err)
	}
	var out []string
	for _, tn := range turns {
		out = append(out, fmt.Sprintf("%d:%s", tn.Step, tn.Data))
	}
	return strings.Join(out, " ")
}

// TestStepsWriteTurns: a step's turns are items of their own, written with
// its checkpoint or not at all; a later step may write an earlier turn
// again, never a later one; ListTurns reads an agent's turns of a range
// of steps back in order, and a child's never among the run's.
func TestStepsWriteTurns(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.fleet(t, "ops")
	r, _, err := e.CreateRun(ctx, store.NewRun{Fleet: "ops", Source: store.SourceAPI, Limits: store.Budget{Tokens: 1000, ToolCalls: 20}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.AcquireLease(ctx, r.ID, "a", time.Minute); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Transition(ctx, r.ID, store.StatusRunning, ""); err != nil {
		t.Fatal(err)
	}
	kid, _, err := e.StartChild(ctx, store.NewChild{RunID: r.ID, Task: "count"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.AcquireChildLease(ctx, r.ID, kid.ID, "k", time.Minute); err != nil {
		t.Fatal(err)
	}
	turn := func(step int64, data string) store.Turn { return store.Turn{Step: step, Data: []byte(data)} }
	tests := []struct {
		name   string
		holder string
		n      int64
		turns  []store.Turn
		spend  store.Budget
		want   error
	}{
		{"first step", "a", 1, []store.Turn{turn(1, "input")}, store.Budget{}, nil},
		{"a step without a turn", "a", 2, nil, store.Budget{}, nil},
		{"a step adding one", "a", 3, []store.Turn{turn(3, "answer, result")}, store.Budget{}, nil},
		{"a step changing an earlier one and adding one", "a", 4, []store.Turn{turn(3, "answer, result, reply"), turn(4, "answer 2")}, store.Budget{}, nil},
		{"a turn of a later step", "a", 5, []store.Turn{turn(6, "ahead")}, store.Budget{}, fault.RequestInvalid},
		{"refused for its budget", "a", 5, []store.Turn{turn(5, "never")}, store.Budget{Tokens: 2000}, fault.RunBudgetSpent},
		{"not the holder", "b", 5, []store.Turn{turn(5, "never")}, store.Budget{}, fault.RunLeaseHeld},
		{"too many", "a", 5, make([]store.Turn, store.MaxTurnsPerStep+1), store.Budget{}, store.ErrTooLarge},
		{"too large", "a", 5, []store.Turn{turn(5, strings.Repeat("x", store.MaxBlobBytes+1))}, store.Budget{}, store.ErrTooLarge},
	}
	for _, tt := range tests { // in order
		_, err := e.CommitStep(ctx, r.ID, store.Step{Holder: tt.holder, Number: tt.n, Checkpoint: []byte("ckpt"), Turns: tt.turns, Spend: tt.spend})
		if tt.want == nil && err != nil || tt.want != nil && !errors.Is(err, tt.want) {
			t.Fatalf("%s: CommitStep = %v; want %v", tt.name, err, tt.want)
		}
	}
	// The child's turns, under its own key.
	if _, err := e.CommitChildStep(ctx, r.ID, kid.ID, store.ChildStep{Step: store.Step{Holder: "k", Number: 1,
		Turns: []store.Turn{turn(1, "task")}}}); err != nil {
		t.Fatal(err)
	}
	if got, want := turnsOf(t, e, r.ID, "", 1, 4), "1:input 3:answer, result, reply 4:answer 2"; got != want {
		t.Errorf("the run's turns 1-4 = %q, want %q", got, want)
	}
	if got, want := turnsOf(t, e, r.ID, "", 3, 10), "3:answer, result, reply 4:answer 2"; got != want {
		t.Errorf("the run's turns 3-10 = %q, want %q", got, want)
	}
	if got, want := turnsOf(t, e, r.ID, kid.ID, 1, 4), "1:task"; got != want {
		t.Errorf("the child's turns = %q, want %q", got, want)
	}
	if got := turnsOf(t, e, r.ID, "", 5, 4); got != "" {
		t.Errorf("turns 5-4 = %q, want none", got)
	}
	if got := turnsOf(t, e, "nope", "", 1, 4); got != "" {
		t.Errorf("turns of an unknown run = %q, want none", got)
	}
}

// TestListTurnsPages: a conversation larger than a Query's page (1 MB) is
// read whole.
func TestListTurnsPages(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	r := e.running(t, e.fleet(t, "ops").Name)
	if _, err := e.AcquireLease(ctx, r.ID, "a", time.Minute); err != nil {
		t.Fatal(err)
	}
	const n = 8
	big := bytes.Repeat([]byte("t"), 300_000)
	for i := int64(1); i <= n; i++ {
		if _, err := e.CommitStep(ctx, r.ID, store.Step{Holder: "a", Number: i, Turns: []store.Turn{{Step: i, Data: big}}}); err != nil {
			t.Fatal(err)
		}
	}
	turns, err := e.ListTurns(ctx, r.ID, "", 1, n)
	if err != nil || len(turns) != n {
		t.Fatalf("ListTurns = %d turns, %v; want %d", len(turns), err, n)
	}
	for i, tn := range turns {
		if tn.Step != int64(i+1) || !bytes.Equal(tn.Data, big) {
			t.Fatalf("turn %d is of step %d, %d bytes", i, tn.Step, len(tn.Data))
		}
	}
}
