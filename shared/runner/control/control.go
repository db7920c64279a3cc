package control

import (
	"github.com/agentsfleet/agentsfleet/shared/tool"
)

// Why the tools that are not built yet do not run, by tool.
const (
	messageNotBuilt  = "message posts to the run's Slack thread, and this caller has no way to post"
	scheduleNotBuilt = "schedules are not configured here: this caller keeps no schedules, so the schedule tools and cron_run cannot run"
	childNotBuilt    = "child agents need the runner, which runs them; this caller has none"
)

// contracts gathers the contracts of this package as each is defined
// (tool.DefineIn): a tool's contract file is the one place that lists it.
var contracts tool.Set

// Specs returns the specs of the 13 control tools, sorted by name, each
// carrying its place (tool.InRunner) and scope. The specs are shared and
// immutable; the caller owns the slice.
func Specs() []tool.Spec { return contracts.Specs() }
