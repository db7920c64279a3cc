package fleet_test

import (
	"slices"
	"testing"

	"github.com/agentsfleet/agentsfleet/shared/fleet"
)

// A Definition that uses the three ways of extending a fleet at once (a
// declared tool, an MCP server and a setup step) parses, keeps each, and
// needs the scope of each; its canonical JSON and its TOML give the same
// Definition back.
func TestDeclaredMCPAndSetupTogether(t *testing.T) {
	t.Parallel()
	d, err := fleet.ParseTOML([]byte(`name = "extended"
instructions = "Do as asked."

[x-agentsfleet]
tools = ["read", "mcp__docs__*"]

[x-agentsfleet.network]
hosts = ["mcp.example.com"]

[x-agentsfleet.secrets]
DOCS_TOKEN = "agentsfleet/docs-token"

[[x-agentsfleet.mcp]]
name = "docs"
url = "https://mcp.example.com/mcp"
headers = { Authorization = "Bearer «secret:DOCS_TOKEN»" }

[x-agentsfleet.setup]
command = "git clone https://example.com/repo.git"
secrets = ["DOCS_TOKEN"]

[[tools.declared]]
name = "run_tests"
description = "Runs the tests."
parameters = { type = "object", properties = { pattern = { type = "string" } } }
command = "go test ./..."
`))
	if err != nil {
		t.Fatal(err)
	}
	if len(d.DeclaredTools) != 1 || len(d.MCP) != 1 || d.Setup == nil || !slices.Contains(d.Tools, "mcp__docs__*") {
		t.Fatalf("parsed %+v; want one declared tool, one MCP server, a setup step and the MCP allowlist entry", d)
	}
	got := d.RequiredScopes()
	for _, want := range []string{fleet.ScopeExecute, fleet.ScopeMCP, "tools:files"} {
		if !slices.Contains(got, want) {
			t.Errorf("RequiredScopes() = %v, want %s among them", got, want)
		}
	}
	if err := d.CheckScopes([]string{"tools:files"}); err == nil {
		t.Error("CheckScopes with tools:files alone passed")
	}
	for _, f := range []struct {
		name   string
		data   []byte
		format fleet.Format
	}{{"canonical JSON", d.Canonical(), fleet.JSON}, {"TOML", d.TOML(), fleet.TOML}} {
		back, err := fleet.Parse(f.data, f.format)
		if err != nil {
			t.Fatalf("the %s does not parse: %v\n%s", f.name, err, f.data)
		}
		if back.Hash() != d.Hash() {
			t.Errorf("the %s's hash %s differs from the Definition's %s", f.name, back.Hash(), d.Hash())
		}
	}
}
