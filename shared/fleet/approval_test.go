package fleet_test

import (
	"reflect"
	"strings"
	"testing"

	"github.com/agentsfleet/agentsfleet/shared/fleet"
)

const approvalBase = `name = "deployer"
instructions = "Deploy it."
[x-agentsfleet]
tools = ["read", "apply_patch", "http_request"]
[x-agentsfleet.network]
hosts = ["api.example.com", "*.pay.example"]
`

func TestApprovalParsesAndRoundTrips(t *testing.T) {
	t.Parallel()
	d, err := fleet.ParseTOML([]byte(approvalBase + `[x-agentsfleet.approval]
tools = ["http_request", "apply_patch", "http_request"]
methods = ["post", "DELETE"]
hosts = ["*.pay.example"]
`))
	if err != nil {
		t.Fatal(err)
	}
	want := &fleet.Approval{Tools: []string{"apply_patch", "http_request"}, Methods: []string{"DELETE", "POST"},
		Hosts: fleet.HostList{"*.pay.example"}, ExpireHours: fleet.DefaultApprovalExpireHours}
	if !reflect.DeepEqual(d.Approval, want) {
		t.Fatalf("Approval = %+v, want %+v", d.Approval, want)
	}
	for _, form := range []struct {
		name string
		data []byte
		f    fleet.Format
	}{{"canonical JSON", d.Canonical(), fleet.JSON}, {"TOML", d.TOML(), fleet.TOML}} {
		back, err := fleet.Parse(form.data, form.f)
		if err != nil {
			t.Fatalf("%s: %v\n%s", form.name, err, form.data)
		}
		if !reflect.DeepEqual(back, d) {
			t.Errorf("%s round trip: got %+v, want %+v", form.name, back.Approval, d.Approval)
		}
	}
	c := d.Clone()
	c.Approval.Tools[0] = "CHANGED"
	if d.Approval.Tools[0] != "apply_patch" {
		t.Error("Clone shares the approval's tools with the original")
	}
	for _, tt := range []struct {
		tool, method, host string
		want               bool
	}{
		{"apply_patch", "", "", true},
		{"read", "", "", false},
		{"http_request", "POST", "a.pay.example", true},
		{"http_request", "delete", "b.c.pay.example", true},
		{"http_request", "GET", "a.pay.example", false},       // not a listed method
		{"http_request", "POST", "api.example.com", false},    // not a listed host
		{"http_request", "POST", "a.pay.example.evil", false}, // not under the wildcard
	} {
		if got := d.Approval.Needs(tt.tool, tt.method, tt.host); got != tt.want {
			t.Errorf("Needs(%s, %s, %s) = %v, want %v", tt.tool, tt.method, tt.host, got, tt.want)
		}
	}
	var none *fleet.Approval
	if none.Needs("apply_patch", "", "") {
		t.Error("a Definition without an approval table makes calls wait")
	}
}

func TestApprovalOfMCPTools(t *testing.T) {
	t.Parallel()
	d, err := fleet.ParseTOML([]byte(`name = "m"
instructions = "x"
[x-agentsfleet]
tools = ["mcp__pay__*", "mcp__docs__search"]
[x-agentsfleet.network]
hosts = ["pay.example", "docs.example"]
[[x-agentsfleet.mcp]]
name = "pay"
url = "https://pay.example/mcp"
[[x-agentsfleet.mcp]]
name = "docs"
url = "https://docs.example/mcp"
[x-agentsfleet.approval]
tools = ["mcp__pay__*"]
expire_hours = 2
`))
	if err != nil {
		t.Fatal(err)
	}
	if !d.Approval.Needs("mcp__pay__charge", "", "") || d.Approval.Needs("mcp__docs__search", "", "") {
		t.Errorf("Needs: want every tool of pay and none of docs to wait (%+v)", d.Approval)
	}
	if d.Approval.Expiry().Hours() != 2 {
		t.Errorf("Expiry = %v, want 2h", d.Approval.Expiry())
	}
}

func TestApprovalProblems(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct{ table, want string }{
		{`tools = ["bash"]`, `x-agentsfleet.approval.tools[0]: "bash" is not a tool this Definition allows`},
		{`methods = ["POST"]`, "x-agentsfleet.approval.tools: required"},
		{`tools = ["apply_patch"]` + "\nmethods = [\"POST\"]", "list http_request in tools"},
		{`tools = ["http_request"]` + "\nmethods = [\"BREW\"]", `"BREW" is not an HTTP method`},
		{`tools = ["http_request"]` + "\nhosts = [\"*.com\"]", "x-agentsfleet.approval.hosts[0]"},
		{`tools = ["http_request"]` + "\nexpire_hours = 0", "x-agentsfleet.approval.expire_hours"},
		{`tools = ["http_request"]` + "\nexpire_hours = 721", "x-agentsfleet.approval.expire_hours"},
		{`tools = ["http_request"]` + "\nwho = [\"U1\"]", `unknown key "who"`},
	} {
		_, err := fleet.ParseTOML([]byte(approvalBase + "[x-agentsfleet.approval]\n" + tt.table + "\n"))
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("approval %q: err = %v, want it to say %q", tt.table, err, tt.want)
		}
	}
}

func TestAllowApproveRoundTrips(t *testing.T) {
	t.Parallel()
	d, err := fleet.ParseTOML([]byte("name = \"ops\"\ninstructions = \"x\"\n[x-agentsfleet.slack]\nallow_approve = [\"U0123ABCD\", \"S0456EFGH\"]\n"))
	if err != nil || !reflect.DeepEqual(d.SlackAccess.AllowApprove, []string{"S0456EFGH", "U0123ABCD"}) && !reflect.DeepEqual(d.SlackAccess.AllowApprove, []string{"U0123ABCD", "S0456EFGH"}) {
		t.Fatalf("ParseTOML = %+v, %v; want two on allow_approve", d.SlackAccess, err)
	}
	for _, data := range [][]byte{d.TOML(), d.Canonical()} {
		back, err := fleet.Parse(data, map[bool]fleet.Format{true: fleet.TOML, false: fleet.JSON}[data[0] != '{'])
		if err != nil || back.Hash() != d.Hash() || !reflect.DeepEqual(back.SlackAccess, d.SlackAccess) {
			t.Fatalf("round trip of %s = %+v, %v", data, back, err)
		}
	}
	c := d.Clone()
	c.SlackAccess.AllowApprove[0] = "CHANGED"
	if d.SlackAccess.AllowApprove[0] == "CHANGED" {
		t.Error("Clone shares allow_approve")
	}
	if _, err := fleet.ParseTOML([]byte("name = \"ops\"\ninstructions = \"x\"\n[x-agentsfleet.slack]\nallow_approve = [\"bob\"]\n")); err == nil {
		t.Fatal("allow_approve with a name that is no Slack id: no error")
	}
}

// A secret that says approve = true keeps its id among Secrets and is
// listed in ApproveSecrets, through both canonical forms; approve = false
// is a secret like any other.
func TestApproveSecretsRoundTrip(t *testing.T) {
	t.Parallel()
	d, err := fleet.ParseTOML([]byte("name = \"ops\"\ninstructions = \"x\"\n[x-agentsfleet.secrets]\n" +
		"STRIPE = { id = \"prod/stripe\", approve = true }\nPLAIN = { id = \"prod/plain\", approve = false }\nGH = \"prod/gh\"\n"))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"STRIPE": "prod/stripe", "PLAIN": "prod/plain", "GH": "prod/gh"}
	if !reflect.DeepEqual(d.Secrets, want) || !reflect.DeepEqual(d.ApproveSecrets, []string{"STRIPE"}) {
		t.Fatalf("Secrets %v, ApproveSecrets %v; want %v and [STRIPE]", d.Secrets, d.ApproveSecrets, want)
	}
	if !strings.Contains(string(d.Canonical()), `"STRIPE":{"id":"prod/stripe","approve":true}`) || !strings.Contains(string(d.Canonical()), `"PLAIN":"prod/plain"`) {
		t.Errorf("canonical JSON %s", d.Canonical())
	}
	for _, data := range [][]byte{d.TOML(), d.Canonical()} {
		back, err := fleet.Parse(data, map[bool]fleet.Format{true: fleet.TOML, false: fleet.JSON}[data[0] != '{'])
		if err != nil || back.Hash() != d.Hash() || !reflect.DeepEqual(back.ApproveSecrets, d.ApproveSecrets) || !reflect.DeepEqual(back.Secrets, d.Secrets) {
			t.Fatalf("round trip of %s = %+v, %v", data, back, err)
		}
	}
	c := d.Clone()
	c.ApproveSecrets[0] = "CHANGED"
	if d.ApproveSecrets[0] == "CHANGED" {
		t.Error("Clone shares ApproveSecrets")
	}
}

// A secret that says approve = true is refused where nothing waits on a
// call: the setup step and MCP servers' headers.
func TestApproveSecretsWhereNoCallWaits(t *testing.T) {
	t.Parallel()
	base := "name = \"ops\"\ninstructions = \"x\"\n[x-agentsfleet]\ntools = [\"http_request\", \"bash\"]\n" +
		"[x-agentsfleet.network]\nhosts = [\"mcp.example.com\"]\n[x-agentsfleet.secrets]\nS = { id = \"prod/s\", approve = true }\n"
	for _, tt := range []struct{ extra, want string }{
		{"[x-agentsfleet.setup]\ncommand = \"make\"\nsecrets = [\"S\"]\n", "x-agentsfleet.setup.secrets: the secret S says approve = true"},
		{"[[x-agentsfleet.mcp]]\nname = \"tracker\"\nurl = \"https://mcp.example.com/mcp\"\nheaders = { Authorization = \"Bearer «secret:S»\" }\n",
			"the secret S says approve = true, but an MCP server's headers"},
	} {
		if _, err := fleet.ParseTOML([]byte(base + tt.extra)); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: err = %v, want it to say %q", tt.extra, err, tt.want)
		}
	}
	if _, err := fleet.ParseTOML([]byte(base)); err != nil {
		t.Fatalf("the secret alone: %v", err)
	}
}
