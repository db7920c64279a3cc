package runner

import (
	"context"
	"time"

	"github.com/agentsfleet/agentsfleet/shared/model"
	"github.com/agentsfleet/agentsfleet/shared/runner/control"
	"github.com/agentsfleet/agentsfleet/shared/store"
)

// ScheduleBook is what the runner needs of the fleets' schedules: every
// method acts as the fleet (store.ActorFleet), for the run calling it.
// Package schedule/keeper implements it over the store and EventBridge
// Scheduler; the runner does not import it (the keeper starts runs through
// Start). Errors carrying a product code (shared/fault) are answered to the
// model as error results; any other error is the environment failing.
type ScheduleBook interface {
	// CreateSchedule creates a schedule of fleet with source fleet,
	// created by the run runID.
	CreateSchedule(ctx context.Context, fleet, runID string, a control.ScheduleCreateArgs) (store.Schedule, error)
	// ListSchedules lists the fleet's schedules, people's and its own.
	ListSchedules(ctx context.Context, fleet string) ([]store.Schedule, error)
	// UpdateSchedule changes (or pauses, or resumes) a schedule.
	UpdateSchedule(ctx context.Context, fleet string, a control.ScheduleUpdateArgs) (store.Schedule, error)
	// DeleteSchedule deletes a schedule.
	DeleteSchedule(ctx context.Context, fleet, id string) error
	// RunSchedule starts a run of a schedule now (cron_run), refused when
	// callerRunID was itself started by a schedule. key names the call: a
	// retried step that repeats it gets the first run back.
	RunSchedule(ctx context.Context, fleet, id, callerRunID, key string) (store.Run, error)
	// ScheduleRunEnded hears that a run a schedule started has ended, with
	// what it spent. It is safe to call more than once for a run.
	ScheduleRunEnded(ctx context.Context, run store.Run) error
}

// schedules is control.Schedules for call number call of one execution's
// step, over the ScheduleBook, as the run's fleet.
type schedules struct {
	x    *execution
	call int
}

var _ control.Schedules = schedules{}

// schedules returns the schedule tools' backing for x, nil when the runner
// has no ScheduleBook (a nil interface, so that the tools are unbuilt).
func (x *execution) schedules(call int) control.Schedules {
	if x.r.cfg.Schedules == nil {
		return nil
	}
	return schedules{x: x, call: call}
}

func scheduleOf(sc store.Schedule) control.Schedule {
	return control.Schedule{ScheduleID: sc.ID, Source: string(sc.Source), State: string(sc.State), Expression: sc.Expression,
		Timezone: sc.Timezone, Message: sc.Message, PausedReason: sc.PausedReason}
}

func (s schedules) Create(ctx context.Context, a control.ScheduleCreateArgs) (control.Schedule, error) {
	sc, err := s.x.r.cfg.Schedules.CreateSchedule(ctx, s.x.run.Fleet, s.x.run.ID, a)
	return scheduleOf(sc), err
}

func (s schedules) List(ctx context.Context) ([]control.Schedule, error) {
	list, err := s.x.r.cfg.Schedules.ListSchedules(ctx, s.x.run.Fleet)
	out := make([]control.Schedule, len(list))
	for i, sc := range list {
		out[i] = scheduleOf(sc)
	}
	return out, err
}

func (s schedules) Update(ctx context.Context, a control.ScheduleUpdateArgs) (control.Schedule, error) {
	sc, err := s.x.r.cfg.Schedules.UpdateSchedule(ctx, s.x.run.Fleet, a)
	return scheduleOf(sc), err
}

func (s schedules) Delete(ctx context.Context, id string) error {
	return s.x.r.cfg.Schedules.DeleteSchedule(ctx, s.x.run.Fleet, id)
}

// Run starts the schedule's run, keyed by the call.
func (s schedules) Run(ctx context.Context, a control.CronRunArgs) (control.ScheduledRun, error) {
	key := s.x.idempotencyKey(s.call, model.ToolCall{Name: control.CronRunSpec.Name(), Arguments: mustJSON(a)})
	run, err := s.x.r.cfg.Schedules.RunSchedule(ctx, s.x.run.Fleet, a.ScheduleID, s.x.run.ID, key)
	return control.ScheduledRun{RunID: run.ID, Status: run.Status}, err
}

// scheduleRunEnded tells the ScheduleBook that a run a schedule started has
// ended, with what it spent (its children's spending included, as the store
// counts it). settle calls it; a failure is logged, not returned: the run
// has ended either way, and only the schedule's spend cap misses it.
func (x *execution) scheduleRunEnded(ctx context.Context) {
	if x.r.cfg.Schedules == nil || x.run.Source != store.SourceSchedule {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	run, err := x.r.cfg.Store.GetRun(ctx, x.run.ID)
	if err == nil {
		err = x.r.cfg.Schedules.ScheduleRunEnded(ctx, run)
	}
	if err != nil {
		x.r.log.Error("schedule spend not counted", "run_id", x.run.ID, "schedule_id", x.run.ScheduleID, "error", err)
	}
}
