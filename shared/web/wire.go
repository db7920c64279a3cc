package web

import (
	"context"
	"encoding/json"
	"fmt"
)

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
	// or pushover; or ToolScrub ("scrub"), which sends nothing and answers
	// Arguments' text with the values of Secrets replaced by «secret:NAME»
	// (see ToolScrub).
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

// Invoke is Call over the Lambda payload: a Request as JSON in, the
// tool.Result as JSON out. It is the handler the webtools function serves
// in-process (invoke.Local), the same shape lambda.Start(svc.Call) serves in
// AWS. A payload that is not a Request is an error.
func (s *Service) Invoke(ctx context.Context, payload []byte) ([]byte, error) {
	var req Request
	if err := json.Unmarshal(payload, &req); err != nil {
		return nil, fmt.Errorf("webtools: the payload is not a web tool request: %w", err)
	}
	res, err := s.Call(ctx, req)
	if err != nil {
		return nil, err
	}
	return json.Marshal(res)
}
