package wire

import "encoding/json"

// The two Request.Tool values of MCP servers ([[x-agentsfleet.mcp]]). They
// are not model tools: the runner sends them for the model's
// mcp__<server>__<tool> calls, and webtools reaches the server named in
// the arguments through the egress policy, the fleet's network host list
// and the credential firewall (the server's «secret:NAME» headers are
// filled only toward its own host). With Grants, webtools takes the
// server's URL and headers from the run's pinned Definition by name; only a
// Service without Grants (tests, `webtools call`) reads Request.MCP.
const (
	// ToolMCPList lists a server's tools. Arguments: MCPListArgs. The
	// answer's output is the JSON array of its tools ([]MCPTool), or an
	// error Result saying why the server could not be listed.
	//
	//	{"tool": "mcp_list", "arguments": {"server": "docs"}, "run_id": "run_01J…"}
	//	→ {"output": "[{\"name\":\"search\",\"description\":\"…\",\"input_schema\":{…}}]", "is_error": false}
	ToolMCPList = "mcp_list"
	// ToolMCPCall calls one tool of a server. Arguments: MCPCallArgs. The
	// answer is the tool's result as the model sees it: its text fenced as
	// untrusted content from the server, screened for the fleet's secret
	// values, an error Result when the tool failed (isError) or the server
	// could not be reached. A tool the server no longer has is an error
	// Result whose output starts with MCPUnknownTool.
	//
	//	{"tool": "mcp_call", "arguments": {"server": "docs", "tool": "search", "arguments": {"q": "lambda"}}, "run_id": "run_01J…"}
	ToolMCPCall = "mcp_call"
)

// MCPUnknownTool starts the output of a ToolMCPCall answer for a tool the
// server does not have (any more): the runner lists the server again.
const MCPUnknownTool = "mcp: unknown tool: "

// MCPListArgs are ToolMCPList's arguments.
type MCPListArgs struct {
	Server string `json:"server"`
}

// MCPCallArgs are ToolMCPCall's arguments: the server, the tool's name on
// the server, and the model's arguments object.
type MCPCallArgs struct {
	Server    string          `json:"server"`
	Tool      string          `json:"tool"`
	Arguments json.RawMessage `json:"arguments,omitempty"`
}

// MCPTool is one tool in a ToolMCPList answer.
type MCPTool struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	InputSchema json.RawMessage `json:"input_schema"`
}

// MCPServer is a server as a Service without Grants takes it from
// Request.MCP: its name, URL and headers (references, never values).
type MCPServer struct {
	Name    string            `json:"name"`
	URL     string            `json:"url"`
	Headers map[string]string `json:"headers,omitempty"`
}
