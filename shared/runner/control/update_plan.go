package control

import (
	"context"
	_ "embed"
	"encoding/json"
	"strconv"
	"strings"

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
// one step is in_progress spans the items, so UpdatePlan's Run checks it.
var UpdatePlanSpec = tool.DefineIn[UpdatePlanArgs](&contracts, tool.About{
	Name:        "update_plan",
	RunsIn:      tool.InRunner,
	Scope:       tool.ScopeControl,
	Summary:     "Records the plan's steps, shown in the thread",
	Description: updatePlanDescription,
	Rules: tool.Rules{
		"plan.step":   tool.NotBlank(),
		"plan.status": tool.OneOf(StepPending, StepInProgress, StepCompleted),
	},
})

// UpdatePlan is the update_plan tool of one run. Safe for concurrent use
// when its record function is.
type UpdatePlan struct {
	*tool.Def[UpdatePlanArgs]
	record func(UpdatePlanArgs)
}

var _ tool.Tool = (*UpdatePlan)(nil)

// NewUpdatePlan returns update_plan handing each plan it accepts to record.
func NewUpdatePlan(record func(UpdatePlanArgs)) *UpdatePlan {
	return &UpdatePlan{Def: UpdatePlanSpec, record: record}
}

// Run checks the plan (its arguments, at least one step, at most one in
// progress), records it and answers "Plan updated", as Codex's does. A plan
// that breaks a rule is an error result and is not recorded.
func (t *UpdatePlan) Run(_ context.Context, raw json.RawMessage) (tool.Result, error) {
	args, res, ok := t.Decode(raw)
	if !ok {
		return res, nil
	}
	if len(args.Plan) == 0 {
		return t.Refuse("plan", "must hold at least one step"), nil
	}
	var busy []string
	for i, s := range args.Plan {
		if s.Status == StepInProgress {
			busy = append(busy, strconv.Itoa(i+1))
		}
	}
	if len(busy) > 1 {
		return t.Refuse("plan", "may have at most one step in_progress, not %d (steps %s); mark the others pending or completed", len(busy), strings.Join(busy, ", ")), nil
	}
	if t.record != nil {
		t.record(args)
	}
	return tool.Text("Plan updated"), nil
}

func init() {
	implement(UpdatePlanSpec, implementation{build: func(c Caller) tool.Tool { return NewUpdatePlan(c.Plan) }})
}
