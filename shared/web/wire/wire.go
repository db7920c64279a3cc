// Package wire is the webtools function's payload: the Request the
// runner (and the schedule function, to scrub a message) sends it, whose
// answer is a tool.Result. It imports nothing heavy, so that its callers do
// not link the web tools' HTML stack.
package wire

import "encoding/json"

// Request is one web tool call, as the runner sends it to the webtools λ
// (the Lambda invocation payload) and as local callers pass it to
// web.Service.Call. With tool.Result, the λ's response payload
// ({"output": "…", "is_error": false}), it is the only wire shape of the
// webtools λ:
//
//	{"tool": "http_request",
//	 "arguments": {"method": "GET", "url": "https://api.github.com/user",
//	               "headers": {"Authorization": "Bearer «secret:GITHUB_TOKEN»"}},
//	 "hosts": ["api.github.com", "https://hooks.slack.com/services"],
//	 "secrets": {"GITHUB_TOKEN": "agentsfleet/acme/github-token"},
//	 "run_id": "run_01J…", "fleet": "acme-triage"}
type Request struct {
	// Tool is the tool name: webfetch, websearch, web_fetch, http_request
	// or pushover; or ToolScrub ("scrub"), which sends nothing and answers
	// Arguments' text with the values of Secrets replaced by «secret:NAME»
	// (see ToolScrub).
	Tool string `json:"tool"`
	// Arguments is the model's JSON arguments object, passed through as is.
	Arguments json.RawMessage `json:"arguments"`
	// Hosts is the fleet's network host list from its Definition: host
	// names or URLs, of which only the host counts (any port). Only a
	// Service without Grants (tests, `webtools call`) takes it from here.
	Hosts []string `json:"hosts,omitempty"`
	// Secrets maps the fleet's secret names (as in «secret:NAME») to AWS
	// Secrets Manager secret ids (names or ARNs). Never values. Like Hosts,
	// only a Service without Grants takes it from here.
	Secrets map[string]string `json:"secrets,omitempty"`
	// RunID and Fleet identify the call; ChildID the child agent making it
	// ("" for the run's own agent). A deployment's webtools function reads
	// what the agent holds (tools, hosts, secret ids) from the run's pinned
	// Definition by these ids, and ignores Hosts and Secrets.
	RunID   string `json:"run_id,omitempty"`
	ChildID string `json:"child_id,omitempty"`
	Fleet   string `json:"fleet,omitempty"`
	// MCP is the fleet's MCP servers, for ToolMCPList and ToolMCPCall;
	// like Hosts, only a Service without Grants takes it from here.
	MCP []MCPServer `json:"mcp,omitempty"`
	// TimeoutSeconds is the fleet's tool timeout, which bounds an MCP
	// request; like Hosts, only a Service without Grants takes it from
	// here (0: the Service's own).
	TimeoutSeconds int `json:"timeout_seconds,omitempty"`
}

// Tool names.
const (
	ToolWebFetch    = "webfetch"
	ToolWebSearch   = "websearch"
	ToolWebFetchTLS = "web_fetch"
	ToolHTTPRequest = "http_request"
	ToolPushover    = "pushover"
)

// ToolScrub is the one Request.Tool that is not a model's tool: it sends
// nothing anywhere. Given the fleet's Secrets and {"text": "…"} as
// Arguments, it answers the text with every value of those secrets (and the
// encodings secret.Set.Redact lists) replaced by «secret:NAME». The
// schedules use it: a schedule's message is scrubbed before it is saved,
// because only this function reads secret values.
//
//	{"tool": "scrub", "arguments": {"text": "call with sk-123"},
//	 "secrets": {"API_KEY": "agentsfleet/acme/api-key"}, "fleet": "acme"}
//	→ {"output": "call with «secret:API_KEY»", "is_error": false}
//
// A batch, {"texts": ["…", "…"]} (ScrubBatchRequest), is screened the same
// way, each text on its own, and answered with the JSON array of the
// screened texts in their order as the output: the runner screens all of a
// step's new text (answer, plan, tool arguments and results) in one call.
//
// Arguments that are neither {"text": string} nor {"texts": [string, …]}
// get an error Result. When a secret cannot be read the answer is an error
// Result naming it and no text comes back: the caller must not save text
// that could not be screened.
const ToolScrub = "scrub"

// ScrubArgs are ToolScrub's arguments.
type ScrubArgs struct {
	Text string `json:"text"`
}

// ScrubBatchArgs are ToolScrub's arguments for a batch.
type ScrubBatchArgs struct {
	Texts []string `json:"texts"`
}

// ScrubRequest is the Request scrubbing text of a fleet whose secrets map
// names to Secrets Manager ids.
func ScrubRequest(fleet string, secrets map[string]string, text string) Request {
	args, _ := json.Marshal(ScrubArgs{Text: text}) // a string: cannot fail
	return Request{Tool: ToolScrub, Arguments: args, Secrets: secrets, Fleet: fleet}
}

// ScrubBatchRequest is the Request scrubbing texts, each on its own, in one
// call: its output is the JSON array of the screened texts, in order.
func ScrubBatchRequest(fleet string, secrets map[string]string, texts []string) Request {
	if texts == nil {
		texts = []string{}
	}
	args, _ := json.Marshal(ScrubBatchArgs{Texts: texts}) // strings: cannot fail
	return Request{Tool: ToolScrub, Arguments: args, Secrets: secrets, Fleet: fleet}
}
