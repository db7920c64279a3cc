package control

import (
	_ "embed"

	"github.com/agentsfleet/agentsfleet/shared/tool"
)

//go:embed list_agents.txt
var listAgentsDescription string

// ListAgentsArgs are list_agents' arguments: none.
type ListAgentsArgs struct{}

// ListAgentsSpec is list_agents: it lists the run's child agents and their
// statuses.
var ListAgentsSpec = tool.DefineIn[ListAgentsArgs](&contracts, tool.About{
	Name:        "list_agents",
	RunsIn:      tool.InRunner,
	Scope:       tool.ScopeAgents,
	Summary:     "Lists the run's child agents and their statuses",
	Description: listAgentsDescription,
	Values:      childValues,
})
