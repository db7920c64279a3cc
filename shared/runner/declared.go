package runner

import (
	"bytes"
	"context"
	"encoding/json"

	"github.com/agentsfleet/agentsfleet/shared/fleet"
	"github.com/agentsfleet/agentsfleet/shared/model"
	"github.com/agentsfleet/agentsfleet/shared/sandbox/launch"
	"github.com/agentsfleet/agentsfleet/shared/sandbox/wire"
	"github.com/agentsfleet/agentsfleet/shared/tool"
	"github.com/agentsfleet/agentsfleet/shared/toolbox"
)

// declaredEntry is the catalog entry of def's declared tool name, made
// from its declaration; false when def declares no such tool.
func declaredEntry(def *fleet.Definition, name string) (toolbox.Entry, bool, error) {
	t, ok := def.Declared(name)
	if !ok {
		return toolbox.Entry{}, false, nil
	}
	spec, err := t.Spec()
	if err != nil {
		return toolbox.Entry{}, true, err
	}
	return toolbox.Entry{Info: spec.Info(), Spec: spec}, true, nil
}

// sandboxSend sends call i of the step to sb: a declared tool as sandboxd's
// declared tool, with the command from the run's Definition (never from
// the model), any other tool by its name.
func (x *execution) sandboxSend(ctx context.Context, sb *launch.Sandbox, i int, call model.ToolCall) (tool.Result, error) {
	key := x.idempotencyKey(i, call)
	t, ok := x.def.Declared(call.Name)
	if !ok {
		return sb.Client.Call(ctx, call.Name, call.Arguments, key)
	}
	args := call.Arguments
	if len(bytes.TrimSpace(args)) == 0 {
		args = json.RawMessage("{}")
	}
	return sb.Client.CallDeclared(ctx, wire.DeclaredArgs{Name: t.Name, Command: t.Command, Arguments: args}, key)
}
