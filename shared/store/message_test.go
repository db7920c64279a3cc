package store_test

import (
	"slices"
	"testing"

	"github.com/agentsfleet/agentsfleet/shared/fault"
	"github.com/agentsfleet/agentsfleet/shared/store"
)

func TestAddMessageLine(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.fleet(t, "ops")
	slack := e.run(t, "ops", true)
	api := e.run(t, "ops", false)
	for want := 1; want <= store.MaxMessageLines; want++ {
		if n, err := e.AddMessageLine(ctx, slack.ID); err != nil || n != want {
			t.Fatalf("AddMessageLine = %d, %v; want %d", n, err, want)
		}
	}
	tests := []struct {
		name  string
		runID string
		want  fault.Code
	}{
		{"9th line", slack.ID, fault.RunMessageCap},
		{"10th line", slack.ID, fault.RunMessageCap},
		{"no thread", api.ID, fault.RunNoThread},
		{"no run", "run_nope", fault.RunNotFound},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := e.AddMessageLine(ctx, tt.runID)
			wantCode(t, err, tt.want)
		})
	}
	if got, _ := e.GetRun(ctx, slack.ID); got.MessageLines != store.MaxMessageLines {
		t.Fatalf("MessageLines = %d, want %d", got.MessageLines, store.MaxMessageLines)
	}
}

func TestConcurrentMessageLinesStopAtEight(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.fleet(t, "ops")
	r := e.run(t, "ops", true)
	const callers = 20
	lines := make([]int, callers)
	errs := make([]error, callers)
	parallel(callers, func(i int) { lines[i], errs[i] = e.AddMessageLine(ctx, r.ID) })
	var got []int
	capped := 0
	for i, err := range errs {
		switch {
		case err == nil:
			got = append(got, lines[i])
		case errorsIs(err, fault.RunMessageCap):
			capped++
		default:
			t.Fatalf("AddMessageLine: %v", err)
		}
	}
	slices.Sort(got)
	if !slices.Equal(got, []int{1, 2, 3, 4, 5, 6, 7, 8}) || capped != callers-8 {
		t.Fatalf("lines %v and %d UZ-RUN-020; want 1..8 once each and %d", got, capped, callers-8)
	}
	if run, _ := e.GetRun(ctx, r.ID); run.MessageLines != 8 {
		t.Fatalf("counted %d lines, want 8", run.MessageLines)
	}
}
