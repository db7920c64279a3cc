package control

import (
	"slices"
	"strings"

	"github.com/agentsfleet/agentsfleet/shared/tool"
)

// notBuilt is why Tools' tools do not run yet.
const notBuilt = "the runner's control tools come with the runner, which is not built yet"

// Specs returns the specs of the 13 control tools, sorted by name. The
// specs are shared and immutable; the caller owns the slice.
func Specs() []tool.Spec {
	specs := []tool.Spec{
		CronRunSpec,
		DelegateAgentSpec,
		InspectAgentSpec,
		InterruptAgentSpec,
		ListAgentsSpec,
		MessageSpec,
		ScheduleCreateSpec,
		ScheduleDeleteSpec,
		ScheduleListSpec,
		ScheduleUpdateSpec,
		SpawnAgentSpec,
		UpdatePlanSpec,
		WaitAgentSpec,
	}
	slices.SortFunc(specs, func(a, b tool.Spec) int { return strings.Compare(a.Name(), b.Name()) })
	return specs
}

// Tools returns the control tools, sorted by name. Until the runner is
// built each is tool.Unbuilt: Run checks the arguments as the real tool
// will, then answers with an error result saying that the tool is not
// available in this version of agentsfleet. Run never returns a Go error.
// Safe for concurrent use.
func Tools() []tool.Tool {
	specs := Specs()
	tools := make([]tool.Tool, len(specs))
	for i, s := range specs {
		tools[i] = tool.Unbuilt(s, notBuilt)
	}
	return tools
}
