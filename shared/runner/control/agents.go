package control

import (
	"context"
	"encoding/json"

	"github.com/agentsfleet/agentsfleet/shared/tool"
)

// Agents does the work of the six child-agent tools for one agent of a run
// (the run's own agent, or a child): the runner implements it over the
// store. Each method gets arguments already checked against the tool's
// contract and answers the model with a Result; an error is the
// environment failing, not a mistake the model can fix.
type Agents interface {
	Spawn(ctx context.Context, args SpawnAgentArgs) (tool.Result, error)
	Delegate(ctx context.Context, args SpawnAgentArgs) (tool.Result, error)
	Wait(ctx context.Context, args WaitAgentArgs) (tool.Result, error)
	Inspect(ctx context.Context, args InspectAgentArgs) (tool.Result, error)
	List(ctx context.Context, args ListAgentsArgs) (tool.Result, error)
	Interrupt(ctx context.Context, args InterruptAgentArgs) (tool.Result, error)
}

// agentTools binds the child-agent specs to a.
func agentTools(a Agents) map[string]tool.Tool {
	return map[string]tool.Tool{
		SpawnAgentSpec.Name():     bind(SpawnAgentSpec, a.Spawn),
		DelegateAgentSpec.Name():  bind(DelegateAgentSpec, a.Delegate),
		WaitAgentSpec.Name():      bind(WaitAgentSpec, a.Wait),
		InspectAgentSpec.Name():   bind(InspectAgentSpec, a.Inspect),
		ListAgentsSpec.Name():     bind(ListAgentsSpec, a.List),
		InterruptAgentSpec.Name(): bind(InterruptAgentSpec, a.Interrupt),
	}
}

// bound is a tool whose Run decodes the arguments and hands them to run.
type bound[T any] struct {
	*tool.Def[T]
	run func(context.Context, T) (tool.Result, error)
}

func bind[T any](d *tool.Def[T], run func(context.Context, T) (tool.Result, error)) tool.Tool {
	return bound[T]{Def: d, run: run}
}

func (b bound[T]) Run(ctx context.Context, args json.RawMessage) (tool.Result, error) {
	v, res, ok := b.Decode(args)
	if !ok {
		return res, nil
	}
	return b.run(ctx, v)
}

// IsAgentTool reports whether name is one of the six child-agent tools,
// which a grandchild is never offered.
func IsAgentTool(name string) bool {
	switch name {
	case SpawnAgentSpec.Name(), DelegateAgentSpec.Name(), WaitAgentSpec.Name(),
		InspectAgentSpec.Name(), InterruptAgentSpec.Name(), ListAgentsSpec.Name():
		return true
	}
	return false
}
