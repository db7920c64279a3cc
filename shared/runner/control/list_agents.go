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
var ListAgentsSpec = tool.Define[ListAgentsArgs](tool.About{
	Name:        "list_agents",
	Description: listAgentsDescription,
	Values:      childValues,
})
