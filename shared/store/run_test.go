package store_test

import (
	"bytes"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentsfleet/agentsfleet/shared/fault"
	"github.com/agentsfleet/agentsfleet/shared/store"
)

func TestCreateRun(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.fleet(t, "ops")
	e.fleet(t, "paused")
	if _, err := e.PauseFleet(ctx, "paused"); err != nil {
		t.Fatal(err)
	}
	thread := &store.Thread{Channel: "C1", ThreadTS: "1.2", User: "U042", Team: "T042"}
	tests := []struct {
		name string
		nr   store.NewRun
		want fault.Code
	}{
		{"api", store.NewRun{Fleet: "ops", Source: store.SourceAPI}, fault.Code{}},
		{"webhook", store.NewRun{Fleet: "ops", Source: store.SourceWebhook, Input: []byte(`{"a":1}`)}, fault.Code{}},
		{"slack with thread", store.NewRun{Fleet: "ops", Source: store.SourceSlack, Thread: thread}, fault.Code{}},
		{"slack without thread", store.NewRun{Fleet: "ops", Source: store.SourceSlack}, fault.Code{}},
		{"schedule", store.NewRun{Fleet: "ops", Source: store.SourceSchedule, ScheduleID: "sch_1"}, fault.Code{}},
		{"revision pinned", store.NewRun{Fleet: "ops", Source: store.SourceAPI, Revision: 1}, fault.Code{}},
		{"api with thread", store.NewRun{Fleet: "ops", Source: store.SourceAPI, Thread: thread}, fault.RequestInvalid},
		{"webhook with thread", store.NewRun{Fleet: "ops", Source: store.SourceWebhook, Thread: thread}, fault.RequestInvalid},
		{"schedule with thread", store.NewRun{Fleet: "ops", Source: store.SourceSchedule, ScheduleID: "s", Thread: thread}, fault.RequestInvalid},
		{"half a thread", store.NewRun{Fleet: "ops", Source: store.SourceSlack, Thread: &store.Thread{Channel: "C1"}}, fault.RequestInvalid},
		{"schedule without id", store.NewRun{Fleet: "ops", Source: store.SourceSchedule}, fault.RequestInvalid},
		{"schedule id from api", store.NewRun{Fleet: "ops", Source: store.SourceAPI, ScheduleID: "s"}, fault.RequestInvalid},
		{"unknown source", store.NewRun{Fleet: "ops", Source: "email"}, fault.RequestInvalid},
		{"negative limit", store.NewRun{Fleet: "ops", Source: store.SourceAPI, Limits: store.Budget{Tokens: -1}}, fault.RequestInvalid},
		{"unknown revision", store.NewRun{Fleet: "ops", Source: store.SourceAPI, Revision: 2}, fault.RevisionNotFound},
		{"unknown fleet", store.NewRun{Fleet: "nope", Source: store.SourceAPI}, fault.FleetNotFound},
		{"paused fleet", store.NewRun{Fleet: "paused", Source: store.SourceAPI}, fault.FleetPaused},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r, created, err := e.CreateRun(ctx, tt.nr)
			wantCode(t, err, tt.want)
			if err != nil {
				return
			}
			if !created || r.Status != store.StatusQueued || r.Fleet != "ops" || r.Revision != 1 || r.Source != tt.nr.Source ||
				!strings.HasPrefix(r.ID, "run_") || !r.CreatedAt.Equal(e.clock.Now()) {
				t.Fatalf("CreateRun = %+v, created %v", r, created)
			}
			got, err := e.GetRun(ctx, r.ID)
			if err != nil {
				t.Fatalf("GetRun: %v", err)
			}
			if (got.Thread != nil) != (tt.nr.Thread != nil) || got.Thread != nil && *got.Thread != *tt.nr.Thread || got.ScheduleID != tt.nr.ScheduleID {
				t.Fatalf("GetRun = thread %v schedule %q, want %v %q", got.Thread, got.ScheduleID, tt.nr.Thread, tt.nr.ScheduleID)
			}
			in, err := e.GetRunInput(ctx, r.ID)
			if err != nil || !bytes.Equal(in, tt.nr.Input) {
				t.Fatalf("GetRunInput = %q, %v; want %q", in, err, tt.nr.Input)
			}
		})
	}
}

func TestRunKeepsItsPinnedRevision(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.fleet(t, "ops")
	r := e.run(t, "ops", false)
	if _, err := e.AppendRevision(ctx, "ops", []byte(`{"v":2}`), "h2", store.Origin{}); err != nil {
		t.Fatal(err)
	}
	got, err := e.GetRun(ctx, r.ID)
	if err != nil || got.Revision != 1 {
		t.Fatalf("run revision = %d, %v; want the pinned 1", got.Revision, err)
	}
	if r2 := e.run(t, "ops", false); r2.Revision != 2 {
		t.Fatalf("new run revision = %d, want 2", r2.Revision)
	}
}

func TestGetRunNotFound(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	_, err := e.GetRun(ctx, "run_nope")
	wantCode(t, err, fault.RunNotFound)
	_, err = e.GetRunInput(ctx, "run_nope")
	wantCode(t, err, fault.RunNotFound)
}

func TestListRunsNewestFirstWithPaging(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.fleet(t, "ops")
	e.fleet(t, "other")
	var want []string
	for range 7 {
		e.clock.Advance(time.Second)
		want = append(want, e.run(t, "ops", false).ID)
		e.run(t, "other", false)
	}
	slices.Reverse(want)
	var got []string
	cursor := ""
	for pages := 0; ; pages++ {
		if pages > 10 {
			t.Fatal("ListRuns does not end")
		}
		page, err := e.ListRuns(ctx, "ops", cursor, 3)
		if err != nil {
			t.Fatalf("ListRuns: %v", err)
		}
		for _, r := range page.Runs {
			if r.Fleet != "ops" || r.Status != store.StatusQueued {
				t.Fatalf("listed %+v, want a queued run of ops", r)
			}
			got = append(got, r.ID)
		}
		if cursor = page.Next; cursor == "" {
			break
		}
	}
	if !slices.Equal(got, want) {
		t.Fatalf("ListRuns = %v, want newest first %v", got, want)
	}

	other, _ := e.ListRuns(ctx, "other", "", 3)
	_, err := e.ListRuns(ctx, "ops", other.Next, 3)
	wantCode(t, err, fault.RequestInvalid) // a cursor of another fleet
	_, err = e.ListRuns(ctx, "ops", "%%%", 3)
	wantCode(t, err, fault.RequestInvalid)
	_, err = e.ListRuns(ctx, "nope", "", 3)
	wantCode(t, err, fault.FleetNotFound)
}

func TestTransitions(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.fleet(t, "ops")
	// path moves a new run along statuses; the last move is the one tested.
	tests := []struct {
		path []store.Status
		want fault.Code
	}{
		{[]store.Status{store.StatusRunning}, fault.Code{}},
		{[]store.Status{store.StatusCancelled}, fault.Code{}},
		{[]store.Status{store.StatusRunning, store.StatusSucceeded}, fault.Code{}},
		{[]store.Status{store.StatusRunning, store.StatusFailed}, fault.Code{}},
		{[]store.Status{store.StatusRunning, store.StatusCancelled}, fault.Code{}},
		{[]store.Status{store.StatusRunning, store.StatusWaiting}, fault.Code{}},
		{[]store.Status{store.StatusRunning, store.StatusWaiting, store.StatusRunning}, fault.Code{}},
		{[]store.Status{store.StatusRunning, store.StatusWaiting, store.StatusCancelled}, fault.Code{}},
		{[]store.Status{store.StatusSucceeded}, fault.RunBadTransition},
		{[]store.Status{store.StatusFailed}, fault.RunBadTransition},
		{[]store.Status{store.StatusWaiting}, fault.RunBadTransition},
		{[]store.Status{store.StatusQueued}, fault.RunBadTransition},
		{[]store.Status{store.StatusRunning, store.StatusRunning}, fault.RunBadTransition},
		{[]store.Status{store.StatusRunning, store.StatusQueued}, fault.RunBadTransition},
		{[]store.Status{store.StatusRunning, store.StatusWaiting, store.StatusSucceeded}, fault.RunBadTransition},
		{[]store.Status{store.StatusRunning, store.StatusSucceeded, store.StatusRunning}, fault.RunBadTransition},
		{[]store.Status{store.StatusRunning, store.StatusFailed, store.StatusSucceeded}, fault.RunBadTransition},
		{[]store.Status{store.StatusCancelled, store.StatusRunning}, fault.RunBadTransition},
		{[]store.Status{store.StatusCancelled, store.StatusCancelled}, fault.RunBadTransition},
	}
	for _, tt := range tests {
		t.Run(strings.Join(statusStrings(tt.path), ">"), func(t *testing.T) {
			t.Parallel()
			r := e.run(t, "ops", false)
			from := r.Status
			for i, to := range tt.path {
				got, err := e.Transition(ctx, r.ID, to, "because")
				if i < len(tt.path)-1 {
					if err != nil {
						t.Fatalf("setting up %s → %s: %v", from, to, err)
					}
					from = to
					continue
				}
				wantCode(t, err, tt.want)
				if err != nil {
					if msg := err.Error(); !strings.Contains(msg, "from "+string(from)+" to "+string(to)) {
						t.Fatalf("error %q does not name the move from %s to %s", msg, from, to)
					}
					return
				}
				if got.Status != to || got.StatusReason != "because" {
					t.Fatalf("Transition = %s %q, want %s because", got.Status, got.StatusReason, to)
				}
				if to.Terminal() != !got.EndedAt.IsZero() {
					t.Fatalf("EndedAt = %v for %s", got.EndedAt, to)
				}
				if to == store.StatusRunning && got.StartedAt.IsZero() {
					t.Fatal("StartedAt not set on running")
				}
			}
		})
	}
	_, err := e.Transition(ctx, "run_nope", store.StatusRunning, "")
	wantCode(t, err, fault.RunNotFound)
}

func statusStrings(ss []store.Status) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = string(s)
	}
	return out
}

func TestConcurrentTransitionsHaveOneWinner(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.fleet(t, "ops")
	tests := []struct {
		name    string
		targets []store.Status
	}{
		{"to final statuses", []store.Status{store.StatusSucceeded, store.StatusFailed, store.StatusCancelled,
			store.StatusSucceeded, store.StatusFailed, store.StatusCancelled, store.StatusSucceeded, store.StatusFailed}},
		{"to waiting", slices.Repeat([]store.Status{store.StatusWaiting}, 8)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			for range 3 {
				r := e.running(t, "ops")
				errs := make([]error, len(tt.targets))
				parallel(len(tt.targets), func(i int) { _, errs[i] = e.Transition(ctx, r.ID, tt.targets[i], "") })
				won := 0
				var winner store.Status
				for i, err := range errs {
					if err == nil {
						won++
						winner = tt.targets[i]
						continue
					}
					wantCode(t, err, fault.RunBadTransition)
				}
				got, _ := e.GetRun(ctx, r.ID)
				if won != 1 || got.Status != winner {
					t.Fatalf("%d moves won (last %s), run is %s; want exactly one winner whose status stuck", won, winner, got.Status)
				}
			}
		})
	}
}

// TestMarkRunNotified: a run starts not notified; marking it is kept, and
// an unknown run is refused.
func TestMarkRunNotified(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.fleet(t, "ops")
	r := e.run(t, "ops", false)
	if got, _ := e.GetRun(ctx, r.ID); got.Notified {
		t.Fatal("a new run is notified")
	}
	if err := e.MarkRunNotified(ctx, r.ID); err != nil {
		t.Fatal(err)
	}
	if got, _ := e.GetRun(ctx, r.ID); !got.Notified {
		t.Fatal("MarkRunNotified was not kept")
	}
	if err := e.MarkRunNotified(ctx, "run_nope"); !errors.Is(err, fault.RunNotFound) {
		t.Fatalf("MarkRunNotified of an unknown run = %v, want %s", err, fault.RunNotFound.ID())
	}
}
