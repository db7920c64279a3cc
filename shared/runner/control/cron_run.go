package control

import (
	_ "embed"

	"github.com/agentsfleet/agentsfleet/shared/fault"
	"github.com/agentsfleet/agentsfleet/shared/tool"
)

//go:embed cron_run.txt
var cronRunDescription string

// CronRunArgs are cron_run's arguments.
type CronRunArgs struct {
	ScheduleID string `json:"schedule_id"`
}

// CronRunSpec is cron_run: it starts a run of one of the fleet's schedules
// now, under store.ScheduleRunnable's rule.
var CronRunSpec = tool.DefineIn[CronRunArgs](&contracts, tool.About{
	Name:        "cron_run",
	RunsIn:      tool.InRunner,
	Scope:       tool.ScopeSchedule,
	Summary:     "Starts a run of one of the fleet's schedules now",
	Description: cronRunDescription,
	Rules:       tool.Rules{"schedule_id": tool.NotBlank()},
	Values: map[string]any{
		"NotRunnableCode": fault.SchedNotRunnable.ID(),
		"FleetPausedCode": fault.FleetPaused.ID(),
		"NotFoundCode":    fault.SchedNotFound.ID(),
	},
})
