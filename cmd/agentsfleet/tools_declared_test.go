package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentsfleet/agentsfleet/shared/fleet"
)

const declaringTOML = `name = "ops"
instructions = "Keep things running."

[[tools.declared]]
name = "restart"
description = """Restarts the service.
Give it the service's name."""
command = 'systemctl restart "$AGENTSFLEET_ARG_SERVICE"'
parameters = { type = "object", properties = { service = { type = "string" } }, required = ["service"] }
`

// TestToolsListsDeclared: -f DEF lists the Definition's declared tools
// among the catalog's, in the sandbox with tools:execute.
func TestToolsListsDeclared(t *testing.T) {
	t.Parallel()
	def := filepath.Join(t.TempDir(), "ops.toml")
	if err := os.WriteFile(def, []byte(declaringTOML), 0o644); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := tools([]string{"-f", def, "--output", "json"}, &out, browserEnv(browserOff)); err != nil {
		t.Fatal(err)
	}
	var list []toolJSON
	if err := json.Unmarshal(out.Bytes(), &list); err != nil {
		t.Fatal(err)
	}
	if len(list) != len(fleet.ToolNames())+1 {
		t.Fatalf("%d tools listed, want the catalog's %d and restart", len(list), len(fleet.ToolNames()))
	}
	var restart *toolJSON
	var schema bytes.Buffer
	for i := range list {
		if i > 0 && list[i-1].Name > list[i].Name {
			t.Errorf("not sorted: %s before %s", list[i-1].Name, list[i].Name)
		}
		if list[i].Name == "restart" {
			restart = &list[i]
		} else if list[i].Declared {
			t.Errorf("%s is marked declared", list[i].Name)
		}
	}
	if restart != nil {
		_ = json.Compact(&schema, restart.Schema)
	}
	if restart == nil || !restart.Declared || restart.RunsIn != fleet.InSandbox || restart.Scope != fleet.ScopeExecute || !restart.Available ||
		restart.Summary != "Restarts the service." || !strings.HasPrefix(restart.Description, "Restarts the service.\nGive") ||
		schema.String() != `{"properties":{"service":{"type":"string"}},"required":["service"],"type":"object"}` {
		t.Fatalf("restart = %+v", restart)
	}

	out.Reset()
	if err := tools([]string{"-f", def, "restart"}, &out, browserEnv(browserOff)); err != nil {
		t.Fatal(err)
	}
	if want := "restart — runs in the sandbox, scope tools:execute, declared in " + def + "\n  Restarts the service.\n"; !strings.HasPrefix(out.String(), want) {
		t.Fatalf("text = %q, want it to start %q", out.String(), want)
	}
	// Without -f there is no such tool; a bad Definition is a usage error.
	if err := tools([]string{"restart"}, &out, browserEnv(browserOff)); !errors.Is(err, errUsage) {
		t.Fatalf("tools restart without -f = %v, want a usage error", err)
	}
	bad := filepath.Join(t.TempDir(), "bad.toml")
	if err := os.WriteFile(bad, []byte(strings.Replace(declaringTOML, `"restart"`, `"bash"`, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := tools([]string{"-f", bad}, &out, browserEnv(browserOff)); !errors.Is(err, errUsage) || !strings.Contains(err.Error(), "may not shadow it") {
		t.Fatalf("tools -f with a shadowing tool = %v", err)
	}
}
