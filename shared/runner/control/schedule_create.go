package control

import (
	_ "embed"

	"github.com/agentsfleet/agentsfleet/shared/fault"
	"github.com/agentsfleet/agentsfleet/shared/limit"
	"github.com/agentsfleet/agentsfleet/shared/tool"
)

//go:embed schedule_create.txt
var scheduleCreateDescription string

// DefaultTimezone is the time zone a schedule's expression is read in when
// none is given, as in EventBridge Scheduler and the store.
const DefaultTimezone = "UTC"

// ScheduleCreateArgs are schedule_create's arguments.
type ScheduleCreateArgs struct {
	// Expression is EventBridge Scheduler's cron(…), rate(…) or
	// at(yyyy-mm-ddThh:mm:ss).
	Expression string `json:"expression"`
	// Message is the input of each run the schedule starts.
	Message string `json:"message"`
	// Timezone is an IANA time zone; DefaultTimezone when absent.
	Timezone string `json:"timezone,omitempty"`
}

// ScheduleCreateSpec is schedule_create: it creates a schedule of the
// fleet, source fleet, and answers its schedule_id. The expression's form
// and the time zone are the store's to check (store.CreateSchedule).
var ScheduleCreateSpec = tool.DefineIn[ScheduleCreateArgs](&contracts, tool.About{
	Name:        "schedule_create",
	RunsIn:      tool.InRunner,
	Scope:       tool.ScopeSchedule,
	Summary:     "Creates a schedule for a later run of this fleet",
	Description: scheduleCreateDescription,
	Rules: tool.Rules{
		"expression": tool.NotBlank(),
		"message":    tool.NotBlank(),
		"timezone":   tool.NotBlank().Default(DefaultTimezone),
	},
	Values: map[string]any{
		"MaxSchedules":      limit.Schedules,
		"MaxFleetSchedules": limit.FleetSchedules,
		"FleetCapCode":      fault.SchedFleetCap.ID(),
		"TotalCapCode":      fault.SchedTotalCap.ID(),
	},
})
