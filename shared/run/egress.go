package run

import "time"

// Egress is one outbound request a run caused, or one it was refused: an
// entry of GET /v1/runs/{id}/egress (DESIGN §11). A redirect is one entry
// per hop. Secrets holds the names of the secrets the credential firewall
// filled into the request, never their values. A refused request has
// Refused set, Rule naming the rule that refused it (the Rule constants)
// and Status 0; nothing of it left agentsfleet, unless Rule is
// RuleSecretRedirect (the response that redirected did come back, and is
// an entry of its own).
type Egress struct {
	Time   time.Time `json:"time"`
	Tool   string    `json:"tool"` // the tool (webfetch, http_request, mcp__<server>__<tool>, …) or "callback"
	Method string    `json:"method"`
	Host   string    `json:"host"`
	Port   int       `json:"port"`
	// Status is the HTTP status of the response; 0 when none came (a
	// refusal, or a connection that failed).
	Status     int      `json:"status"`
	BytesIn    int64    `json:"bytes_in"`  // response body bytes read
	BytesOut   int64    `json:"bytes_out"` // request body bytes sent
	DurationMS int64    `json:"duration_ms"`
	Secrets    []string `json:"secrets"` // names only
	Refused    bool     `json:"refused"`
	Rule       string   `json:"rule"` // why it was refused; "" when it was not
	// Error says why a request that was not refused got no response
	// (a DNS failure, a connection refused, a timeout); "" otherwise.
	Error string `json:"error,omitempty"`
	// Sandbox marks an entry the sandbox reported (the browser's proxy in
	// it): an account from inside the sandbox, which the runner bounds but
	// cannot check, not a record made outside it.
	Sandbox bool `json:"sandbox,omitempty"`
}

// ToolCallback is the Egress tool of a completion callback, which the
// runner sends rather than a tool.
const ToolCallback = "callback"

// The rules that refuse a request, as an Egress entry names them.
const (
	RuleHostList       = "host_list"       // the host is not on the fleet's network host list
	RuleScheme         = "scheme"          // not http or https, or http where https is required
	RuleHost           = "host"            // the host is not a valid host name or address
	RuleSecretInHost   = "secret_in_host"  // a secret reference in the host, or filling one would move the request
	RuleAddress        = "address"         // a private, loopback, link-local, metadata or other unsafe address
	RulePort           = "port"            // a port the tool does not reach (webfetch: 80 and 443)
	RuleNetwork        = "network"         // not TCP
	RuleRedirects      = "redirect_limit"  // more redirects than the tool follows
	RuleSecretRedirect = "secret_redirect" // a redirect elsewhere of a request that carried secrets, not followed
	RuleTunnelLimit    = "tunnel_limit"    // more open connections than the browser's proxy carries at once
	RuleSecretApproval = "secret_approval" // a secret that says approve = true, not approved for the host in this run
)

// EgressSummary counts a run's egress log: GET /v1/runs/{id}'s `egress`.
type EgressSummary struct {
	Requests int64 `json:"requests"` // entries, refused ones included
	Refused  int64 `json:"refused"`
	BytesIn  int64 `json:"bytes_in"`
	BytesOut int64 `json:"bytes_out"`
}

// Add counts e in s.
func (s *EgressSummary) Add(e Egress) {
	s.Requests++
	if e.Refused {
		s.Refused++
	}
	s.BytesIn += e.BytesIn
	s.BytesOut += e.BytesOut
}
