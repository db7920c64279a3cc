package web_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/agentsfleet/agentsfleet/shared/mcp"
	"github.com/agentsfleet/agentsfleet/shared/mcp/mcptest"
	"github.com/agentsfleet/agentsfleet/shared/sandbox/sandboxtest"
	"github.com/agentsfleet/agentsfleet/shared/secret"
	"github.com/agentsfleet/agentsfleet/shared/tool"
	"github.com/agentsfleet/agentsfleet/shared/web"
	"github.com/agentsfleet/agentsfleet/shared/web/wire"
)

// BenchmarkMCPCall measures one MCP tool call over streamable HTTP through
// the webtools path (the JSON payload into Service.Invoke: grant, egress
// dialer, host list, a «secret:NAME» header filled, the result screened and
// fenced) against the same call made directly with the SDK, side by side
// against one local server built with the same SDK.
func BenchmarkMCPCall(b *testing.B) {
	const calls = 50
	mt := mcptest.New()
	h := httptest.NewServer(mt.Handler())
	b.Cleanup(h.Close)
	u, _ := url.Parse(h.URL)
	svc, err := web.NewService(web.Config{AllowAddr: netip.MustParseAddrPort(u.Host), Secrets: secret.Map{"id": "tok"}, Logger: quietLog()})
	if err != nil {
		b.Fatal(err)
	}
	endpoint := h.URL + "/mcp"
	args := json.RawMessage(`{"text":"pong"}`)
	callArgs, _ := json.Marshal(wire.MCPCallArgs{Server: "srv", Tool: "echo", Arguments: args})
	payload, _ := json.Marshal(wire.Request{Tool: wire.ToolMCPCall, Arguments: callArgs, Hosts: []string{"127.0.0.1"},
		Secrets: map[string]string{"TOKEN": "id"}, RunID: "run_bench",
		MCP: []wire.MCPServer{{Name: "srv", URL: endpoint, Headers: map[string]string{"Authorization": "Bearer «secret:TOKEN»"}}}})
	viaWebtools := func() {
		out, err := svc.Invoke(context.Background(), payload)
		var res tool.Result
		if err != nil || json.Unmarshal(out, &res) != nil || res.IsError || !strings.Contains(res.Output, "pong") {
			b.Fatalf("webtools: %s, %v", out, err)
		}
	}
	direct := &http.Client{Transport: &http.Transport{}}
	viaSDK := func() {
		res, err := mcp.Call(context.Background(), direct, endpoint, "echo", args)
		if err != nil || res.IsError || res.Text != "pong" {
			b.Fatalf("direct: %+v, %v", res, err)
		}
	}
	viaWebtools()
	viaSDK()
	var web, sdk time.Duration
	n := 0
	for b.Loop() {
		for range calls {
			t0 := time.Now()
			viaWebtools()
			t1 := time.Now()
			viaSDK()
			web += t1.Sub(t0)
			sdk += time.Since(t1)
			n++
		}
	}
	per := func(d time.Duration) float64 { return float64(d.Microseconds()) / float64(n) }
	sandboxtest.Report(b, "mcp/call-streamable-http", []sandboxtest.Figure{
		{Name: "webtools", Value: per(web), Unit: "µs"},
		{Name: "direct", Value: per(sdk), Unit: "µs"},
		{Name: "ratio", Value: float64(web) / float64(sdk), Unit: "×"},
	}, sandboxtest.Target{Name: "ratio", Max: 1.5})
}
