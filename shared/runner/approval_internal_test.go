package runner

import (
	"encoding/json"
	"reflect"
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

// A call asks about each secret that says approve = true it would fill,
// for its URL's host as the host list reads it, however the reference is
// spelt in the JSON and wherever the call puts it; a secret already
// granted for the host, and one that does not ask, go without.
func TestSecretAsksFindEveryReference(t *testing.T) {
	d, err := fleet.ParseTOML([]byte(`name = "pay"
instructions = "x"
[x-agentsfleet]
tools = ["http_request", "pushover"]
[x-agentsfleet.network]
hosts = ["api.pay.example", "api.pushover.net"]
[x-agentsfleet.secrets]
PAY = { id = "prod/pay", approve = true }
PLAIN = "prod/plain"
PUSHOVER_TOKEN = { id = "prod/po", approve = true }
PUSHOVER_USER = "prod/pu"
`))
	if err != nil {
		t.Fatal(err)
	}
	x := &execution{def: d}
	x.run.SecretGrants = []string{"PAY granted.pay.example"}
	for _, tt := range []struct {
		name, args string
		want       []ask
	}{
		{"http_request", `{"method": "post", "url": "https://API.pay.example./x", "headers": {"Authorization": "Bearer «secret:PAY»"}}`,
			[]ask{{secret: "PAY", host: "api.pay.example", method: "POST"}}},
		{"http_request", `{"url": "https://api.pay.example/x?k=\u00absecret:PAY\u00bb"}`, []ask{{secret: "PAY", host: "api.pay.example", method: "GET"}}},
		{"http_request", `{"url": "https://api.pay.example/x", "body": {"nested": ["«secret:PAY»", "«secret:PAY»"]}}`,
			[]ask{{secret: "PAY", host: "api.pay.example", method: "GET"}}},
		{"http_request", `{"url": "https://api.pay.example/x", "headers": {"X-«secret:PAY»": "1"}}`, []ask{{secret: "PAY", host: "api.pay.example", method: "GET"}}},
		{"http_request", `{"url": "not a url «secret:PAY»"}`, nil}, // refused by webtools, which checks the grant itself
		{"http_request", `{"url": "https://granted.pay.example/x", "body": "«secret:PAY»"}`, nil},
		{"http_request", `{"url": "https://api.pay.example/x", "body": "«secret:PLAIN»"}`, nil},
		{"pushover", `{"message": "hi"}`, []ask{{secret: "PUSHOVER_TOKEN", host: "api.pushover.net", method: "POST"}}},
		{"webfetch", `{"url": "https://api.pay.example/«secret:PAY»"}`, nil}, // fills nothing
	} {
		got := x.secretAsks(model.ToolCall{Name: tt.name, Arguments: json.RawMessage(tt.args)})
		if !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%s %s: asks %+v, want %+v", tt.name, tt.args, got, tt.want)
		}
	}
}
