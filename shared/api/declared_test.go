package api_test

import (
	"strings"
	"testing"

	"github.com/agentsfleet/agentsfleet/shared/scope"
)

// declaredTOML declares a tool and allows read.
const declaredTOML = `name = "ops"
instructions = "Keep things running."
[x-agentsfleet]
tools = ["read"]

[[tools.declared]]
name = "restart"
description = "Restarts the service."
command = "echo restarting"
parameters = { type = "object" }
`

// TestDeclaredToolNeedsExecute: a Definition that declares a tool is
// applied only with tools:execute, as one that allows bash; the refusal
// names the scope and the tool, and changes nothing.
func TestDeclaredToolNeedsExecute(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	files := e.key("files", []string{scope.FleetsWrite, scope.FleetsRead, "tools:files"})
	code, body := e.do("PUT", "/v1/fleets/ops", files, declaredTOML, "Content-Type", "application/toml")
	if code != 403 || errCode(body) != "UZ-KEY-403" || !strings.Contains(errMessage(body), `"tools:execute"`) || !strings.Contains(errMessage(body), `"restart"`) {
		t.Fatalf("apply without tools:execute = %d %v; want 403 naming tools:execute and restart", code, body)
	}
	if code, _ := e.do("GET", "/v1/fleets/ops", e.admin, nil); code != 404 {
		t.Fatalf("after the refusal GET /v1/fleets/ops = %d, want 404", code)
	}
	both := e.key("both", []string{scope.FleetsWrite, scope.FleetsRead, "tools:files", "tools:execute"})
	if code, body := e.do("PUT", "/v1/fleets/ops", both, declaredTOML, "Content-Type", "application/toml"); code != 200 {
		t.Fatalf("apply with tools:execute = %d %v", code, body)
	}
	// A bad schema is refused when applied, naming the field.
	bad := strings.Replace(declaredTOML, `{ type = "object" }`, `{ type = "object", properties = { n = { type = "integr" } } }`, 1)
	code, body = e.do("PUT", "/v1/fleets/ops", both, bad, "Content-Type", "application/toml")
	if code != 400 || !strings.Contains(errMessage(body), "tools.declared[0].parameters: not a valid JSON Schema") {
		t.Fatalf("apply with a bad schema = %d %v", code, body)
	}
}
