package control

import (
	"context"

	"github.com/agentsfleet/agentsfleet/shared/tool"
)

// Schedules does the work of the four schedule tools and cron_run for one
// agent of a run, as the fleet (store.ActorFleet): the runner implements
// it over its ScheduleBook. Each method gets arguments already checked
// against the tool's contract (for schedule_update: at least one change
// given) and answers the model with a Result; a product code (UZ-SCHED-009,
// UZ-AGT-012, …) is an error Result, and an error is the environment
// failing, not a mistake the model can fix.
type Schedules interface {
	Create(ctx context.Context, args ScheduleCreateArgs) (tool.Result, error)
	List(ctx context.Context, args ScheduleListArgs) (tool.Result, error)
	Update(ctx context.Context, args ScheduleUpdateArgs) (tool.Result, error)
	Delete(ctx context.Context, args ScheduleDeleteArgs) (tool.Result, error)
	Run(ctx context.Context, args CronRunArgs) (tool.Result, error)
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

// scheduleTools binds the schedule specs to s.
func scheduleTools(s Schedules) map[string]tool.Tool {
	return map[string]tool.Tool{
		ScheduleCreateSpec.Name(): bind(ScheduleCreateSpec, s.Create),
		ScheduleListSpec.Name():   bind(ScheduleListSpec, s.List),
		ScheduleUpdateSpec.Name(): bind(ScheduleUpdateSpec, func(ctx context.Context, a ScheduleUpdateArgs) (tool.Result, error) {
			if a.Expression == nil && a.Message == nil && a.Timezone == nil && a.Paused == nil {
				return tool.Errorf("schedule_update: give schedule_id and at least one of expression, message, timezone or paused"), nil
			}
			return s.Update(ctx, a)
		}),
		ScheduleDeleteSpec.Name(): bind(ScheduleDeleteSpec, s.Delete),
		CronRunSpec.Name():        bind(CronRunSpec, s.Run),
	}
}
