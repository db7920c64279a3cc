package fleet_test

import (
	"errors"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/agentsfleet/agentsfleet/shared/fault"
	"github.com/agentsfleet/agentsfleet/shared/fleet"
)

// specTools are the tool names the two spec pages and DESIGN.md fix, with
// the scopes they fix; "" where the scope is ours to choose.
var specTools = map[string]string{
	"read": "tools:files", "glob": "tools:files", "list": "tools:files",
	"grep": "tools:search", "webfetch": "tools:search", "websearch": "tools:search",
	"bash": "tools:execute", "exec_command": "tools:execute", "write_stdin": "tools:execute",
	"apply_patch": "", "update_plan": "", "http_request": "", "web_fetch": "", "pushover": "",
	"cron_run": "", "message": "", "browser_open": "", "screenshot": "",
	"schedule_create": "", "schedule_list": "", "schedule_update": "", "schedule_delete": "",
	"spawn_agent": "", "delegate_agent": "", "wait_agent": "", "inspect_agent": "", "list_agents": "", "interrupt_agent": "",
}

func TestCatalogMatchesSpec(t *testing.T) {
	t.Parallel()
	tools := fleet.Tools()
	names := fleet.ToolNames()
	if !sort.StringsAreSorted(names) {
		t.Errorf("ToolNames() = %q, want sorted", names)
	}
	if len(tools) != len(specTools) {
		t.Errorf("got %d tools, want %d", len(tools), len(specTools))
	}
	builtins := 0
	for i, ti := range tools {
		if names[i] != ti.Name {
			t.Errorf("ToolNames()[%d] = %q, want %q", i, names[i], ti.Name)
		}
		scope, ok := specTools[ti.Name]
		if !ok {
			t.Errorf("tool %q is not in the spec", ti.Name)
			continue
		}
		if scope != "" && ti.Scope != scope {
			t.Errorf("%s scope = %q, want %q", ti.Name, ti.Scope, scope)
		}
		if !slices.Contains(fleet.Scopes(), ti.Scope) {
			t.Errorf("%s scope %q is not in Scopes()", ti.Name, ti.Scope)
		}
		if ti.Summary == "" || ti.RunsIn == "" {
			t.Errorf("%s has an empty summary or location", ti.Name)
		}
		if ti.Builtin {
			builtins++
		}
		got, ok := fleet.LookupTool(ti.Name)
		if !ok || got != ti {
			t.Errorf("LookupTool(%q) = %+v, %v; want %+v", ti.Name, got, ok, ti)
		}
	}
	if builtins != 7 {
		t.Errorf("got %d built-in tools, want the seven of the built-in tools page", builtins)
	}
	for _, name := range []string{"Read", "", "shell", "web-fetch"} {
		if _, ok := fleet.LookupTool(name); ok {
			t.Errorf("LookupTool(%q) found a tool, want none", name)
		}
	}
}

func TestToolLocationsAndScopes(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		runsIn fleet.Location
		scope  string
	}{
		{"read", fleet.InSandbox, fleet.ScopeFiles},
		{"grep", fleet.InSandbox, fleet.ScopeSearch},
		{"bash", fleet.InSandbox, fleet.ScopeExecute},
		{"webfetch", fleet.InWebtools, fleet.ScopeSearch},
		{"websearch", fleet.InWebtools, fleet.ScopeSearch},
		{"apply_patch", fleet.InSandbox, fleet.ScopeWrite},
		{"exec_command", fleet.InSandbox, fleet.ScopeExecute},
		{"http_request", fleet.InWebtools, fleet.ScopeNetwork},
		{"web_fetch", fleet.InWebtools, fleet.ScopeNetwork},
		{"pushover", fleet.InWebtools, fleet.ScopeNetwork},
		{"update_plan", fleet.InRunner, fleet.ScopeControl},
		{"message", fleet.InRunner, fleet.ScopeControl},
		{"schedule_create", fleet.InRunner, fleet.ScopeSchedule},
		{"cron_run", fleet.InRunner, fleet.ScopeSchedule},
		{"delegate_agent", fleet.InRunner, fleet.ScopeAgents},
		{"browser_open", fleet.InDisplay, fleet.ScopeBrowser},
		{"screenshot", fleet.InDisplay, fleet.ScopeBrowser},
	}
	for _, tt := range tests {
		ti, _ := fleet.LookupTool(tt.name)
		if ti.RunsIn != tt.runsIn || ti.Scope != tt.scope {
			t.Errorf("%s runs in %q with scope %q, want %q and %q", tt.name, ti.RunsIn, ti.Scope, tt.runsIn, tt.scope)
		}
	}
	var agents []string
	for _, ti := range fleet.Tools() {
		if ti.Scope == fleet.ScopeAgents {
			agents = append(agents, ti.Name)
		}
	}
	if len(agents) != 6 {
		t.Errorf("tools with scope %s = %q, want the six child-agent tools", fleet.ScopeAgents, agents)
	}
}

func TestUnknownToolErrorListsValidNames(t *testing.T) {
	t.Parallel()
	_, err := fleet.ParseTOML(minimal("[x-agentsfleet]\ntools = [\"read\", \"teleport\"]\n"))
	probs := problems(t, err)
	want := `x-agentsfleet.tools[1]: unknown tool "teleport"; valid tools: ` + strings.Join(fleet.ToolNames(), ", ")
	if got := probs[0].Path + ": " + probs[0].Msg; got != want {
		t.Fatalf("got  %q\nwant %q", got, want)
	}
	if want := "line 4: " + want; !strings.Contains(err.Error(), want) {
		t.Errorf("error %q does not contain %q", err, want)
	}
}

func TestRequiredScopes(t *testing.T) {
	t.Parallel()
	tests := []struct {
		tools []string
		want  []string
	}{
		{nil, nil},
		{[]string{"read", "glob", "list"}, []string{"tools:files"}},
		{[]string{"bash", "grep", "read"}, []string{"tools:execute", "tools:files", "tools:search"}},
		{[]string{"http_request", "schedule_create", "cron_run", "message"}, []string{"tools:control", "tools:network", "tools:schedule"}},
		{[]string{"apply_patch", "screenshot", "spawn_agent"}, []string{"tools:agents", "tools:browser", "tools:write"}},
	}
	for _, tt := range tests {
		d := &fleet.Definition{Tools: tt.tools}
		if got := d.RequiredScopes(); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("RequiredScopes(%q) = %q, want %q", tt.tools, got, tt.want)
		}
	}
}

func TestCheckScopes(t *testing.T) {
	t.Parallel()
	d := mustParseFile(t, "../../examples/slack-helper.toml")
	if err := d.CheckScopes(d.RequiredScopes()); err != nil {
		t.Fatalf("CheckScopes(RequiredScopes()) = %v, want nil", err)
	}
	err := d.CheckScopes([]string{"tools:files", "tools:search", "tools:admin"})
	var se *fleet.ScopeError
	if !errors.As(err, &se) {
		t.Fatalf("got %v, want a *ScopeError", err)
	}
	if !errors.Is(err, fault.ScopeMissing) {
		t.Fatalf("errors.Is(%v, fault.ScopeMissing) = false, want true", err)
	}
	want := []fleet.MissingScope{
		{Scope: "tools:control", Tools: []string{"message", "update_plan"}},
		{Scope: "tools:execute", Tools: []string{"bash"}},
	}
	if !reflect.DeepEqual(se.Missing, want) {
		t.Fatalf("Missing = %+v, want %+v", se.Missing, want)
	}
	wantMsg := `the API key lacks scope "tools:control", needed by tools "message" and "update_plan"; and scope "tools:execute", needed by tool "bash"`
	if err.Error() != wantMsg {
		t.Errorf("got  %q\nwant %q", err, wantMsg)
	}
}

func TestCheckAvailable(t *testing.T) {
	t.Parallel()
	all := fleet.AvailableTools(true)
	noDisplay := fleet.AvailableTools(false)
	if !reflect.DeepEqual(all, fleet.ToolNames()) {
		t.Errorf("AvailableTools(true) = %q, want every tool", all)
	}
	if slices.Contains(noDisplay, "browser_open") || slices.Contains(noDisplay, "screenshot") || len(noDisplay) != len(all)-2 {
		t.Errorf("AvailableTools(false) = %q, want every tool but browser_open and screenshot", noDisplay)
	}
	d, err := fleet.ParseTOML(minimal("[x-agentsfleet]\ntools = [\"read\", \"browser_open\", \"screenshot\"]\n"))
	if err != nil {
		t.Fatal(err)
	}
	if err := d.CheckAvailable(all); err != nil {
		t.Fatalf("CheckAvailable(all) = %v, want nil", err)
	}
	probs := problems(t, d.CheckAvailable(noDisplay))
	if len(probs) != 2 {
		t.Fatalf("got %d problems, want 2: %+v", len(probs), probs)
	}
	want := `tool "browser_open" is not available in this deployment; available: ` + strings.Join(noDisplay, ", ")
	if probs[0].Msg != want || probs[0].Path != "x-agentsfleet.tools" {
		t.Errorf("got %q at %q\nwant %q at x-agentsfleet.tools", probs[0].Msg, probs[0].Path, want)
	}
	// The available list is reported sorted whatever order it came in.
	probs = problems(t, d.CheckAvailable([]string{"screenshot", "read", "bash", "read"}))
	if want := `tool "browser_open" is not available in this deployment; available: bash, read, screenshot`; probs[0].Msg != want {
		t.Errorf("got %q, want %q", probs[0].Msg, want)
	}
	if !d.HasTool("browser_open") || d.HasTool("bash") {
		t.Errorf("HasTool(browser_open, bash) = %v, %v; want true, false", d.HasTool("browser_open"), d.HasTool("bash"))
	}
}

func TestSandboxSizes(t *testing.T) {
	t.Parallel()
	// Each size must be a Fargate CPU/memory combination.
	fargate := map[int][2]int{256: {512, 2048}, 512: {1024, 4096}, 1024: {2048, 8192}, 2048: {4096, 16384}, 4096: {8192, 30720}}
	for _, s := range fleet.SandboxSizes() {
		mem, ok := fargate[s.CPU()]
		if !s.Valid() || !ok || s.MemoryMiB() < mem[0] || s.MemoryMiB() > mem[1] || s.MemoryMiB()%1024 != 0 {
			t.Errorf("size %s = %d CPU, %d MiB; want a valid Fargate combination", s, s.CPU(), s.MemoryMiB())
		}
	}
	if fleet.SandboxSize("huge").Valid() || fleet.SandboxSize("huge").CPU() != 0 {
		t.Error(`SandboxSize("huge") is valid, want not`)
	}
}
