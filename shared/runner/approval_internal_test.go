package runner

import (
	"encoding/json"
	"testing"

	"github.com/agentsfleet/agentsfleet/shared/fleet"
	"github.com/agentsfleet/agentsfleet/shared/model"
)

// An http_request call waits whenever the table's method and host would
// match it, however its URL is spelt; a URL whose host cannot be read
// waits rather than slips through.
func TestHTTPRequestApprovalReadsTheHostAsTheHostListDoes(t *testing.T) {
	d, err := fleet.ParseTOML([]byte(`name = "pay"
instructions = "x"
[x-agentsfleet]
tools = ["http_request", "read"]
[x-agentsfleet.network]
hosts = ["*.pay.example", "api.example.com"]
[x-agentsfleet.approval]
tools = ["http_request"]
methods = ["POST", "GET"]
hosts = ["*.pay.example"]
`))
	if err != nil {
		t.Fatal(err)
	}
	x := &execution{def: d}
	for _, tt := range []struct {
		args string
		want bool
	}{
		{`{"method": "POST", "url": "https://a.pay.example/charge"}`, true},
		{`{"method": "post", "url": "https://A.PAY.EXAMPLE./charge"}`, true},
		{`{"url": "https://a.pay.example/charge"}`, true}, // GET, the default
		{`{"method": "PUT", "url": "https://a.pay.example/charge"}`, false},
		{`{"method": "POST", "url": "https://api.example.com/x"}`, false},
		{`{"method": "POST", "url": "https://a.pay.example.evil/x"}`, false},
		{`{"method": "POST", "url": "https://a.pay.example:8443/x"}`, true},
		{`{"method": "POST", "url": "https://user@a.pay.example/x"}`, true},
		{`{"method": "POST", "url": "::not a url"}`, true},      // unreadable: asked about
		{`{"method": "POST", "url": "https:///no-host"}`, true}, // no host: asked about
		{`{"method": "POST"}`, true},
		{`not json`, true},
		{`{"method": "PUT", "url": "::not a url"}`, false}, // the method is not on the table
	} {
		call := model.ToolCall{ID: "c", Name: "http_request", Arguments: json.RawMessage(tt.args)}
		if got := x.needsApproval(call); got != tt.want {
			t.Errorf("needsApproval(%s) = %v, want %v", tt.args, got, tt.want)
		}
	}
	if x.needsApproval(model.ToolCall{ID: "c", Name: "read", Arguments: json.RawMessage(`{}`)}) {
		t.Error("a read waits, though the table lists http_request alone")
	}
}
