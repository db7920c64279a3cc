package control

import (
	_ "embed"

	"github.com/agentsfleet/agentsfleet/shared/fault"
	"github.com/agentsfleet/agentsfleet/shared/tool"
)

//go:embed schedule_update.txt
var scheduleUpdateDescription string

// ScheduleUpdateArgs are schedule_update's arguments. A nil field leaves
// that part of the schedule as it is. That at least one is given spans the
// arguments, so the tool checks it when built.
type ScheduleUpdateArgs struct {
	ScheduleID string  `json:"schedule_id"`
	Expression *string `json:"expression,omitempty"`
	Message    *string `json:"message,omitempty"`
	Timezone   *string `json:"timezone,omitempty"`
	// Paused true pauses the schedule, false resumes it.
	Paused *bool `json:"paused,omitempty"`
}

// ScheduleUpdateSpec is schedule_update: it changes a schedule the fleet
// created (store.UpdateSchedule, PauseSchedule, ResumeSchedule as the
// fleet).
var ScheduleUpdateSpec = tool.DefineIn[ScheduleUpdateArgs](&contracts, tool.About{
	Name:        "schedule_update",
	RunsIn:      tool.InRunner,
	Scope:       tool.ScopeSchedule,
	Summary:     "Changes a schedule the fleet created",
	Description: scheduleUpdateDescription,
	Rules: tool.Rules{
		"schedule_id": tool.NotBlank(),
		"expression":  tool.NotBlank(),
		"message":     tool.NotBlank(),
		"timezone":    tool.NotBlank(),
	},
	Values: map[string]any{
		"PersonOwnsCode": fault.SchedPersonOwns.ID(),
		"NotFoundCode":   fault.SchedNotFound.ID(),
	},
})
