package control

import (
	"context"
	"errors"
	"fmt"

	"github.com/agentsfleet/agentsfleet/shared/fault"
	"github.com/agentsfleet/agentsfleet/shared/run"
	"github.com/agentsfleet/agentsfleet/shared/tool"
)

// Schedules is what the four schedule tools and cron_run need of the
// runner, for one call of one agent of a run, acting as the fleet
// (store.ActorFleet): the runner implements it over its ScheduleBook. Each
// method gets arguments already checked against the tool's contract (for
// schedule_update: at least one change given). An error carrying a product
// code (UZ-SCHED-009, UZ-AGT-012, …) is answered to the model as an error
// result; any other error is the environment failing.
type Schedules interface {
	Create(ctx context.Context, args ScheduleCreateArgs) (Schedule, error)
	List(ctx context.Context) ([]Schedule, error)
	Update(ctx context.Context, args ScheduleUpdateArgs) (Schedule, error)
	Delete(ctx context.Context, id string) error
	// Run starts a run of the schedule now; a retried step that repeats
	// the call gets the first run back.
	Run(ctx context.Context, args CronRunArgs) (ScheduledRun, error)
}

// Schedule is a schedule of the fleet, as the tools answer it (JSON).
type Schedule struct {
	ScheduleID   string `json:"schedule_id"`
	Source       string `json:"source"`
	State        string `json:"state"`
	Expression   string `json:"expression"`
	Timezone     string `json:"timezone"`
	Message      string `json:"message"`
	PausedReason string `json:"paused_reason,omitempty"`
}

// ScheduledRun is the run cron_run started.
type ScheduledRun struct {
	RunID  string
	Status run.Status
}

// IsScheduleTool reports whether name is one of the schedule tools or
// cron_run.
func IsScheduleTool(name string) bool {
	switch name {
	case ScheduleCreateSpec.Name(), ScheduleListSpec.Name(), ScheduleUpdateSpec.Name(),
		ScheduleDeleteSpec.Name(), CronRunSpec.Name():
		return true
	}
	return false
}

func init() {
	schedules := func(spec tool.Spec, run func(Schedules) tool.Tool) {
		implement(spec, implementation{unbuilt: scheduleNotBuilt, build: func(c Caller) tool.Tool {
			if c.Schedules == nil {
				return nil
			}
			return run(c.Schedules)
		}})
	}
	schedules(ScheduleCreateSpec, func(s Schedules) tool.Tool { return bind(ScheduleCreateSpec, book{s}.create) })
	schedules(ScheduleListSpec, func(s Schedules) tool.Tool { return bind(ScheduleListSpec, book{s}.list) })
	schedules(ScheduleUpdateSpec, func(s Schedules) tool.Tool { return bind(ScheduleUpdateSpec, book{s}.update) })
	schedules(ScheduleDeleteSpec, func(s Schedules) tool.Tool { return bind(ScheduleDeleteSpec, book{s}.delete) })
	schedules(CronRunSpec, func(s Schedules) tool.Tool { return bind(CronRunSpec, book{s}.run) })
}

// book is the schedule tools of one caller.
type book struct{ s Schedules }

func (b book) create(ctx context.Context, a ScheduleCreateArgs) (tool.Result, error) {
	sc, err := b.s.Create(ctx, a)
	if err != nil {
		return bookError(ScheduleCreateSpec.Name(), err)
	}
	return jsonResult(sc), nil
}

func (b book) list(ctx context.Context, _ ScheduleListArgs) (tool.Result, error) {
	list, err := b.s.List(ctx)
	if err != nil {
		return bookError(ScheduleListSpec.Name(), err)
	}
	if list == nil {
		list = []Schedule{}
	}
	return jsonResult(struct {
		Schedules []Schedule `json:"schedules"`
	}{list}), nil
}

func (b book) update(ctx context.Context, a ScheduleUpdateArgs) (tool.Result, error) {
	if a.Expression == nil && a.Message == nil && a.Timezone == nil && a.Paused == nil {
		return tool.Errorf("schedule_update: give schedule_id and at least one of expression, message, timezone or paused"), nil
	}
	sc, err := b.s.Update(ctx, a)
	if err != nil {
		return bookError(ScheduleUpdateSpec.Name(), err)
	}
	return jsonResult(sc), nil
}

func (b book) delete(ctx context.Context, a ScheduleDeleteArgs) (tool.Result, error) {
	if err := b.s.Delete(ctx, a.ScheduleID); err != nil {
		return bookError(ScheduleDeleteSpec.Name(), err)
	}
	return jsonResult(struct {
		ScheduleID string `json:"schedule_id"`
		Deleted    bool   `json:"deleted"`
	}{a.ScheduleID, true}), nil
}

func (b book) run(ctx context.Context, a CronRunArgs) (tool.Result, error) {
	r, err := b.s.Run(ctx, a)
	if err != nil {
		return bookError(CronRunSpec.Name(), err)
	}
	return jsonResult(struct {
		RunID      string     `json:"run_id"`
		ScheduleID string     `json:"schedule_id"`
		Status     run.Status `json:"status"`
	}{r.RunID, a.ScheduleID, r.Status}), nil
}

// bookError turns the book's error into what the model sees: a product
// code is an error result naming it (and only the code's message, not the
// trace around it); anything else is the environment failing.
func bookError(name string, err error) (tool.Result, error) {
	var fe *fault.Error
	if errors.As(err, &fe) {
		return tool.Errorf("%s: %v", name, fe), nil
	}
	if c, ok := fault.CodeOf(err); ok {
		return tool.Errorf("%s: %v", name, c), nil
	}
	return tool.Result{}, fmt.Errorf("%s: %w", name, err)
}
