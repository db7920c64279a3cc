package keeper_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/scheduler"

	"github.com/agentsfleet/agentsfleet/shared/awstest"
	"github.com/agentsfleet/agentsfleet/shared/fault"
	"github.com/agentsfleet/agentsfleet/shared/fleet"
	"github.com/agentsfleet/agentsfleet/shared/invoke"
	afrun "github.com/agentsfleet/agentsfleet/shared/run"
	"github.com/agentsfleet/agentsfleet/shared/schedule/clock"
	"github.com/agentsfleet/agentsfleet/shared/schedule/eventbridge"
	"github.com/agentsfleet/agentsfleet/shared/schedule/keeper"
	"github.com/agentsfleet/agentsfleet/shared/secret"
	"github.com/agentsfleet/agentsfleet/shared/store"
	"github.com/agentsfleet/agentsfleet/shared/web"
)

func TestMain(m *testing.M) { awstest.Main(m) }

var ctx = context.Background()

// env is a Keeper over a fresh table and schedule group on the emulator,
// with local functions: a runner that records the runs it is started on,
// and the real webtools service over an in-memory secret store.
type env struct {
	t      *testing.T
	store  *store.Store
	sched  *eventbridge.Scheduler
	local  *invoke.Local
	keeper *keeper.Keeper
	mu     sync.Mutex
	runs   []string // run ids the runner was started on
}

const apiKey = "sk-live-9f8e7d6c5b4a3210"

func newEnv(t *testing.T) *env {
	t.Helper()
	cfg := awstest.Config(t)
	db := dynamodb.NewFromConfig(cfg)
	table := awstest.UniqueName(t, "keep")
	if err := store.CreateTable(ctx, db, table); err != nil {
		t.Fatal(err)
	}
	// No kept connections: the emulator serves one connection at a time
	// (see shared/schedule/clock's tests).
	client := scheduler.NewFromConfig(cfg, func(o *scheduler.Options) {
		o.HTTPClient = awshttp.NewBuildableClient().WithTransportOptions(func(tr *http.Transport) { tr.DisableKeepAlives = true })
	})
	sched, err := eventbridge.New(client, eventbridge.Config{
		Group:     awstest.UniqueName(t, "keep"),
		TargetARN: "arn:aws:lambda:us-east-1:123456789012:function:agentsfleet-schedule",
		RoleARN:   "arn:aws:iam::123456789012:role/agentsfleet-scheduler",
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := sched.EnsureGroup(ctx); err != nil {
		t.Fatal(err)
	}
	e := &env{t: t, store: store.New(db, table), sched: sched, local: invoke.NewLocal(nil)}
	t.Cleanup(e.local.Close)
	e.local.Register(invoke.Runner, func(_ context.Context, payload []byte) ([]byte, error) {
		var p afrun.Payload
		if err := json.Unmarshal(payload, &p); err != nil {
			return nil, err
		}
		e.mu.Lock()
		e.runs = append(e.runs, p.RunID)
		e.mu.Unlock()
		return nil, nil
	})
	svc, err := web.NewService(web.Config{Secrets: secret.Map{"acme/api-key": apiKey}, Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	e.local.Register(invoke.Webtools, svc.Invoke)
	e.keeper, err = keeper.New(keeper.Config{Store: e.store, Scheduler: sched, Invoker: e.local,
		Scrub: keeper.WebtoolsScrub(e.store, e.local), Log: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// fleet creates a fleet with one secret, API_KEY.
func (e *env) fleet(name string) {
	e.t.Helper()
	d, err := fleet.ParseTOML([]byte(`name = "` + name + `"
instructions = "Check things."
[x-agentsfleet]
tools = ["read"]
[x-agentsfleet.secrets]
API_KEY = "acme/api-key"
`))
	if err != nil {
		e.t.Fatal(err)
	}
	if _, err := e.store.CreateFleet(ctx, store.NewFleet{Name: d.Name, Definition: d.Canonical(), Hash: d.Hash()}); err != nil {
		e.t.Fatal(err)
	}
}

// runsOf returns the fleet's runs.
func (e *env) runsOf(fleet string) []store.RunSummary {
	e.t.Helper()
	page, err := e.store.ListRuns(ctx, fleet, "", 100)
	if err != nil {
		e.t.Fatal(err)
	}
	return page.Runs
}

// registered returns the Scheduler schedule of a schedule, or false.
func (e *env) registered(fleet, id string) (eventbridge.Schedule, bool) {
	e.t.Helper()
	sc, err := e.sched.Get(ctx, eventbridge.Name(fleet, id))
	if errors.Is(err, eventbridge.ErrNotFound) {
		return sc, false
	}
	if err != nil {
		e.t.Fatal(err)
	}
	return sc, true
}

func payload(fleet, id string, due time.Time) []byte {
	return eventbridge.Payload{Fleet: fleet, ScheduleID: id, ScheduledTime: due.UTC().Format(time.RFC3339)}.Marshal()
}

func at(t time.Time) string { return "at(" + t.UTC().Format("2006-01-02T15:04:05") + ")" }

func TestCreateRegistersAndScrubs(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.fleet("ops")
	sc, err := e.keeper.Create(ctx, "ops", store.ActorPerson, "alice", keeper.Input{
		Expression: "cron(0 9 ? * MON-FRI *)", Timezone: "Europe/Paris",
		Message: "call https://api.example.com with key " + apiKey + " and report"})
	if err != nil {
		t.Fatal(err)
	}
	if want := "call https://api.example.com with key «secret:API_KEY» and report"; sc.Message != want {
		t.Errorf("saved message %q, want %q", sc.Message, want)
	}
	got, err := e.keeper.Get(ctx, "ops", sc.ID)
	if err != nil || strings.Contains(got.Message, apiKey) || got.Source != store.ActorPerson {
		t.Errorf("stored %+v, %v", got, err)
	}
	reg, ok := e.registered("ops", sc.ID)
	if !ok || reg.State != eventbridge.Enabled || reg.Expression != sc.Expression || reg.Timezone != "Europe/Paris" ||
		reg.ActionAfterCompletion != eventbridge.AfterCompletionNone {
		t.Fatalf("registered %+v, %v", reg, ok)
	}
	// The Input carries Scheduler's context attribute, unescaped.
	if want := `{"fleet":"ops","schedule_id":"` + sc.ID + `","scheduled_time":"<aws.scheduler.scheduled-time>"}`; string(reg.Input) != want {
		t.Errorf("Input %s, want %s", reg.Input, want)
	}
	p, err := eventbridge.ParsePayload(reg.Input)
	if err != nil || p.Fleet != "ops" || p.ScheduleID != sc.ID {
		t.Errorf("ParsePayload(%s) = %+v, %v", reg.Input, p, err)
	}
}

func TestCreateRefuses(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.fleet("ops")
	past := at(time.Now().Add(-time.Hour))
	for _, tc := range []struct {
		in   keeper.Input
		code fault.Code
		want string
	}{
		{keeper.Input{Expression: "every day", Message: "m"}, fault.RequestInvalid, "expression: "},
		{keeper.Input{Expression: "rate(1 days)", Message: "m"}, fault.RequestInvalid, "expression: "},
		{keeper.Input{Expression: "rate(1 day)", Message: "m", Timezone: "Mars/Olympus"}, fault.RequestInvalid, "timezone: "},
		{keeper.Input{Expression: "rate(1 day)", Message: " "}, fault.RequestInvalid, "message: "},
		{keeper.Input{Expression: "rate(1 day)", Message: "m", SpendCap: -1}, fault.RequestInvalid, "spend_cap: "},
		{keeper.Input{Expression: past, Message: "m"}, fault.RequestInvalid, "already past"},
	} {
		_, err := e.keeper.Create(ctx, "ops", store.ActorPerson, "alice", tc.in)
		if !errors.Is(err, tc.code) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Create(%+v) = %v; want %s naming %q", tc.in, err, tc.code.ID(), tc.want)
		}
	}
	if _, err := e.keeper.Create(ctx, "nobody", store.ActorPerson, "alice", keeper.Input{Expression: "rate(1 day)", Message: "m"}); !errors.Is(err, fault.FleetNotFound) {
		t.Errorf("Create on an unknown fleet = %v, want %s", err, fault.FleetNotFound.ID())
	}
	list, err := e.keeper.List(ctx, "ops")
	if err != nil || len(list) != 0 {
		t.Errorf("List = %v, %v; want nothing saved", list, err)
	}
}

// Test64ConcurrentFleetSchedules: 64 fleet-created schedules at once leave
// 16, and 48 UZ-SCHED-009, with the 16 registered in Scheduler.
func Test64ConcurrentFleetSchedules(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.fleet("busy")
	var wg sync.WaitGroup
	errs := make([]error, 64)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = e.keeper.Create(ctx, "busy", store.ActorFleet, fmt.Sprintf("run_%02d", i),
				keeper.Input{Expression: "rate(1 hour)", Message: fmt.Sprintf("check %d", i)})
		}()
	}
	wg.Wait()
	ok, capped := 0, 0
	for _, err := range errs {
		switch {
		case err == nil:
			ok++
		case errors.Is(err, fault.SchedFleetCap):
			capped++
		default:
			t.Errorf("Create: %v", err)
		}
	}
	if ok != store.MaxFleetSchedules || capped != 64-store.MaxFleetSchedules {
		t.Fatalf("%d created and %d %s; want %d and %d", ok, capped, fault.SchedFleetCap.ID(), store.MaxFleetSchedules, 64-store.MaxFleetSchedules)
	}
	list, err := e.keeper.List(ctx, "busy")
	if err != nil || len(list) != store.MaxFleetSchedules {
		t.Fatalf("List = %d schedules, %v; want %d", len(list), err, store.MaxFleetSchedules)
	}
	for _, sc := range list {
		if sc.Source != store.ActorFleet {
			t.Errorf("schedule %s has source %s, want fleet", sc.ID, sc.Source)
		}
		if _, ok := e.registered("busy", sc.ID); !ok {
			t.Errorf("schedule %s is not registered in Scheduler", sc.ID)
		}
	}
	all, err := e.sched.List(ctx)
	if err != nil || len(all) != store.MaxFleetSchedules {
		t.Errorf("Scheduler holds %d schedules, %v; want %d", len(all), err, store.MaxFleetSchedules)
	}
}

func TestUpdatePauseResumeDelete(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.fleet("ops")
	mine, err := e.keeper.Create(ctx, "ops", store.ActorPerson, "alice", keeper.Input{Expression: "rate(1 day)", Message: "report"})
	if err != nil {
		t.Fatal(err)
	}
	// The fleet cannot touch a person's schedule.
	msg := "other"
	if _, err := e.keeper.Update(ctx, "ops", mine.ID, store.ActorFleet, keeper.Patch{Message: &msg}); !errors.Is(err, fault.SchedPersonOwns) {
		t.Errorf("fleet Update of a person's = %v, want %s", err, fault.SchedPersonOwns.ID())
	}
	if err := e.keeper.Delete(ctx, "ops", mine.ID, store.ActorFleet); !errors.Is(err, fault.SchedPersonOwns) {
		t.Errorf("fleet Delete of a person's = %v, want %s", err, fault.SchedPersonOwns.ID())
	}
	if _, err := e.keeper.Update(ctx, "ops", mine.ID, store.ActorPerson, keeper.Patch{}); !errors.Is(err, fault.RequestInvalid) {
		t.Errorf("empty Update = %v, want %s", err, fault.RequestInvalid.ID())
	}
	expr, tz, text := "cron(30 8 * * ? *)", "America/New_York", "report with "+apiKey
	sc, err := e.keeper.Update(ctx, "ops", mine.ID, store.ActorPerson, keeper.Patch{Expression: &expr, Timezone: &tz, Message: &text})
	if err != nil {
		t.Fatal(err)
	}
	reg, _ := e.registered("ops", mine.ID)
	if sc.Message != "report with «secret:API_KEY»" || reg.Expression != expr || reg.Timezone != tz || reg.State != eventbridge.Enabled {
		t.Errorf("after Update: %+v, registered %+v", sc, reg)
	}
	if sc, err = e.keeper.Pause(ctx, "ops", mine.ID, store.ActorPerson); err != nil || sc.State != store.SchedulePaused {
		t.Fatalf("Pause = %+v, %v", sc, err)
	}
	if reg, _ := e.registered("ops", mine.ID); reg.State != eventbridge.Disabled {
		t.Errorf("paused schedule registered %s, want DISABLED", reg.State)
	}
	if sc, err = e.keeper.Resume(ctx, "ops", mine.ID, store.ActorPerson); err != nil || sc.State != store.ScheduleActive {
		t.Fatalf("Resume = %+v, %v", sc, err)
	}
	if reg, _ := e.registered("ops", mine.ID); reg.State != eventbridge.Enabled {
		t.Errorf("resumed schedule registered %s, want ENABLED", reg.State)
	}
	// A person changes and deletes the fleet's own schedule too.
	theirs, err := e.keeper.Create(ctx, "ops", store.ActorFleet, "run_1", keeper.Input{Expression: "rate(5 minutes)", Message: "poll"})
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{mine.ID, theirs.ID} {
		if err := e.keeper.Delete(ctx, "ops", id, store.ActorPerson); err != nil {
			t.Fatal(err)
		}
		if _, ok := e.registered("ops", id); ok {
			t.Errorf("deleted schedule %s is still in Scheduler", id)
		}
		if _, err := e.keeper.Get(ctx, "ops", id); !errors.Is(err, fault.SchedNotFound) {
			t.Errorf("Get of deleted %s = %v", id, err)
		}
	}
	f, _ := e.store.GetFleet(ctx, "ops")
	if f.Schedules != 0 || f.FleetSchedules != 0 {
		t.Errorf("fleet counts %d schedules, %d its own after deleting all", f.Schedules, f.FleetSchedules)
	}
}

// TestFireTwiceStartsOneRun: Scheduler's at-least-once delivery, the same
// firing delivered twice at once, starts one run; the next firing another.
func TestFireTwiceStartsOneRun(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.fleet("ops")
	sc, err := e.keeper.Create(ctx, "ops", store.ActorPerson, "alice", keeper.Input{Expression: "rate(1 hour)", Message: "hourly check"})
	if err != nil {
		t.Fatal(err)
	}
	due := time.Date(2030, 1, 31, 9, 0, 0, 0, time.UTC)
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for i := range errs {
		wg.Add(1)
		go func() { defer wg.Done(); errs[i] = e.keeper.Fire(ctx, payload("ops", sc.ID, due)) }()
	}
	wg.Wait()
	if errs[0] != nil || errs[1] != nil {
		t.Fatal(errs)
	}
	runs := e.runsOf("ops")
	if len(runs) != 1 || runs[0].Source != store.SourceSchedule || runs[0].ScheduleID != sc.ID || runs[0].Thread != nil {
		t.Fatalf("runs after a double delivery: %+v; want one run with source schedule", runs)
	}
	input, err := e.store.GetRunInput(ctx, runs[0].ID)
	if err != nil || string(input) != "hourly check" {
		t.Errorf("run input %q, %v", input, err)
	}
	if err := e.keeper.Fire(ctx, payload("ops", sc.ID, due.Add(time.Hour))); err != nil {
		t.Fatal(err)
	}
	if runs := e.runsOf("ops"); len(runs) != 2 {
		t.Errorf("%d runs after the next firing, want 2", len(runs))
	}
	if _, err := e.keeper.Get(ctx, "ops", sc.ID); err != nil {
		t.Errorf("a recurring schedule is kept after firing: %v", err)
	}
}

// TestFollowUpDueWhilePausedIsRemoved: a follow-up due while the fleet is
// paused is removed without running; a recurring one is skipped and kept.
func TestFollowUpDueWhilePausedIsRemoved(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.fleet("ops")
	follow, err := e.keeper.Create(ctx, "ops", store.ActorFleet, "run_1", keeper.Input{Expression: at(time.Now().Add(time.Hour)), Message: "re-check the deploy"})
	if err != nil {
		t.Fatal(err)
	}
	if reg, ok := e.registered("ops", follow.ID); !ok || reg.ActionAfterCompletion != eventbridge.AfterCompletionDelete {
		t.Fatalf("follow-up registered %+v, %v; want ActionAfterCompletion DELETE", reg, ok)
	}
	daily, err := e.keeper.Create(ctx, "ops", store.ActorPerson, "alice", keeper.Input{Expression: "rate(1 day)", Message: "daily"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.store.PauseFleet(ctx, "ops"); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{follow.ID, daily.ID} {
		if err := e.keeper.Fire(ctx, payload("ops", id, time.Now())); err != nil {
			t.Fatal(err)
		}
	}
	if runs := e.runsOf("ops"); len(runs) != 0 {
		t.Errorf("runs while paused: %+v", runs)
	}
	if _, err := e.keeper.Get(ctx, "ops", follow.ID); !errors.Is(err, fault.SchedNotFound) {
		t.Errorf("follow-up due while paused: Get = %v, want it removed", err)
	}
	if _, ok := e.registered("ops", follow.ID); ok {
		t.Error("follow-up due while paused is still in Scheduler")
	}
	if sc, err := e.keeper.Get(ctx, "ops", daily.ID); err != nil || sc.State != store.ScheduleActive {
		t.Errorf("recurring schedule due while paused: %+v, %v; want it kept", sc, err)
	}
	// A firing for a schedule that is gone deletes its Scheduler schedule.
	if err := e.keeper.Fire(ctx, payload("ops", "sch_gone", time.Now())); err != nil {
		t.Errorf("Fire of a gone schedule = %v", err)
	}
}

// TestClockFiresFollowUpIntoRun: the local clock fires an at() follow-up
// into Keeper.Fire, which starts a run with source schedule through
// start.Run; the follow-up is then removed.
func TestClockFiresFollowUpIntoRun(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.fleet("ops")
	ck, err := clock.New(e.sched, e.keeper.Fire, clock.Options{Poll: 200 * time.Millisecond, Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	cctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- ck.Run(cctx) }()
	defer func() { stop(); <-done }()
	moment := time.Now().Add(2 * time.Second).Truncate(time.Second)
	sc, err := e.keeper.Create(ctx, "ops", store.ActorFleet, "run_1", keeper.Input{Expression: at(moment), Message: "follow up on the deploy"})
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(15 * time.Second)
	var runs []store.RunSummary
	for time.Now().Before(deadline) {
		if runs = e.runsOf("ops"); len(runs) > 0 {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if len(runs) != 1 || runs[0].Source != store.SourceSchedule || runs[0].ScheduleID != sc.ID {
		t.Fatalf("runs: %+v; want one started by the follow-up", runs)
	}
	for time.Now().Before(deadline) {
		e.mu.Lock()
		n := len(e.runs)
		e.mu.Unlock()
		_, err := e.keeper.Get(ctx, "ops", sc.ID)
		if n == 1 && errors.Is(err, fault.SchedNotFound) {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("the runner was started %d times and the follow-up not removed", len(e.runs))
}

// TestSpendCapPausesSchedule: once the runs a schedule started spent more
// than its cap in a day, it is paused with the reason; its next firing
// records a run that ends failed saying why, then Scheduler holds it
// disabled; resuming clears the reason.
func TestSpendCapPausesSchedule(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.fleet("ops")
	sc, err := e.keeper.Create(ctx, "ops", store.ActorFleet, "run_0", keeper.Input{Expression: "rate(1 hour)", Message: "hourly", SpendCap: 100})
	if err != nil {
		t.Fatal(err)
	}
	ended := time.Now()
	run := func(id string, tokens int64) store.Run {
		r := store.Run{RunSummary: store.RunSummary{ID: id, Fleet: "ops", Source: store.SourceSchedule, ScheduleID: sc.ID}, EndedAt: ended}
		r.Spent.Tokens = tokens
		return r
	}
	for _, r := range []store.Run{run("run_a", 60), run("run_a", 60), run("run_b", 40)} { // run_a reported twice
		if err := e.keeper.RunEnded(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	got, _ := e.keeper.Get(ctx, "ops", sc.ID)
	if got.State != store.ScheduleActive || got.SpentTokens != 100 {
		t.Fatalf("at the cap: %s with %d tokens spent; want active with 100", got.State, got.SpentTokens)
	}
	// Other runs are not counted.
	other := run("run_api", 500)
	other.Source, other.ScheduleID = store.SourceAPI, ""
	if err := e.keeper.RunEnded(ctx, other); err != nil {
		t.Fatal(err)
	}
	if err := e.keeper.RunEnded(ctx, run("run_c", 1)); err != nil {
		t.Fatal(err)
	}
	got, _ = e.keeper.Get(ctx, "ops", sc.ID)
	if got.State != store.SchedulePaused || got.SpentTokens != 101 || !strings.Contains(got.PausedReason, "over its spend cap of 100 tokens a day") {
		t.Fatalf("over the cap: %+v; want paused with the reason", got)
	}
	if reg, _ := e.registered("ops", sc.ID); reg.State != eventbridge.Enabled {
		t.Errorf("capped schedule registered %s; want ENABLED until its next firing", reg.State)
	}
	// The next firing: a run that ends failed with the reason, no runner.
	if err := e.keeper.Fire(ctx, payload("ops", sc.ID, ended.Add(time.Hour))); err != nil {
		t.Fatal(err)
	}
	runs := e.runsOf("ops")
	if len(runs) != 1 || runs[0].Status != store.StatusFailed {
		t.Fatalf("runs after the capped firing: %+v; want one failed", runs)
	}
	full, _ := e.store.GetRun(ctx, runs[0].ID)
	if !strings.Contains(full.StatusReason, fault.SchedNotRunnable.ID()) || !strings.Contains(full.StatusReason, "spend cap") {
		t.Errorf("status reason %q", full.StatusReason)
	}
	evs, _, err := e.store.ListEvents(ctx, runs[0].ID, 1, 10)
	if err != nil || len(evs) != 2 || evs[1].Type != afrun.EventRunEnded {
		t.Fatalf("events %+v, %v", evs, err)
	}
	var end afrun.RunEnded
	if err := json.Unmarshal(evs[1].Data, &end); err != nil || end.Status != store.StatusFailed || end.Error == nil ||
		end.Error.Code != fault.SchedNotRunnable.ID() || end.Error.Message != got.PausedReason {
		t.Errorf("run.ended %s", evs[1].Data)
	}
	e.mu.Lock()
	started := len(e.runs)
	e.mu.Unlock()
	if started != 0 {
		t.Errorf("the runner was started %d times for a capped schedule", started)
	}
	if reg, _ := e.registered("ops", sc.ID); reg.State != eventbridge.Disabled {
		t.Errorf("after the notice the schedule is registered %s, want DISABLED", reg.State)
	}
	if _, err := e.keeper.Resume(ctx, "ops", sc.ID, store.ActorFleet); !errors.Is(err, fault.RequestInvalid) {
		t.Errorf("the fleet resuming a capped schedule: %v; want %s", err, fault.RequestInvalid.ID())
	}
	got, err = e.keeper.Resume(ctx, "ops", sc.ID, store.ActorPerson)
	if err != nil || got.State != store.ScheduleActive || got.PausedReason != "" {
		t.Fatalf("Resume = %+v, %v", got, err)
	}
	if reg, _ := e.registered("ops", sc.ID); reg.State != eventbridge.Enabled {
		t.Errorf("resumed: registered %s", reg.State)
	}
}

func TestRunNow(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.fleet("ops")
	sc, err := e.keeper.Create(ctx, "ops", store.ActorPerson, "alice", keeper.Input{Expression: "rate(1 day)", Message: "now please"})
	if err != nil {
		t.Fatal(err)
	}
	run, err := e.keeper.RunNow(ctx, "ops", sc.ID, store.ActorPerson, "", nil)
	if err != nil || run.Source != store.SourceSchedule || run.ScheduleID != sc.ID {
		t.Fatalf("RunNow = %+v, %v", run, err)
	}
	// Keyed: a retry with the key gets the first run back; another key, or
	// none, starts another.
	key := &store.IdempotencyKey{Scope: "cron_run:ops", Key: "af-step-3-call-0"}
	first, err := e.keeper.RunNow(ctx, "ops", sc.ID, store.ActorFleet, "", key)
	if err != nil {
		t.Fatal(err)
	}
	again, err := e.keeper.RunNow(ctx, "ops", sc.ID, store.ActorFleet, "", key)
	if err != nil || again.ID != first.ID {
		t.Errorf("RunNow retried with its key = %s, %v; want the first run %s", again.ID, err, first.ID)
	}
	other, err := e.keeper.RunNow(ctx, "ops", sc.ID, store.ActorFleet, "", &store.IdempotencyKey{Scope: "cron_run:ops", Key: "af-step-4-call-0"})
	if err != nil || other.ID == first.ID || other.ID == run.ID {
		t.Errorf("RunNow with another key = %s, %v; want a run of its own", other.ID, err)
	}
	// From a run a schedule started: UZ-SCHED-011.
	if _, err := e.keeper.RunNow(ctx, "ops", sc.ID, store.ActorFleet, run.ID, nil); !errors.Is(err, fault.SchedNotRunnable) {
		t.Errorf("RunNow from a schedule's run = %v, want %s", err, fault.SchedNotRunnable.ID())
	}
	if _, err := e.keeper.Pause(ctx, "ops", sc.ID, store.ActorPerson); err != nil {
		t.Fatal(err)
	}
	if _, err := e.keeper.RunNow(ctx, "ops", sc.ID, store.ActorPerson, "", nil); !errors.Is(err, fault.SchedNotRunnable) {
		t.Errorf("RunNow of a paused schedule = %v, want %s", err, fault.SchedNotRunnable.ID())
	}
}

// TestSpendCountsConcurrentRunsAndDays: runs ending at once each count
// once, and a new day (in the schedule's time zone) starts afresh.
func TestSpendCountsConcurrentRunsAndDays(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.fleet("ops")
	sc, err := e.keeper.Create(ctx, "ops", store.ActorPerson, "alice", keeper.Input{Expression: "rate(5 minutes)", Message: "poll",
		Timezone: "Asia/Tokyo", SpendCap: 1_000_000})
	if err != nil {
		t.Fatal(err)
	}
	// 23:30 in Tokyo, then 00:30 the next day there.
	late := time.Date(2030, 1, 31, 14, 30, 0, 0, time.UTC)
	run := func(i int, endedAt time.Time) store.Run {
		r := store.Run{RunSummary: store.RunSummary{ID: fmt.Sprintf("run_%02d", i), Fleet: "ops", Source: store.SourceSchedule, ScheduleID: sc.ID}, EndedAt: endedAt}
		r.Spent.Tokens = 10
		return r
	}
	var wg sync.WaitGroup
	for i := range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := e.keeper.RunEnded(ctx, run(i%10, late)); err != nil { // each run reported twice
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	got, _ := e.keeper.Get(ctx, "ops", sc.ID)
	if got.SpentTokens != 100 || got.SpentDay != "2030-01-31" {
		t.Fatalf("after 10 runs of 10 tokens: %d on %s; want 100 on 2030-01-31", got.SpentTokens, got.SpentDay)
	}
	if err := e.keeper.RunEnded(ctx, run(10, late.Add(time.Hour))); err != nil {
		t.Fatal(err)
	}
	got, _ = e.keeper.Get(ctx, "ops", sc.ID)
	if got.SpentTokens != 10 || got.SpentDay != "2030-02-01" {
		t.Errorf("the next day in Tokyo: %d on %s; want 10 on 2030-02-01", got.SpentTokens, got.SpentDay)
	}
}

// TestCreateWithAnUnreadableSecret: a message that cannot be screened,
// because a secret of the fleet cannot be read, is refused with
// UZ-SECRET-409 naming the secret, and nothing is kept or registered.
func TestCreateWithAnUnreadableSecret(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	d, err := fleet.ParseTOML([]byte("name = \"gone\"\ninstructions = \"Check things.\"\n[x-agentsfleet]\ntools = [\"read\"]\n[x-agentsfleet.secrets]\nTOKEN = \"acme/never-created\"\n"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.store.CreateFleet(ctx, store.NewFleet{Name: d.Name, Definition: d.Canonical(), Hash: d.Hash()}); err != nil {
		t.Fatal(err)
	}
	_, err = e.keeper.Create(ctx, "gone", store.ActorPerson, "alice", keeper.Input{Expression: "rate(1 day)", Message: "report"})
	if !errors.Is(err, fault.SecretUnreadable) || !strings.Contains(err.Error(), "TOKEN") {
		t.Fatalf("Create = %v, want UZ-SECRET-409 naming TOKEN", err)
	}
	if list, err := e.keeper.List(ctx, "gone"); err != nil || len(list) != 0 {
		t.Errorf("schedules after the refusal = %+v, %v; want none", list, err)
	}
}
