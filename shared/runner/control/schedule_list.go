package control

import (
	_ "embed"

	"github.com/agentsfleet/agentsfleet/shared/limit"
	"github.com/agentsfleet/agentsfleet/shared/tool"
)

//go:embed schedule_list.txt
var scheduleListDescription string

// ScheduleListArgs are schedule_list's arguments: none.
type ScheduleListArgs struct{}

// ScheduleListSpec is schedule_list: it lists the fleet's schedules, those
// of people and of the fleet together.
var ScheduleListSpec = tool.DefineIn[ScheduleListArgs](&contracts, tool.About{
	Name:        "schedule_list",
	RunsIn:      tool.InRunner,
	Scope:       tool.ScopeSchedule,
	Summary:     "Lists the fleet's schedules",
	Description: scheduleListDescription,
	Values: map[string]any{
		"MaxSchedules":      limit.Schedules,
		"MaxFleetSchedules": limit.FleetSchedules,
	},
})
