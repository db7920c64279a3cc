//go:build linux

package runner_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	afrun "github.com/agentsfleet/agentsfleet/shared/run"

	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/service/scheduler"

	"github.com/agentsfleet/agentsfleet/shared/awstest"
	"github.com/agentsfleet/agentsfleet/shared/fault"
	"github.com/agentsfleet/agentsfleet/shared/invoke"
	"github.com/agentsfleet/agentsfleet/shared/runner"
	"github.com/agentsfleet/agentsfleet/shared/schedule/eventbridge"
	"github.com/agentsfleet/agentsfleet/shared/schedule/keeper"
	"github.com/agentsfleet/agentsfleet/shared/store"
)

const scheduleDefinition = `name = "planner"
instructions = "Plan follow-ups."
[x-agentsfleet]
tools = ["cron_run", "schedule_create", "schedule_delete", "schedule_list", "schedule_update"]
`

// withSchedules gives the runner a schedule keeper over its store and a
// schedule group of its own on the emulator. The runs the keeper starts
// go to a runner that does nothing, so that a cron_run does not replay the
// test's script; they stay queued, for the tests to find.
func withSchedules(t *testing.T, k **keeper.Keeper) func(*runner.Config) {
	return func(c *runner.Config) {
		client := scheduler.NewFromConfig(awstest.Config(t), func(o *scheduler.Options) {
			o.HTTPClient = awshttp.NewBuildableClient().WithTransportOptions(func(tr *http.Transport) { tr.DisableKeepAlives = true })
		})
		sched, err := eventbridge.New(client, eventbridge.Config{Group: awstest.UniqueName(t, "tools"),
			TargetARN: "arn:aws:lambda:us-east-1:123456789012:function:agentsfleet-schedule",
			RoleARN:   "arn:aws:iam::123456789012:role/agentsfleet-scheduler"})
		if err != nil {
			t.Fatal(err)
		}
		if err := sched.EnsureGroup(ctx); err != nil {
			t.Fatal(err)
		}
		idle := invoke.NewLocal(nil)
		t.Cleanup(idle.Close)
		idle.Register(invoke.Runner, func(context.Context, []byte) ([]byte, error) { return nil, nil })
		if *k, err = keeper.New(keeper.Config{Store: c.Store, Scheduler: sched, Invoker: idle}); err != nil {
			t.Fatal(err)
		}
		c.Schedules = (*k).Book()
	}
}

// scheduled returns the ids of the fleet's runs with source schedule.
func scheduled(e *env, fleet string) []string {
	page, err := e.store.ListRuns(ctx, fleet, "", 100)
	if err != nil {
		e.t.Fatal(err)
	}
	var ids []string
	for _, r := range page.Runs {
		if r.Source == store.SourceSchedule {
			ids = append(ids, r.ID)
		}
	}
	return ids
}

// byName returns the run's tool results, by tool name, in order.
func byName(e *env, runID string) map[string][]afrun.ToolResult {
	out := map[string][]afrun.ToolResult{}
	for _, r := range e.results(runID) {
		out[r.Name] = append(out[r.Name], r)
	}
	return out
}

// TestScheduleToolsAsTheFleet: the fleet creates and lists schedules, runs a
// person's now, and cannot change or delete it (UZ-SCHED-010). The run's
// input is the person's schedule id.
func TestScheduleToolsAsTheFleet(t *testing.T) {
	t.Parallel()
	var k *keeper.Keeper
	e := newEnv(t, `
[[turn]]
[[turn.tool_call]]
name = "schedule_create"
arguments = { expression = "at(2031-01-31T09:00:00)", message = "re-check the deploy", timezone = "Europe/Paris" }

[[turn]]
[[turn.tool_call]]
name = "schedule_update"
arguments = { schedule_id = "{{input}}", paused = true }
[[turn.tool_call]]
name = "schedule_delete"
arguments = { schedule_id = "{{input}}" }
[[turn.tool_call]]
name = "schedule_list"
[[turn.tool_call]]
name = "cron_run"
arguments = { schedule_id = "{{input}}" }
[[turn.tool_call]]
name = "schedule_update"
arguments = { schedule_id = "sch_nope", message = "x" }

[[turn]]
text = "planned"
`, withSchedules(t, &k))
	d := e.fleet(scheduleDefinition)
	person, err := k.Create(ctx, d.Name, store.ActorPerson, "alice", keeper.Input{Expression: "rate(1 day)", Message: "daily report"})
	if err != nil {
		t.Fatal(err)
	}
	runID := e.start(d, person.ID)
	if err := e.runner.Run(ctx, runID); err != nil {
		t.Fatal(err)
	}
	if run, end := e.ended(runID); run.Status != store.StatusSucceeded {
		t.Fatalf("run %s: %+v", run.Status, end)
	}
	res := byName(e, runID)
	if c := res["schedule_create"]; len(c) != 1 || c[0].IsError || !strings.Contains(c[0].Output, `"source": "fleet"`) {
		t.Fatalf("schedule_create: %+v", c)
	}
	u := res["schedule_update"]
	if len(u) != 2 || !u[0].IsError || !strings.Contains(u[0].Output, fault.SchedPersonOwns.ID()) ||
		!u[1].IsError || !strings.Contains(u[1].Output, fault.SchedNotFound.ID()) {
		t.Errorf("schedule_update: %+v; want %s, then %s", u, fault.SchedPersonOwns.ID(), fault.SchedNotFound.ID())
	}
	if del := res["schedule_delete"]; len(del) != 1 || !del[0].IsError || !strings.Contains(del[0].Output, fault.SchedPersonOwns.ID()) {
		t.Errorf("schedule_delete: %+v; want %s", del, fault.SchedPersonOwns.ID())
	}
	if l := res["schedule_list"]; len(l) != 1 || l[0].IsError || !strings.Contains(l[0].Output, person.ID) || strings.Count(l[0].Output, `"schedule_id"`) != 2 {
		t.Errorf("schedule_list: %+v; want both schedules", l)
	}
	if c := res["cron_run"]; len(c) != 1 || c[0].IsError || !strings.Contains(c[0].Output, `"run_id"`) || len(scheduled(e, d.Name)) != 1 {
		t.Errorf("cron_run: %+v (runs with source schedule: %v); want one", c, scheduled(e, d.Name))
	}
	list, err := k.List(ctx, d.Name)
	if err != nil || len(list) != 2 {
		t.Fatalf("List = %+v, %v", list, err)
	}
	for _, sc := range list {
		if sc.ID != person.ID && (sc.Source != store.ActorFleet || sc.CreatedBy != runID || sc.Timezone != "Europe/Paris" || !sc.OneShot) {
			t.Errorf("the fleet's schedule: %+v; want source fleet created by %s", sc, runID)
		}
		if sc.ID == person.ID && sc.State != store.ScheduleActive {
			t.Errorf("the person's schedule is %s after the fleet's refused changes", sc.State)
		}
	}
}

// TestCronRunFromAScheduledRun: a run a schedule started cannot cron_run
// (UZ-SCHED-011), nor run a paused schedule.
func TestCronRunFromAScheduledRun(t *testing.T) {
	t.Parallel()
	var k *keeper.Keeper
	e := newEnv(t, `
[[turn]]
[[turn.tool_call]]
name = "cron_run"
arguments = { schedule_id = "{{input}}" }

[[turn]]
text = "done"
`, withSchedules(t, &k))
	d := e.fleet(scheduleDefinition)
	sc, err := k.Create(ctx, d.Name, store.ActorPerson, "alice", keeper.Input{Expression: "rate(1 day)", Message: "daily"})
	if err != nil {
		t.Fatal(err)
	}
	run, _, err := e.store.CreateRun(ctx, store.NewRun{Fleet: d.Name, Source: store.SourceSchedule, ScheduleID: sc.ID, Input: []byte(sc.ID)})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.runner.Run(ctx, run.ID); err != nil {
		t.Fatal(err)
	}
	if r := e.results(run.ID); len(r) != 1 || !r[0].IsError || !strings.Contains(r[0].Output, fault.SchedNotRunnable.ID()) {
		t.Errorf("cron_run from a schedule's run: %+v; want %s", r, fault.SchedNotRunnable.ID())
	}
	if _, err := k.Pause(ctx, d.Name, sc.ID, store.ActorPerson); err != nil {
		t.Fatal(err)
	}
	apiRun := e.start(d, sc.ID)
	if err := e.runner.Run(ctx, apiRun); err != nil {
		t.Fatal(err)
	}
	if r := e.results(apiRun); len(r) != 1 || !r[0].IsError || !strings.Contains(r[0].Output, fault.SchedNotRunnable.ID()) {
		t.Errorf("cron_run of a paused schedule: %+v; want %s", r, fault.SchedNotRunnable.ID())
	}
	if runs := scheduled(e, d.Name); len(runs) != 1 || runs[0] != run.ID {
		t.Errorf("runs with source schedule %v; want only %s", runs, run.ID)
	}
}

// TestScheduleToolsWhileFleetPaused: every schedule tool answers UZ-AGT-012
// while the fleet is paused.
func TestScheduleToolsWhileFleetPaused(t *testing.T) {
	t.Parallel()
	var k *keeper.Keeper
	e := newEnv(t, `
[[turn]]
[[turn.tool_call]]
name = "schedule_create"
arguments = { expression = "rate(1 day)", message = "m" }
[[turn.tool_call]]
name = "schedule_list"
[[turn.tool_call]]
name = "schedule_update"
arguments = { schedule_id = "{{input}}", paused = true }
[[turn.tool_call]]
name = "schedule_delete"
arguments = { schedule_id = "{{input}}" }
[[turn.tool_call]]
name = "cron_run"
arguments = { schedule_id = "{{input}}" }

[[turn]]
text = "done"
`, withSchedules(t, &k))
	d := e.fleet(scheduleDefinition)
	sc, err := k.Create(ctx, d.Name, store.ActorFleet, "run_0", keeper.Input{Expression: "rate(1 day)", Message: "daily"})
	if err != nil {
		t.Fatal(err)
	}
	runID := e.start(d, sc.ID)
	if _, err := e.store.PauseFleet(ctx, d.Name); err != nil {
		t.Fatal(err)
	}
	if err := e.runner.Run(ctx, runID); err != nil {
		t.Fatal(err)
	}
	r := e.results(runID)
	if len(r) != 5 {
		t.Fatalf("%d results, want 5: %+v", len(r), r)
	}
	for _, res := range r {
		if !res.IsError || !strings.Contains(res.Output, fault.FleetPaused.ID()) {
			t.Errorf("%s while paused: %q; want %s", res.Name, res.Output, fault.FleetPaused.ID())
		}
	}
	if got, _ := k.Get(ctx, d.Name, sc.ID); got.State != store.ScheduleActive {
		t.Errorf("schedule %s after refused changes", got.State)
	}
}

// TestScheduleToolsNotConfigured: without a ScheduleBook the tools say so.
func TestScheduleToolsNotConfigured(t *testing.T) {
	t.Parallel()
	e := newEnv(t, `
[[turn]]
[[turn.tool_call]]
name = "schedule_list"

[[turn]]
text = "done"
`)
	d := e.fleet(scheduleDefinition)
	runID := e.start(d, "x")
	if err := e.runner.Run(ctx, runID); err != nil {
		t.Fatal(err)
	}
	if r := e.results(runID); len(r) != 1 || !r[0].IsError || !strings.Contains(r[0].Output, "schedules are not configured here") {
		t.Errorf("schedule_list without schedules: %+v", r)
	}
}
