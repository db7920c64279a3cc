package control

import (
	"slices"
	"strings"

	"github.com/agentsfleet/agentsfleet/shared/tool"
)

// Why the tools that are not built yet do not run, by tool.
const (
	messageNotBuilt  = "message posts to the run's Slack thread, and this caller has no way to post"
	scheduleNotBuilt = "schedules are not configured here: this caller keeps no schedules, so the schedule tools and cron_run cannot run"
	childNotBuilt    = "child agents need the runner, which runs them; this caller has none"
)

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
