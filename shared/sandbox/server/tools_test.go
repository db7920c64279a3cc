package server_test

import (
	"context"
	"errors"
	"io"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/agentsfleet/agentsfleet/shared/sandbox/confine"
	"github.com/agentsfleet/agentsfleet/shared/sandbox/server"
)

func TestToolsRegistry(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	tools := server.Tools(server.Config{Roots: f.roots})
	var names []string
	for _, tool := range tools {
		names = append(names, tool.Name())
		if strings.TrimSpace(tool.Description()) == "" {
			t.Errorf("%s has no description", tool.Name())
		}
		if c, ok := tool.(io.Closer); ok {
			defer c.Close()
		}
	}
	want := []string{"read", "glob", "list", "grep", "bash", "exec_command", "write_stdin", "apply_patch"}
	if !slices.Equal(names, want) {
		t.Fatalf("tools = %q, want %q", names, want)
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
