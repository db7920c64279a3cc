//go:build linux

package runner_test

import (
	"context"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/agentsfleet/agentsfleet/shared/invoke"
	"github.com/agentsfleet/agentsfleet/shared/mcp/mcptest"
	"github.com/agentsfleet/agentsfleet/shared/model"
	"github.com/agentsfleet/agentsfleet/shared/runner"
	"github.com/agentsfleet/agentsfleet/shared/secret"
	"github.com/agentsfleet/agentsfleet/shared/store"
	"github.com/agentsfleet/agentsfleet/shared/web"
	"github.com/agentsfleet/agentsfleet/shared/web/grants"
)

const mcpToken = "tok_9xQ2mV7rL4wN8bF3"

// systems records the system prompt and the tools of every model call.
type systems struct {
	model.Model
	mu      sync.Mutex
	prompts []string
	tools   [][]string
}

func (s *systems) Converse(ctx context.Context, req model.Request) (model.Response, error) {
	var names []string
	for _, t := range req.Tools {
		names = append(names, t.Name)
	}
	s.mu.Lock()
	s.prompts = append(s.prompts, req.System)
	s.tools = append(s.tools, names)
	s.mu.Unlock()
	return s.Model.Converse(ctx, req)
}

// mcpEnv is a runner whose webtools function is the real handler, in
// process as the local stack runs it, reading grants from the table, with
// its escape hatch admitting the MCP server h.
func mcpEnv(t *testing.T, script string, h *httptest.Server) (*env, *systems) {
	t.Helper()
	var sys *systems
	e := newEnv(t, script, func(c *runner.Config) { sys = &systems{Model: c.Model}; c.Model = sys })
	u, _ := url.Parse(h.URL)
	svc, err := web.NewService(web.Config{AllowAddr: netip.MustParseAddrPort(u.Host), Secrets: secret.Map{ghARN: mcpToken}, Grants: grants.New(e.store)})
	if err != nil {
		t.Fatal(err)
	}
	e.local.Register(invoke.Webtools, svc.Invoke)
	return e, sys
}

func mcpDefinition(name, url string, tools ...string) string {
	return definition(name, tools...) + `[x-agentsfleet.network]
hosts = ["127.0.0.1"]
[x-agentsfleet.secrets]
TOKEN = "` + ghARN + `"
[x-agentsfleet.limits]
tool_timeout_seconds = 2
[[x-agentsfleet.mcp]]
name = "srv"
url = "` + url + `/mcp"
headers = { Authorization = "Bearer «secret:TOKEN»" }
`
}

func TestRunCallsAnMCPTool(t *testing.T) {
	t.Parallel()
	mt := mcptest.New()
	h := httptest.NewServer(mt.Handler())
	defer h.Close()
	e, sys := mcpEnv(t, `
[[turn]]
[[turn.tool_call]]
name = "mcp__srv__echo"
arguments = { text = "hello from the server" }
[[turn.tool_call]]
name = "mcp__srv__whoami"
arguments = {}
[[turn.tool_call]]
name = "mcp__srv__fail"
arguments = {}
[[turn]]
text = "done"
`, h)
	d := e.fleet(mcpDefinition("mcpuser", h.URL, "mcp__srv__echo", "mcp__srv__whoami"))
	id := e.start(d, "use the server")
	if err := e.runner.Run(ctx, id); err != nil {
		t.Fatal(err)
	}
	run, _ := e.ended(id)
	res := e.results(id)
	if run.Status != store.StatusSucceeded || len(res) != 3 {
		t.Fatalf("run %s, results %+v", run.Status, res)
	}
	if res[0].IsError || !strings.Contains(res[0].Output, "<web_content source=") || !strings.Contains(res[0].Output, "hello from the server") {
		t.Errorf("echo = %+v, want the fenced text", res[0])
	}
	if res[1].IsError || !strings.Contains(res[1].Output, "you sent: Bearer «secret:TOKEN»") || strings.Contains(res[1].Output, mcpToken) {
		t.Errorf("whoami = %+v, want the token screened", res[1])
	}
	if !res[2].IsError || !strings.Contains(res[2].Output, `there is no tool "mcp__srv__fail"`) {
		t.Errorf("a tool the allowlist does not name = %+v, want refused", res[2])
	}
	if !mt.Received("Bearer " + mcpToken) {
		t.Errorf("the server received %q, want the filled token", mt.Authorizations())
	}
	if got := strings.Join(sys.tools[0], ","); got != "mcp__srv__echo,mcp__srv__whoami" {
		t.Errorf("offered tools = %s, want the two allowed", got)
	}
}

func TestRunMCPToolListChanges(t *testing.T) {
	t.Parallel()
	mt := mcptest.New()
	h := httptest.NewServer(mt.Handler())
	defer h.Close()
	e, sys := mcpEnv(t, `
[[turn]]
[[turn.tool_call]]
name = "mcp__srv__echo"
arguments = { text = "x" }
[[turn]]
text = "done"
`, h)
	// The server drops echo once the run has listed it.
	var once sync.Once
	e.onNote = func(runner.Note) { once.Do(func() { mt.RemoveTools("echo") }) }
	d := e.fleet(mcpDefinition("changing", h.URL, "mcp__srv__*"))
	id := e.start(d, "go")
	if err := e.runner.Run(ctx, id); err != nil {
		t.Fatal(err)
	}
	res := e.results(id)
	if len(res) != 1 || !res[0].IsError || !strings.Contains(res[0].Output, "no longer has this tool (its tool list changed); its tools are now mcp__srv__fail, mcp__srv__mixed, mcp__srv__whoami") {
		t.Fatalf("results = %+v", res)
	}
	if got := strings.Join(sys.tools[1], ","); strings.Contains(got, "echo") {
		t.Errorf("the next turn still offers echo: %s", got)
	}
}

func TestRunGoesOnWithoutAnMCPServerThatHangs(t *testing.T) {
	t.Parallel()
	h := httptest.NewServer(mcptest.Hanging())
	defer h.Close()
	e, sys := mcpEnv(t, "[[turn]]\ntext = \"answered without it\"\n", h)
	d := e.fleet(mcpDefinition("hangs", h.URL, "mcp__srv__*", "read"))
	id := e.start(d, "go")
	if err := e.runner.Run(ctx, id); err != nil {
		t.Fatal(err)
	}
	run, _ := e.ended(id)
	if run.Status != store.StatusSucceeded {
		t.Fatalf("run %s, want succeeded", run.Status)
	}
	if !strings.Contains(sys.prompts[0], "The MCP server srv is unavailable in this run") || !strings.Contains(sys.prompts[0], "did not answer within 2s") {
		t.Errorf("system prompt = %q, want the unavailable server named with why", sys.prompts[0])
	}
	if got := strings.Join(sys.tools[0], ","); got != "read" {
		t.Errorf("offered tools = %s, want read alone", got)
	}
}
