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

// Tools returns the control tools of one agent of a run, sorted by name.
// update_plan hands each plan it accepts to plan, which keeps it on the
// run; the child-agent tools do their work through agents, the schedule
// tools and cron_run through schedules, message through messages. With agents or schedules nil, and
// for the tools not built yet, each is tool.Unbuilt, whose Run checks the
// arguments as the real tool will, then answers with an error result saying
// why it is not available. Safe for concurrent use.
func Tools(plan func(UpdatePlanArgs), agents Agents, schedules Schedules, messages Messenger) []tool.Tool {
	specs := Specs()
	tools := make([]tool.Tool, len(specs))
	var kids, scheds map[string]tool.Tool
	if agents != nil {
		kids = agentTools(agents)
	}
	if schedules != nil {
		scheds = scheduleTools(schedules)
	}
	for i, s := range specs {
		switch {
		case s.Name() == UpdatePlanSpec.Name():
			tools[i] = NewUpdatePlan(plan)
		case s.Name() == MessageSpec.Name() && messages != nil:
			tools[i] = bind(MessageSpec, messages.Message)
		case s.Name() == MessageSpec.Name():
			tools[i] = tool.Unbuilt(s, messageNotBuilt)
		case IsAgentTool(s.Name()) && kids != nil:
			tools[i] = kids[s.Name()]
		case IsAgentTool(s.Name()):
			tools[i] = tool.Unbuilt(s, childNotBuilt)
		case IsScheduleTool(s.Name()) && scheds != nil:
			tools[i] = scheds[s.Name()]
		default:
			tools[i] = tool.Unbuilt(s, scheduleNotBuilt)
		}
	}
	return tools
}
