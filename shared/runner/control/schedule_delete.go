package control

import (
	_ "embed"

	"github.com/agentsfleet/agentsfleet/shared/fault"
	"github.com/agentsfleet/agentsfleet/shared/limit"
	"github.com/agentsfleet/agentsfleet/shared/tool"
)

//go:embed schedule_delete.txt
var scheduleDeleteDescription string

// ScheduleDeleteArgs are schedule_delete's arguments.
type ScheduleDeleteArgs struct {
	ScheduleID string `json:"schedule_id"`
}

// ScheduleDeleteSpec is schedule_delete: it deletes a schedule the fleet
// created (store.DeleteSchedule as the fleet).
var ScheduleDeleteSpec = tool.DefineIn[ScheduleDeleteArgs](&contracts, tool.About{
	Name:        "schedule_delete",
	RunsIn:      tool.InRunner,
	Scope:       tool.ScopeSchedule,
	Summary:     "Deletes a schedule the fleet created",
	Description: scheduleDeleteDescription,
	Rules:       tool.Rules{"schedule_id": tool.NotBlank()},
	Values: map[string]any{
		"MaxFleetSchedules": limit.FleetSchedules,
		"PersonOwnsCode":    fault.SchedPersonOwns.ID(),
		"NotFoundCode":      fault.SchedNotFound.ID(),
	},
})
