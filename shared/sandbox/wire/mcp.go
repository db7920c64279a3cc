package wire

import "encoding/json"

// A Definition's stdio MCP servers ([[x-agentsfleet.mcp]] with a command)
// run in the sandbox, one long-lived confined process per server, and are
// reached through two tools of sandboxd's own, which the runner calls and
// the model never sees (they are in no catalog and no Definition can allow
// them):
//
//	POST ToolPath(MCPStdioList)   body: MCPStdioListArgs
//	                              → 200 a tool.Result: the JSON array of the
//	                                server's tools ([]MCPTool), or an error
//	POST ToolPath(MCPStdioCall)   body: MCPStdioCallArgs
//	                              → 200 a tool.Result: the tool's content as
//	                                text, is_error as the server flagged it
//
// as any tool call, with the same headers (the tool timeout bounds each:
// a server that does not answer within it is an error result, and is
// stopped) and the same answers. The command comes from the Definition
// (the runner sends it), never from the model. sandboxd starts the server
// on the first call that names it, under bash's confinement (the same
// policy, uid, roots, seccomp filter, environment and workdir), and keeps
// it until the sandbox stops; a call naming the server with another
// command stops the old process and starts the new one. A server that has
// exited is started again by the next call, which says so; a call that
// finds it exiting answers an error naming its exit and the end of its
// standard error (kept bounded, MCPStderrTail). A call to a tool the
// server does not have answers an error starting MCPUnknownTool.
//
// The text is the server's, not screened nor fenced: the runner screens it
// for the fleet's secret values and fences it as untrusted, as it does the
// remote servers' results.
const (
	// MCPStdioList is sandboxd's tool that lists a stdio server's tools.
	MCPStdioList = "mcp_stdio_list"
	// MCPStdioCall is sandboxd's tool that calls one of them.
	MCPStdioCall = "mcp_stdio_call"
	// MCPUnknownTool starts the error of a call to a tool the server does
	// not have (any more): the runner lists the server again.
	MCPUnknownTool = "mcp: unknown tool: "
	// MCPStderrTail is how much of the end of a server's standard error an
	// error quotes, in bytes.
	MCPStderrTail = 2048
	// MaxMCPResult bounds a call's text, in bytes: past it the text is cut
	// and says so.
	MaxMCPResult = 1 << 20
)

// MCPStdioListArgs are the arguments of MCPStdioList.
type MCPStdioListArgs struct {
	// Server is the server's name in the Definition.
	Server string `json:"server"`
	// Command is its program and arguments, from the Definition.
	Command []string `json:"command"`
}

// MCPStdioCallArgs are the arguments of MCPStdioCall.
type MCPStdioCallArgs struct {
	Server  string   `json:"server"`
	Command []string `json:"command"`
	// Tool is the tool's name on the server (not mcp__<server>__<tool>).
	Tool string `json:"tool"`
	// Arguments are the model's arguments: a JSON object, or absent.
	Arguments json.RawMessage `json:"arguments,omitempty"`
}

// MCPTool is one tool a server lists, as MCPStdioList answers it: the
// shape of the web tools' wire.MCPTool, which the runner reads for both.
type MCPTool struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	InputSchema json.RawMessage `json:"input_schema"`
}
