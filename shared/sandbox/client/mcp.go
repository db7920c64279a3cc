package client

import (
	"context"
	"encoding/json"

	"github.com/agentsfleet/agentsfleet/shared/sandbox/wire"
	"github.com/agentsfleet/agentsfleet/shared/tool"
)

// MCPStdioList lists the tools of a Definition's stdio MCP server in the
// sandbox (sandboxd's wire.MCPStdioList), starting it there when it is not
// running. It is Call in every other respect.
func (c *Client) MCPStdioList(ctx context.Context, args wire.MCPStdioListArgs) (tool.Result, error) {
	body, err := json.Marshal(args) // strings only: cannot fail
	if err != nil {
		return tool.Result{}, op{c: c, name: "call", tool: wire.MCPStdioList}.notSent(ErrBadRequest, err.Error())
	}
	return c.Call(ctx, wire.MCPStdioList, body, "")
}

// MCPStdioCall calls a tool of a Definition's stdio MCP server in the
// sandbox (sandboxd's wire.MCPStdioCall). args.Arguments must be a JSON
// object, or empty. It is Call in every other respect: the same key, tool
// timeout, errors and bounds.
func (c *Client) MCPStdioCall(ctx context.Context, args wire.MCPStdioCallArgs, idempotencyKey string) (tool.Result, error) {
	if len(args.Arguments) > 0 && !wire.IsObject(args.Arguments) {
		return tool.Result{}, op{c: c, name: "call", tool: wire.MCPStdioCall}.notSent(ErrBadRequest,
			"the arguments of MCP tool "+args.Tool+" must be a JSON object")
	}
	body, err := json.Marshal(args)
	if err != nil {
		return tool.Result{}, op{c: c, name: "call", tool: wire.MCPStdioCall}.notSent(ErrBadRequest, err.Error())
	}
	return c.Call(ctx, wire.MCPStdioCall, body, idempotencyKey)
}
