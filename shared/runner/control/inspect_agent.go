package control

import (
	_ "embed"

	"github.com/agentsfleet/agentsfleet/shared/tool"
)

//go:embed inspect_agent.txt
var inspectAgentDescription string

// InspectAgentArgs are inspect_agent's arguments.
type InspectAgentArgs struct {
	ChildID string `json:"child_id"`
}

// InspectAgentSpec is inspect_agent: it reports a child agent's status and
// progress without waiting.
var InspectAgentSpec = tool.DefineIn[InspectAgentArgs](&contracts, tool.About{
	Name:        "inspect_agent",
	RunsIn:      tool.InRunner,
	Scope:       tool.ScopeAgents,
	Summary:     "Reports a child agent's status and progress",
	Description: inspectAgentDescription,
	Rules:       tool.Rules{"child_id": tool.NotBlank()},
	Values:      childValues,
})
