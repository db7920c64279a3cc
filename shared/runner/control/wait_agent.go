package control

import (
	_ "embed"

	"github.com/agentsfleet/agentsfleet/shared/tool"
)

//go:embed wait_agent.txt
var waitAgentDescription string

// The limits of wait_agent's timeout_seconds. The maximum keeps one call
// well inside a runner λ invocation, which the runner saves and re-invokes
// before its 15-minute deadline.
const (
	WaitDefaultTimeoutSeconds = 30  // when timeout_seconds is not given
	WaitMaxTimeoutSeconds     = 300 // a larger timeout_seconds waits this long
)

// WaitAgentArgs are wait_agent's arguments.
type WaitAgentArgs struct {
	ChildID string `json:"child_id"`
	// TimeoutSeconds is from 1 to WaitMaxTimeoutSeconds (a larger value is
	// taken as the maximum), WaitDefaultTimeoutSeconds when absent.
	TimeoutSeconds int `json:"timeout_seconds,omitempty"`
}

// WaitAgentSpec is wait_agent: it waits for a child agent to end, up to a
// timeout, and answers its status and, once it ended, its answer.
var WaitAgentSpec = tool.DefineIn[WaitAgentArgs](&contracts, tool.About{
	Name:        "wait_agent",
	RunsIn:      tool.InRunner,
	Scope:       tool.ScopeAgents,
	Summary:     "Waits for a child agent to finish and returns its answer",
	Description: waitAgentDescription,
	Rules: tool.Rules{
		"child_id":        tool.NotBlank(),
		"timeout_seconds": tool.Min(1).Max(WaitMaxTimeoutSeconds).Clamp().Default(WaitDefaultTimeoutSeconds),
	},
	Values: childValues,
})
