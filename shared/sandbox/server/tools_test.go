package server_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"slices"
	"strconv"
	"testing"

	"github.com/agentsfleet/agentsfleet/shared/fleet"
	"github.com/agentsfleet/agentsfleet/shared/sandbox"
	"github.com/agentsfleet/agentsfleet/shared/sandbox/confine"
	"github.com/agentsfleet/agentsfleet/shared/sandbox/server"
	"github.com/agentsfleet/agentsfleet/shared/sandbox/wire"
	"github.com/agentsfleet/agentsfleet/shared/tool"
)

func TestToolsRegistry(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	tools := server.Tools(server.Config{Roots: f.roots})
	for _, tl := range tools {
		if c, ok := tl.(io.Closer); ok {
			defer c.Close()
		}
	}
	// sandboxd serves exactly the contracts the runner offers, and the
	// catalog's sandbox and display tools.
	specs := map[string]tool.Spec{}
	for _, s := range sandbox.Specs() {
		specs[s.Name()] = s
	}
	var catalog []string
	for _, info := range fleet.Tools() {
		if info.RunsIn == fleet.InSandbox || info.RunsIn == fleet.InDisplay {
			catalog = append(catalog, info.Name)
		}
	}
	// Besides them, the runner's tools for declared tools and stdio MCP
	// servers, which are in no catalog: no Definition can offer them to
	// the model.
	own := []string{wire.DeclaredTool, wire.MCPStdioList, wire.MCPStdioCall}
	served := slices.DeleteFunc(tool.Names(tools), func(n string) bool { return slices.Contains(own, n) })
	if len(served) != len(tools)-len(own) {
		t.Errorf("sandboxd serves %q, want %q among them", tool.Names(tools), own)
	}
	for _, n := range own {
		if _, ok := fleet.LookupTool(n); ok {
			t.Errorf("%q is in the catalog: the model could be offered it", n)
		}
	}
	if got, want := served, tool.Names(sandbox.Specs()); !slices.Equal(got, want) {
		t.Errorf("sandboxd serves %q; the sandbox specs are %q", got, want)
	}
	if !slices.Equal(served, catalog) {
		t.Errorf("sandboxd serves %q; the catalog's sandbox and display tools are %q", served, catalog)
	}
	for _, tl := range tools {
		s := specs[tl.Name()]
		if s == nil {
			continue
		}
		if tl.Description() != s.Description() || !bytes.Equal(tl.Schema(), s.Schema()) || tl.Info() != s.Info() {
			t.Errorf("%s: sandboxd's description, schema or place differs from sandbox.%s's", tl.Name(), tl.Name())
		}
	}
	if _, err := server.New(server.Options{Token: testToken, Tools: append(tools, tools[0])}); err == nil {
		t.Fatal("New accepted two tools with one name")
	}
	if _, err := server.Call(context.Background(), tools, "nope", []byte(`{}`)); !errors.Is(err, server.ErrUnknownTool) {
		t.Fatalf("Call(nope) = %v, want ErrUnknownTool", err)
	}
	if _, err := server.Call(context.Background(), tools, "read", []byte(`[]`)); !errors.Is(err, server.ErrNotObject) {
		t.Fatalf("Call(read, []) = %v, want ErrNotObject", err)
	}
}

// sandboxd's reserve of threads counts against its commands' process limit
// where they share a uid, so their limit is raised by as much.
func TestCommandsProcessLimit(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	tools := server.Tools(server.Config{Roots: f.roots})
	for _, tool := range tools {
		if c, ok := tool.(io.Closer); ok {
			defer c.Close()
		}
	}
	res, err := server.Call(context.Background(), tools, "bash", []byte(`{"command":"awk '/Max processes/ {print $3}' /proc/self/limits"}`))
	if err != nil {
		t.Fatal(err)
	}
	want := strconv.FormatUint(confine.DefaultLimits.Processes+96, 10) + "\n[exit code 0]"
	if res.Output != want {
		t.Fatalf("the process limit of a command: %q, want %q", res.Output, want)
	}
}
