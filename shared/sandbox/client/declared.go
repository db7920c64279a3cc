package client

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/agentsfleet/agentsfleet/shared/sandbox/wire"
	"github.com/agentsfleet/agentsfleet/shared/tool"
)

// CallDeclared runs a Definition's declared tool in the sandbox: sandboxd's
// wire.DeclaredTool with args (the tool's name, the Definition's command
// and the model's arguments, which must be a JSON object). It is Call in
// every other respect: the same key, tool timeout, errors and bounds.
func (c *Client) CallDeclared(ctx context.Context, args wire.DeclaredArgs, idempotencyKey string) (tool.Result, error) {
	if !wire.IsObject(args.Arguments) {
		return tool.Result{}, op{c: c, name: "call", tool: wire.DeclaredTool}.notSent(ErrBadRequest,
			fmt.Sprintf("the arguments of declared tool %s must be a JSON object", args.Name))
	}
	body, err := json.Marshal(args) // strings and an object that is valid JSON
	if err != nil {
		return tool.Result{}, op{c: c, name: "call", tool: wire.DeclaredTool}.notSent(ErrBadRequest, err.Error())
	}
	return c.Call(ctx, wire.DeclaredTool, body, idempotencyKey)
}
