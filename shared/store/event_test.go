package store_test

import (
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/agentsfleet/agentsfleet/shared/fault"
	"github.com/agentsfleet/agentsfleet/shared/store"
)

func TestEventsAppendAndList(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.fleet(t, "ops")
	r := e.run(t, "ops", false)
	evs, next, err := e.ListEvents(ctx, r.ID, 1, 10)
	if err != nil || len(evs) != 0 || next != 0 {
		t.Fatalf("ListEvents of a new run = %v, %d, %v; want none", evs, next, err)
	}
	for i := range 5 {
		seq, err := e.AppendEvent(ctx, r.ID, store.NewEvent{Type: "tool", Data: []byte(fmt.Sprintf(`{"i":%d}`, i))})
		if err != nil || seq != int64(i+1) {
			t.Fatalf("AppendEvent #%d = %d, %v; want %d", i, seq, err, i+1)
		}
	}
	first, err := e.AppendEvents(ctx, r.ID, store.NewEvent{Type: "a"}, store.NewEvent{Type: "b"}, store.NewEvent{Type: "c"})
	if err != nil || first != 6 {
		t.Fatalf("AppendEvents = %d, %v; want 6", first, err)
	}
	// A second Store (another process) has no hint and still appends in order.
	other := store.New(e.db, e.table, store.WithClock(e.clock.Now))
	if seq, err := other.AppendEvent(ctx, r.ID, store.NewEvent{Type: "d"}); err != nil || seq != 9 {
		t.Fatalf("AppendEvent from another Store = %d, %v; want 9", seq, err)
	}
	// And this Store's stale hint is corrected.
	if seq, err := e.AppendEvent(ctx, r.ID, store.NewEvent{Type: "e"}); err != nil || seq != 10 {
		t.Fatalf("AppendEvent with a stale hint = %d, %v; want 10", seq, err)
	}

	tests := []struct {
		from     int64
		limit    int
		want     []int64
		wantNext int64
	}{
		{1, 4, []int64{1, 2, 3, 4}, 5},
		{5, 4, []int64{5, 6, 7, 8}, 9},
		{9, 4, []int64{9, 10}, 0},
		{0, 100, []int64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, 0},
		{11, 4, nil, 0},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("from %d limit %d", tt.from, tt.limit), func(t *testing.T) {
			evs, next, err := e.ListEvents(ctx, r.ID, tt.from, tt.limit)
			if err != nil {
				t.Fatal(err)
			}
			var got []int64
			for _, ev := range evs {
				got = append(got, ev.Seq)
			}
			if !slices.Equal(got, tt.want) || next != tt.wantNext {
				t.Fatalf("ListEvents = %v next %d, want %v next %d", got, next, tt.want, tt.wantNext)
			}
		})
	}
	evs, _, _ = e.ListEvents(ctx, r.ID, 1, 1)
	if evs[0].Type != "tool" || string(evs[0].Data) != `{"i":0}` || !evs[0].At.Equal(e.clock.Now()) {
		t.Fatalf("event 1 = %+v", evs[0])
	}

	_, err = e.AppendEvent(ctx, "run_nope", store.NewEvent{Type: "x"})
	wantCode(t, err, fault.RunNotFound)
	_, _, err = e.ListEvents(ctx, "run_nope", 1, 10)
	wantCode(t, err, fault.RunNotFound)
	_, err = e.AppendEvent(ctx, r.ID, store.NewEvent{})
	wantCode(t, err, fault.RequestInvalid)
	_, err = e.AppendEvent(ctx, r.ID, store.NewEvent{Type: "big", Data: make([]byte, store.MaxBlobBytes+1)})
	if !errors.Is(err, store.ErrTooLarge) {
		t.Fatalf("AppendEvent of a big body = %v, want ErrTooLarge", err)
	}
}

func TestConcurrentEventAppendsAreGapFree(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.fleet(t, "ops")
	r := e.run(t, "ops", false)
	const writers, each = 6, 5
	// Half the writers use Stores of their own, like separate processes.
	stores := make([]*store.Store, writers)
	for i := range stores {
		stores[i] = e.Store
		if i%2 == 1 {
			stores[i] = store.New(e.db, e.table)
		}
	}
	got := make([][]int64, writers)
	parallel(writers, func(w int) {
		for i := range each {
			seq, err := stores[w].AppendEvent(ctx, r.ID, store.NewEvent{Type: "t", Data: []byte(fmt.Sprintf(`"%d/%d"`, w, i))})
			if err != nil {
				t.Errorf("writer %d: %v", w, err)
				return
			}
			got[w] = append(got[w], seq)
		}
	})
	var all []int64
	for w, seqs := range got {
		if !slices.IsSorted(seqs) {
			t.Errorf("writer %d got %v, not increasing", w, seqs)
		}
		all = append(all, seqs...)
	}
	slices.Sort(all)
	for i, seq := range all {
		if seq != int64(i+1) {
			t.Fatalf("sequence numbers %v, want 1..%d each once", all, writers*each)
		}
	}
	evs, _, err := e.ListEvents(ctx, r.ID, 1, 1000)
	if err != nil || len(evs) != writers*each {
		t.Fatalf("ListEvents = %d events, %v; want %d", len(evs), err, writers*each)
	}
	seen := map[string]bool{}
	for i, ev := range evs {
		if ev.Seq != int64(i+1) || seen[string(ev.Data)] {
			t.Fatalf("event %d = seq %d data %s; want seq %d, each body once", i, ev.Seq, ev.Data, i+1)
		}
		seen[string(ev.Data)] = true
	}
	run, _ := e.GetRun(ctx, r.ID)
	if run.Events != writers*each {
		t.Fatalf("run counter = %d, want %d", run.Events, writers*each)
	}
}

func TestCommitStep(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.fleet(t, "ops")
	r, _, err := e.CreateRun(ctx, store.NewRun{Fleet: "ops", Source: store.SourceAPI, Limits: store.Budget{Tokens: 1000, ToolCalls: 3}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.AcquireLease(ctx, r.ID, "a", time.Minute); err != nil {
		t.Fatal(err)
	}
	step := func(holder string, n, tokens int64, evs ...string) (int64, error) {
		st := store.Step{Holder: holder, Number: n, Checkpoint: []byte(fmt.Sprint("after ", n)), Spend: store.Budget{Tokens: tokens, ToolCalls: 1}}
		for _, ev := range evs {
			st.Events = append(st.Events, store.NewEvent{Type: ev})
		}
		return e.CommitStep(ctx, r.ID, st)
	}
	tests := []struct {
		name      string
		holder    string
		n, tokens int64
		events    []string
		wantFirst int64
		want      error
	}{
		{"first step", "a", 1, 400, []string{"model", "tool"}, 1, nil},
		{"second step", "a", 2, 400, []string{"tool"}, 3, nil},
		{"replayed step", "a", 2, 10, []string{"tool"}, 0, store.ErrStepCommitted},
		{"not the holder", "b", 3, 10, []string{"tool"}, 0, fault.RunLeaseHeld},
		{"over the token budget", "a", 3, 201, []string{"tool"}, 0, fault.RunBudgetSpent},
		{"exactly the budget", "a", 3, 200, nil, 0, nil},
		{"over the tool-call budget", "a", 4, 0, []string{"tool"}, 0, fault.RunBudgetSpent},
	}
	for _, tt := range tests { // in order
		first, err := step(tt.holder, tt.n, tt.tokens, tt.events...)
		if tt.want == nil && err != nil || tt.want != nil && !errors.Is(err, tt.want) || first != tt.wantFirst {
			t.Fatalf("%s: CommitStep = %d, %v; want %d, %v", tt.name, first, err, tt.wantFirst, tt.want)
		}
	}
	got, _ := e.GetRun(ctx, r.ID)
	if got.CheckpointStep != 3 || got.Events != 3 || got.Spent != (store.Budget{Tokens: 1000, ToolCalls: 3}) {
		t.Fatalf("run after steps: step %d, events %d, spent %+v; want 3, 3, {1000 3}", got.CheckpointStep, got.Events, got.Spent)
	}
	c, _ := e.LoadCheckpoint(ctx, r.ID)
	if c.Step != 3 || string(c.Data) != "after 3" {
		t.Fatalf("checkpoint = %d %q, want step 3", c.Step, c.Data)
	}
	evs, _, _ := e.ListEvents(ctx, r.ID, 1, 10)
	if len(evs) != 3 || evs[2].Type != "tool" {
		t.Fatalf("events = %+v, want model, tool, tool (refused steps write none)", evs)
	}
}

// TestCommitStepWhileRunning: a step that must find the run running is
// refused, writing nothing, once the run is cancelled; the run's last step
// (its end) still commits without the condition.
func TestCommitStepWhileRunning(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.fleet(t, "ops")
	r, _, err := e.CreateRun(ctx, store.NewRun{Fleet: "ops", Source: store.SourceAPI})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.AcquireLease(ctx, r.ID, "a", time.Minute); err != nil {
		t.Fatal(err)
	}
	if _, err := e.CommitStep(ctx, r.ID, store.Step{Holder: "a", Number: 1, WhileRunning: true}); !errors.Is(err, store.ErrRunEnded) {
		t.Fatalf("a step of a queued run = %v, want ErrRunEnded", err)
	}
	if _, err := e.Transition(ctx, r.ID, store.StatusRunning, ""); err != nil {
		t.Fatal(err)
	}
	if _, err := e.CommitStep(ctx, r.ID, store.Step{Holder: "a", Number: 1, WhileRunning: true, Events: []store.NewEvent{{Type: "tool"}}}); err != nil {
		t.Fatalf("a step of a running run: %v", err)
	}
	if _, err := e.Transition(ctx, r.ID, store.StatusCancelled, "stop"); err != nil {
		t.Fatal(err)
	}
	if _, err := e.CommitStep(ctx, r.ID, store.Step{Holder: "a", Number: 2, WhileRunning: true, Events: []store.NewEvent{{Type: "tool"}}}); !errors.Is(err, store.ErrRunEnded) {
		t.Fatalf("a step of a cancelled run = %v, want ErrRunEnded", err)
	}
	if _, err := e.CommitStep(ctx, r.ID, store.Step{Holder: "a", Number: 2, Events: []store.NewEvent{{Type: "run.ended"}}}); err != nil {
		t.Fatalf("the end of a cancelled run: %v", err)
	}
	evs, _, _ := e.ListEvents(ctx, r.ID, 1, 10)
	if len(evs) != 2 || evs[1].Type != "run.ended" {
		t.Fatalf("events %+v, want tool then run.ended", evs)
	}
}
