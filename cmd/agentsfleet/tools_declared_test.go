package main

import (
	"bytes"
	"context"
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

// TestRunDeclaredTool: `agentsfleet run` runs a declared tool in its local
// sandbox (the sandboxd binary), the arguments on stdin and in the
// environment.
func TestRunDeclaredTool(t *testing.T) {
	t.Parallel()
	work := openDir(t)
	if err := os.WriteFile(filepath.Join(work, "notes.txt"), []byte("one two three\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	def := filepath.Join(t.TempDir(), "words.toml")
	os.WriteFile(def, []byte(`name = "words"
instructions = "Count words."

[[tools.declared]]
name = "word_count"
description = "Counts the words of a file."
command = 'printf "%s %s " "$(cat)" "$AGENTSFLEET_ARG_PATH"; wc -w < "$AGENTSFLEET_ARG_PATH"'
parameters = { type = "object", properties = { path = { type = "string" } }, required = ["path"] }
`), 0o644)
	script := filepath.Join(t.TempDir(), "script.toml")
	os.WriteFile(script, []byte("[[turn]]\n[[turn.tool_call]]\nname = \"word_count\"\narguments = { path = \"notes.txt\" }\n[[turn]]\ntext = \"{{last_output}}\"\n"), 0o644)
	var out, errOut bytes.Buffer
	err := runCmd(context.Background(), []string{"-f", def, "--workdir", work, "--state", t.TempDir(), "go"}, &out, &errOut,
		runEnv(map[string]string{"AGENTSFLEET_MODEL_SCRIPT": script}))
	if err != nil {
		t.Fatalf("run: %v\n%s\n%s", err, out.String(), errOut.String())
	}
	if want := `{"path":"notes.txt"} notes.txt 3` + "\n[exit code 0]"; !strings.Contains(out.String(), want) {
		t.Fatalf("output lacks %q:\n%s", want, out.String())
	}
}

// TestToolsListsMCPServers: -f DEF lists each MCP server as one entry, its
// pattern, where it runs and its scope (its tools are known only once a
// run lists them).
func TestToolsListsMCPServers(t *testing.T) {
	t.Parallel()
	def := filepath.Join(t.TempDir(), "mcp.toml")
	doc := `name = "m"
instructions = "x"
[x-agentsfleet]
tools = ["mcp__local__*", "mcp__docs__search"]
[x-agentsfleet.network]
hosts = ["mcp.example.com"]
[[x-agentsfleet.mcp]]
name = "local"
command = ["node", "server.js"]
[[x-agentsfleet.mcp]]
name = "docs"
url = "https://mcp.example.com/mcp"
`
	if err := os.WriteFile(def, []byte(doc), 0o644); err != nil {
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
	byName := map[string]toolJSON{}
	for _, e := range list {
		byName[e.Name] = e
	}
	local, docs := byName["mcp__local__*"], byName["mcp__docs__*"]
	if local.MCPServer != "local" || local.RunsIn != fleet.InSandbox || local.Scope != "tools:mcp and tools:execute" || !strings.Contains(local.Summary, "node server.js") {
		t.Errorf("the stdio server's entry = %+v", local)
	}
	if docs.MCPServer != "docs" || docs.RunsIn != fleet.InWebtools || docs.Scope != fleet.ScopeMCP || !strings.Contains(docs.Summary, "https://mcp.example.com/mcp") {
		t.Errorf("the remote server's entry = %+v", docs)
	}
	out.Reset()
	if err := tools([]string{"-f", def, "mcp__local__*"}, &out, browserEnv(browserOff)); err != nil {
		t.Fatal(err)
	}
	if want := "mcp__local__* — runs in the sandbox, scope tools:mcp and tools:execute, MCP server local in " + def + "\n  The tools of the stdio MCP server local"; !strings.HasPrefix(out.String(), want) {
		t.Errorf("text = %q, want it to start %q", out.String(), want)
	}
}
