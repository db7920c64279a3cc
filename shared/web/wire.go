package web

import "encoding/json"

// Request is one web tool call, as the runner sends it to the webtools λ
// (the Lambda invocation payload) and as local callers pass it to
// Service.Call. With tool.Result, the λ's response payload
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
	// or pushover.
	Tool string `json:"tool"`
	// Arguments is the model's JSON arguments object, passed through as is.
	Arguments json.RawMessage `json:"arguments"`
	// Hosts is the fleet's network host list from its Definition: host
	// names or URLs, of which only the host counts (any port).
	Hosts []string `json:"hosts,omitempty"`
	// Secrets maps the fleet's secret names (as in «secret:NAME») to AWS
	// Secrets Manager secret ids (names or ARNs). Never values.
	Secrets map[string]string `json:"secrets,omitempty"`
	// RunID and Fleet identify the call in logs.
	RunID string `json:"run_id,omitempty"`
	Fleet string `json:"fleet,omitempty"`
}

// Tool names.
const (
	ToolWebFetch    = "webfetch"
	ToolWebSearch   = "websearch"
	ToolWebFetchTLS = "web_fetch"
	ToolHTTPRequest = "http_request"
	ToolPushover    = "pushover"
)
