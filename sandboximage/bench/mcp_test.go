package bench_test

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentsfleet/agentsfleet/shared/mcp"
	"github.com/agentsfleet/agentsfleet/shared/mcp/mcptest"
	"github.com/agentsfleet/agentsfleet/shared/sandbox/sandboxtest"
	"github.com/agentsfleet/agentsfleet/shared/sandbox/wire"
)

// BenchmarkMCPStdioCall: a stdio MCP tool call through sandboxd (HTTP, the
// tool's checks, the request to the long-lived confined server over its
// pipes) against the same call made directly with the SDK to the same
// server program, started unconfined with CommandTransport. Both servers
// are started before timing. Target ≤ 2×.
func BenchmarkMCPStdioCall(b *testing.B) {
	dir := sandboxtest.Base(b)
	os.Chmod(filepath.Dir(dir), 0o755)
	os.Chmod(dir, 0o755)
	prog := mcptest.BuildStdio(b, dir)
	a := newAPI(b, dir)
	args, _ := json.Marshal(wire.MCPStdioCallArgs{Server: "local", Command: []string{prog}, Tool: "echo", Arguments: json.RawMessage(`{"text":"pong"}`)})
	if res := a.call(b, wire.MCPStdioCall, string(args)); res.IsError || res.Output != "pong" {
		b.Fatalf("through sandboxd = %+v", res)
	}
	cs, err := mcp.NewClient().Connect(context.Background(), &sdk.CommandTransport{Command: exec.Command(prog)}, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { cs.Close() })
	direct := func() {
		res, err := mcp.CallSession(context.Background(), cs, "echo", json.RawMessage(`{"text":"pong"}`))
		if err != nil || res.Text != "pong" {
			b.Fatalf("direct: %+v, %v", res, err)
		}
	}
	direct()
	p := alternateAll(200, 0,
		func() { a.call(b, wire.MCPStdioCall, string(args)) },
		direct)
	viaP50, directP50 := p[0], p[1]
	sandboxtest.Report(b, "sandboxd/mcp-stdio-call", []sandboxtest.Figure{
		{Name: "sandboxd_p50", Value: millis(viaP50), Unit: "ms"},
		{Name: "direct_p50", Value: millis(directP50), Unit: "ms"},
		{Name: "ratio", Value: float64(viaP50) / float64(directP50), Unit: "×"},
	}, sandboxtest.Target{Name: "ratio", Max: 2})
}
