package fleet_test

import (
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/agentsfleet/agentsfleet/shared/fleet"
)

const mcpDoc = `name = "a"
instructions = "b"

[x-agentsfleet]
tools = ["mcp__docs__search", "mcp__tracker__*", "read"]

[x-agentsfleet.network]
hosts = ["mcp.example.com", "tracker.example.org"]

[x-agentsfleet.secrets]
TOKEN = "agentsfleet/a/token"

[[x-agentsfleet.mcp]]
name = "tracker"
url = "https://tracker.example.org/mcp"

[[x-agentsfleet.mcp]]
name = "docs"
url = "https://mcp.example.com/v1/mcp"
headers = { Authorization = "Bearer «secret:TOKEN»", X-Team = "core" }
`

func TestMCPServersParse(t *testing.T) {
	t.Parallel()
	d, err := fleet.ParseTOML([]byte(mcpDoc))
	if err != nil {
		t.Fatal(err)
	}
	want := []fleet.MCPServer{
		{Name: "docs", URL: "https://mcp.example.com/v1/mcp", Headers: map[string]string{"Authorization": "Bearer «secret:TOKEN»", "X-Team": "core"}},
		{Name: "tracker", URL: "https://tracker.example.org/mcp"},
	}
	if !reflect.DeepEqual(d.MCP, want) {
		t.Errorf("MCP = %+v, want %+v", d.MCP, want)
	}
	if got, want := d.Tools, []string{"mcp__docs__search", "mcp__tracker__*", "read"}; !reflect.DeepEqual(got, want) {
		t.Errorf("Tools = %v, want %v", got, want)
	}
	// The canonical JSON and the TOML layout both give the same Definition back.
	for _, back := range []func() (*fleet.Definition, error){
		func() (*fleet.Definition, error) { return fleet.ParseJSON(d.Canonical()) },
		func() (*fleet.Definition, error) { return fleet.ParseTOML(d.TOML()) },
	} {
		got, err := back()
		if err != nil {
			t.Fatalf("parse back: %v\n%s", err, d.TOML())
		}
		if !reflect.DeepEqual(got, d) {
			t.Errorf("round trip = %+v, want %+v", got, d)
		}
	}
	if c := d.Clone(); !reflect.DeepEqual(c, d) {
		t.Errorf("Clone = %+v, want %+v", c, d)
	} else {
		c.MCP[0].Headers["X-Team"] = "other"
		if d.MCP[0].Headers["X-Team"] != "core" {
			t.Error("Clone shares the headers map")
		}
	}
	if err := d.CheckAvailable(fleet.AvailableTools(false)); err != nil {
		t.Errorf("CheckAvailable: %v, want nil (MCP tools are the fleet's own)", err)
	}
}

func TestMCPRules(t *testing.T) {
	t.Parallel()
	server := func(body string) string {
		return "[x-agentsfleet.network]\nhosts = [\"mcp.example.com\", \"127.0.0.1\"]\n[x-agentsfleet.secrets]\nTOKEN = \"t\"\n[[x-agentsfleet.mcp]]\n" + body
	}
	tests := []struct {
		name, doc, want string // want: the first problem's path and a piece of its text
	}{
		{"no name", server(`url = "https://mcp.example.com/"`), `x-agentsfleet.mcp[0]: an MCP server needs a name`},
		{"bad name", server(`name = "Docs"` + "\n" + `url = "https://mcp.example.com/"`), `x-agentsfleet.mcp[0].name: "Docs" is not an MCP server name`},
		{"double underscore", server(`name = "a__b"` + "\n" + `url = "https://mcp.example.com/"`), `not an MCP server name`},
		{"no url", server(`name = "docs"`), `x-agentsfleet.mcp[0]: an MCP server needs url`},
		{"command string", server(`name = "docs"` + "\n" + `command = "npx server"`), `x-agentsfleet.mcp[0].command: a stdio MCP server's command is an array of strings`},
		{"command", server(`name = "docs"` + "\n" + `command = ["npx", "server"]`), ``},
		{"command empty", server(`name = "docs"` + "\n" + `command = []`), `x-agentsfleet.mcp[0].command: the command is empty`},
		{"command blank program", server(`name = "docs"` + "\n" + `command = [" ", "x"]`), `x-agentsfleet.mcp[0].command[0]: the command's program is blank`},
		{"command not strings", server(`name = "docs"` + "\n" + `command = ["node", 1]`), `x-agentsfleet.mcp[0].command[1]`},
		{"command and url", server(`name = "docs"` + "\n" + `command = ["node"]` + "\n" + `url = "https://mcp.example.com/"`), `either url (a remote server) or command (a stdio server in the sandbox), not both`},
		{"command headers", server(`name = "docs"` + "\n" + `command = ["node"]` + "\n" + `headers = { X-Team = "core" }`), `x-agentsfleet.mcp[0].headers: a stdio MCP server (command) takes no headers`},
		{"http", server(`name = "docs"` + "\n" + `url = "http://mcp.example.com/"`), `x-agentsfleet.mcp[0].url: "http://mcp.example.com/" is http`},
		{"http loopback", server(`name = "docs"` + "\n" + `url = "http://127.0.0.1:8080/mcp"`), ``},
		{"scheme", server(`name = "docs"` + "\n" + `url = "ftp://mcp.example.com/"`), `scheme "ftp" is not allowed`},
		{"user info", server(`name = "docs"` + "\n" + `url = "https://u:p@mcp.example.com/"`), `user information`},
		{"secret in url", server(`name = "docs"` + "\n" + `url = "https://mcp.example.com/«secret:TOKEN»"`), `a secret reference cannot be part of an MCP server's URL`},
		{"host not listed", server(`name = "docs"` + "\n" + `url = "https://other.example.com/"`), `x-agentsfleet.mcp[0].url: the host other.example.com is not on the fleet's network host list`},
		{"unknown secret", server(`name = "docs"` + "\n" + `url = "https://mcp.example.com/"` + "\n" + `headers = { Authorization = "Bearer «secret:NOPE»" }`), `x-agentsfleet.mcp[0].headers.Authorization: «secret:NOPE» names a secret the Definition does not declare`},
		{"reserved header", server(`name = "docs"` + "\n" + `url = "https://mcp.example.com/"` + "\n" + `headers = { Mcp-Session-Id = "x" }`), `header Mcp-Session-Id is set by agentsfleet`},
		{"unknown key", server(`name = "docs"` + "\n" + `url = "https://mcp.example.com/"` + "\n" + `env = {}`), `x-agentsfleet.mcp[0].env: unknown key "env"`},
		{"twice", server(`name = "docs"` + "\n" + `url = "https://mcp.example.com/"` + "\n[[x-agentsfleet.mcp]]\nname = \"docs\"\nurl = \"https://mcp.example.com/\""), `MCP server "docs" is declared twice`},
		{"tool of no server", "[x-agentsfleet]\ntools = [\"mcp__docs__search\"]\n", `x-agentsfleet.tools[0]: tool "mcp__docs__search" names the MCP server "docs", but the Definition declares none`},
		{"tool of another server", "[x-agentsfleet]\ntools = [\"mcp__other__*\"]\n" + server(`name = "docs"`+"\n"+`url = "https://mcp.example.com/"`), `names the MCP server "other", which the Definition does not declare; its MCP servers are docs`},
		{"malformed tool name", "[x-agentsfleet]\ntools = [\"mcp__docs\"]\n" + server(`name = "docs"`+"\n"+`url = "https://mcp.example.com/"`), `"mcp__docs" is not an MCP tool name`},
		{"tool name too long", "[x-agentsfleet]\ntools = [\"mcp__docs__" + strings.Repeat("x", 60) + "\"]\n" + server(`name = "docs"`+"\n"+`url = "https://mcp.example.com/"`), `at most 64 characters`},
		{"not an array", "[x-agentsfleet.mcp]\nname = \"docs\"\n", `x-agentsfleet.mcp: want an array of tables`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := fleet.ParseTOML(minimal(tt.doc))
			if tt.want == "" {
				if err != nil {
					t.Fatalf("got %v, want no error", err)
				}
				return
			}
			got := problems(t, err)[0].String()
			if !strings.Contains(got, tt.want) {
				t.Errorf("first problem = %q, want it to hold %q", got, tt.want)
			}
		})
	}
}

func TestMCPServerCount(t *testing.T) {
	t.Parallel()
	var b strings.Builder
	b.WriteString("[x-agentsfleet.network]\nhosts = [\"mcp.example.com\"]\n")
	for i := range fleet.MaxMCPServers + 1 {
		b.WriteString("[[x-agentsfleet.mcp]]\nname = \"s" + string(rune('a'+i)) + "\"\nurl = \"https://mcp.example.com/\"\n")
	}
	_, err := fleet.ParseTOML(minimal(b.String()))
	if got := problems(t, err)[0].String(); !strings.Contains(got, "17 MCP servers; at most 16") {
		t.Errorf("problem = %q, want the count named", got)
	}
}

func TestMCPNeedsScope(t *testing.T) {
	t.Parallel()
	d, err := fleet.ParseTOML([]byte(mcpDoc))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := d.RequiredScopes(), []string{fleet.ScopeFiles, fleet.ScopeMCP}; !reflect.DeepEqual(got, want) {
		t.Errorf("RequiredScopes = %v, want %v", got, want)
	}
	err = d.CheckScopes([]string{fleet.ScopeFiles})
	if err == nil || !strings.Contains(err.Error(), `scope "tools:mcp", needed by tools "mcp__docs__search" and "mcp__tracker__*"`) {
		t.Errorf("CheckScopes without tools:mcp = %v, want the scope and the tools named", err)
	}
	if err := d.CheckScopes([]string{fleet.ScopeFiles, fleet.ScopeMCP}); err != nil {
		t.Errorf("CheckScopes with tools:mcp = %v, want nil", err)
	}
	// Servers alone, with none of their tools allowed, still need it.
	d2, err := fleet.ParseTOML(minimal("[x-agentsfleet.network]\nhosts = [\"mcp.example.com\"]\n[[x-agentsfleet.mcp]]\nname = \"docs\"\nurl = \"https://mcp.example.com/\"\n"))
	if err != nil {
		t.Fatal(err)
	}
	if err := d2.CheckScopes(nil); err == nil || !strings.Contains(err.Error(), "MCP server docs") {
		t.Errorf("CheckScopes = %v, want the server named", err)
	}
	if !slices.Contains(fleet.Scopes(), fleet.ScopeMCP) {
		t.Errorf("Scopes() = %v, want %s in it", fleet.Scopes(), fleet.ScopeMCP)
	}
}

func TestMCPAllowlist(t *testing.T) {
	t.Parallel()
	tools := []string{"mcp__docs__search", "mcp__tracker__*"}
	for _, tt := range []struct {
		server, tool string
		want         bool
	}{
		{"docs", "search", true},
		{"docs", "delete", false},
		{"tracker", "anything", true},
		{"docs", "*", false},
		{"trackers", "x", false},
	} {
		if got := fleet.AllowsMCPTool(tools, tt.server, tt.tool); got != tt.want {
			t.Errorf("AllowsMCPTool(%s, %s) = %v, want %v", tt.server, tt.tool, got, tt.want)
		}
	}
	if !fleet.AllowsMCPServer(tools, "docs") || fleet.AllowsMCPServer(tools, "doc") {
		t.Error("AllowsMCPServer: want docs allowed and doc not")
	}
}

// A stdio server: its command is kept as argv through both layouts, and a
// Definition with one needs tools:execute as well as tools:mcp.
func TestMCPStdioServer(t *testing.T) {
	t.Parallel()
	doc := minimal("[x-agentsfleet]\ntools = [\"mcp__local__*\"]\n[[x-agentsfleet.mcp]]\nname = \"local\"\ncommand = [\"/usr/bin/env\", \"node\", \"server.js\", \"--say \\\"hi\\\"\"]\n")
	d, err := fleet.ParseTOML(doc)
	if err != nil {
		t.Fatal(err)
	}
	want := []fleet.MCPServer{{Name: "local", Command: []string{"/usr/bin/env", "node", "server.js", `--say "hi"`}}}
	if !reflect.DeepEqual(d.MCP, want) || !d.MCP[0].Stdio() {
		t.Fatalf("MCP = %+v, want %+v", d.MCP, want)
	}
	for _, back := range []func() (*fleet.Definition, error){
		func() (*fleet.Definition, error) { return fleet.ParseJSON(d.Canonical()) },
		func() (*fleet.Definition, error) { return fleet.ParseTOML(d.TOML()) },
	} {
		got, err := back()
		if err != nil {
			t.Fatalf("parse back: %v\n%s", err, d.TOML())
		}
		if !reflect.DeepEqual(got.MCP, want) {
			t.Errorf("round trip = %+v, want %+v", got.MCP, want)
		}
	}
	if c := d.Clone(); &c.MCP[0].Command[0] == &d.MCP[0].Command[0] {
		t.Error("Clone shares the command")
	}
	if got, want := d.RequiredScopes(), []string{fleet.ScopeExecute, fleet.ScopeMCP}; !reflect.DeepEqual(got, want) {
		t.Errorf("RequiredScopes = %v, want %v", got, want)
	}
	err = d.CheckScopes([]string{fleet.ScopeMCP})
	if err == nil || !strings.Contains(err.Error(), `"tools:execute", needed by tool "stdio MCP server local"`) {
		t.Errorf("CheckScopes without tools:execute = %v, want the server named", err)
	}
	if err := d.CheckScopes([]string{fleet.ScopeMCP, fleet.ScopeExecute}); err != nil {
		t.Errorf("CheckScopes = %v, want nil", err)
	}
}
