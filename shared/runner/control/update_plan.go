package control

import (
	_ "embed"

	"github.com/agentsfleet/agentsfleet/shared/tool"
)

//go:embed update_plan.txt
var updatePlanDescription string

// The statuses of a plan step.
const (
	StepPending    = "pending"
	StepInProgress = "in_progress"
	StepCompleted  = "completed"
)

// UpdatePlanArgs are update_plan's arguments.
type UpdatePlanArgs struct {
	// Explanation says why the plan changed; optional.
	Explanation string `json:"explanation,omitempty"`
	// Plan is every step, in order; each call replaces the whole plan.
	Plan []PlanStep `json:"plan"`
}

// PlanStep is one step of a plan.
type PlanStep struct {
	Step   string `json:"step"`
	Status string `json:"status"` // StepPending, StepInProgress or StepCompleted
}

// UpdatePlanSpec is update_plan: it records the plan's steps, which the
// thread shows as one Slack message edited in place. The rule that at most
// one step is in_progress spans the items, so the tool checks it when built.
var UpdatePlanSpec = tool.Define[UpdatePlanArgs](tool.About{
	Name:        "update_plan",
	Description: updatePlanDescription,
	Rules: tool.Rules{
		"plan.step":   tool.NotBlank(),
		"plan.status": tool.OneOf(StepPending, StepInProgress, StepCompleted),
	},
})
