package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/agentsfleet/agentsfleet/shared/fleet"
	"github.com/agentsfleet/agentsfleet/shared/sandbox"
)

func TestToolsJSON(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	if err := tools([]string{"--output", "json"}, &out, browserEnv(browserOff)); err != nil {
		t.Fatal(err)
	}
	var list []toolJSON
	if err := json.Unmarshal(out.Bytes(), &list); err != nil {
		t.Fatalf("not a JSON array of tools: %v\n%s", err, out.String())
	}
	if len(list) != len(fleet.ToolNames()) {
		t.Fatalf("%d tools listed, the catalog has %d", len(list), len(fleet.ToolNames()))
	}
	for i, name := range fleet.ToolNames() {
		got := list[i]
		info, _ := fleet.LookupTool(name)
		if got.Name != name || got.RunsIn != info.RunsIn || got.Scope != info.Scope || got.Description == "" || !json.Valid(got.Schema) {
			t.Errorf("tool %d = %+v, want %s in the %s with scope %s, a description and a schema", i, got, name, info.RunsIn, info.Scope)
		}
		if want := info.RunsIn != fleet.InDisplay; got.Available != want {
			t.Errorf("%s: available %v, want %v", name, got.Available, want)
		}
	}
}

func TestToolsText(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	if err := tools([]string{"read", "screenshot"}, &out, browserEnv(browserOff)); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"read — runs in the sandbox, scope tools:files, built-in\n",
		"    Reads a text file and returns its lines numbered",
		"  schema: " + string(sandbox.Read.Schema()) + "\n",
		"screenshot — runs in the display, scope tools:browser, not available here: AGENTSFLEET_BROWSER=off turns them off\n",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
	if strings.Contains(out.String(), "grep —") {
		t.Error("names given, yet other tools are listed")
	}
}

func TestToolsUsage(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{{"tools", "--output", "yaml"}, {"tools", "raed"}, {"tools", "--bogus"}} {
		var out bytes.Buffer
		if err := run(context.Background(), args, &out, &out); !errors.Is(err, errUsage) {
			t.Errorf("run(%q) = %v, want a usage error", args, err)
		}
	}
}

// browserEnv is an environment with AGENTSFLEET_BROWSER=v alone.
func browserEnv(v string) func(string) string {
	return func(k string) string {
		if k == envBrowser {
			return v
		}
		return ""
	}
}

// TestToolsWithChromium: with a Chromium found, the display tools are
// available, as the local sandboxes then give them a browser.
func TestToolsWithChromium(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	if err := tools([]string{"--output", "json", "browser_open", "screenshot", "read"}, &out, browserEnv(fakeChromium(t))); err != nil {
		t.Fatal(err)
	}
	var list []toolJSON
	if err := json.Unmarshal(out.Bytes(), &list); err != nil || len(list) != 3 {
		t.Fatalf("tools = %s, %v; want three", out.String(), err)
	}
	for _, tool := range list {
		if !tool.Available {
			t.Errorf("%s not available with a Chromium", tool.Name)
		}
	}
	if err := tools(nil, &out, browserEnv("/no/such/chromium")); !errors.Is(err, errUsage) || !strings.Contains(err.Error(), "/no/such/chromium") {
		t.Errorf("tools with AGENTSFLEET_BROWSER=/no/such/chromium = %v, want a usage error naming it", err)
	}
}
