package control

import (
	_ "embed"

	"github.com/agentsfleet/agentsfleet/shared/tool"
)

//go:embed interrupt_agent.txt
var interruptAgentDescription string

// InterruptAgentArgs are interrupt_agent's arguments.
type InterruptAgentArgs struct {
	ChildID string `json:"child_id"`
}

// InterruptAgentSpec is interrupt_agent: it stops a working child agent,
// which ends interrupted.
var InterruptAgentSpec = tool.DefineIn[InterruptAgentArgs](&contracts, tool.About{
	Name:        "interrupt_agent",
	RunsIn:      tool.InRunner,
	Scope:       tool.ScopeAgents,
	Summary:     "Stops a working child agent",
	Description: interruptAgentDescription,
	Rules:       tool.Rules{"child_id": tool.NotBlank()},
	Values:      childValues,
})
