package control

import (
	_ "embed"

	"github.com/agentsfleet/agentsfleet/shared/tool"
)

//go:embed delegate_agent.txt
var delegateAgentDescription string

// DelegateAgentArgs are delegate_agent's arguments, those of spawn_agent.
type DelegateAgentArgs = SpawnAgentArgs

// DelegateAgentSpec is delegate_agent: it starts a child agent on a task,
// as spawn_agent does, and waits for it to end.
var DelegateAgentSpec = tool.DefineIn[DelegateAgentArgs](&contracts, tool.About{
	Name:        "delegate_agent",
	RunsIn:      tool.InRunner,
	Scope:       tool.ScopeAgents,
	Summary:     "Starts a child agent on a task and waits for its answer",
	Description: delegateAgentDescription,
	Rules:       childRules,
	Values:      childValues,
})
