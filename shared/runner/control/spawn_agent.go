package control

import (
	_ "embed"

	"github.com/agentsfleet/agentsfleet/shared/fault"
	"github.com/agentsfleet/agentsfleet/shared/limit"
	"github.com/agentsfleet/agentsfleet/shared/tool"
)

//go:embed spawn_agent.txt
var spawnAgentDescription string

// SpawnAgentArgs are the arguments of spawn_agent and delegate_agent: the
// child's task and what of its parent's it holds.
type SpawnAgentArgs struct {
	// Task is all the child starts from: it does not see the conversation.
	Task string `json:"task"`
	// Tools names the tools the child holds, each one its parent holds
	// (else child_tool_not_held); nil means every tool the parent holds.
	Tools []string `json:"tools,omitempty"`
	// Budget is the share of the run's budget the child may spend; nil
	// means the child spends from the run's budget with no share of its own.
	Budget *ChildBudget `json:"budget,omitempty"`
	// Secrets names the parent's secrets the child may use; nil means all
	// of them.
	Secrets []string `json:"secrets,omitempty"`
	// Hosts are entries of the parent's network host list the child may
	// reach; nil means the whole list.
	Hosts []string `json:"hosts,omitempty"`
}

// ChildBudget is a child's share of the run's budget. A zero field sets no
// share of that figure.
type ChildBudget struct {
	Tokens    int64 `json:"tokens,omitempty"`
	ToolCalls int   `json:"tool_calls,omitempty"`
}

// childRules are the rules of spawn_agent and delegate_agent. What the run
// has left of its budget, and whether the parent holds each tool, secret
// and host, is known only when the tool runs.
var childRules = tool.Rules{
	"task":              tool.NotBlank(),
	"budget.tokens":     tool.Min(1),
	"budget.tool_calls": tool.Min(1),
}

// childValues are the figures and codes the child-agent descriptions state.
var childValues = map[string]any{
	"MaxRunning":      limit.ChildrenRunning,
	"MaxTotal":        limit.ChildrenTotal,
	"MaxDepth":        limit.ChildDepth,
	"CapCode":         fault.ChildCapReached.ID(),
	"ToolNotHeldCode": fault.ChildToolNotHeld.ID(),
	"NotFoundCode":    fault.ChildNotFound.ID(),
}

// SpawnAgentSpec is spawn_agent: it starts a child agent on a task and
// answers its child_id at once (store.StartChild).
var SpawnAgentSpec = tool.DefineIn[SpawnAgentArgs](&contracts, tool.About{
	Name:        "spawn_agent",
	RunsIn:      tool.InRunner,
	Scope:       tool.ScopeAgents,
	Summary:     "Starts a child agent on a task and returns its child_id at once",
	Description: spawnAgentDescription,
	Rules:       childRules,
	Values:      childValues,
})
