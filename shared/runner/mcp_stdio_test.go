//go:build linux

package runner_test

import (
	"context"
	"encoding/json"
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

// seeing records every request the model is sent, as JSON.
type seeing struct {
	model.Model
	mu   sync.Mutex
	reqs []string
}

func (s *seeing) Converse(ctx context.Context, req model.Request) (model.Response, error) {
	b, _ := json.Marshal(req.Messages)
	s.mu.Lock()
	s.reqs = append(s.reqs, string(b))
	s.mu.Unlock()
	return s.Model.Converse(ctx, req)
}

func (s *seeing) all() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return strings.Join(s.reqs, "\n")
}

// stdioEnv is a runner whose model answers by task, with the test stdio
// MCP server in its workdir and the webtools function in process (it
// screens for the fleet's secret, whose value is mcpToken).
func stdioEnv(t *testing.T, scripts map[string]string) (*env, *byTask, *seeing) {
	t.Helper()
	bt := newByTask(t, scripts)
	sees := &seeing{Model: bt}
	e := newEnv(t, "[[turn]]\ntext = \"unused\"\n", func(c *runner.Config) { c.Model = sees })
	svc, err := web.NewService(web.Config{Secrets: secret.Map{ghARN: mcpToken}, Grants: grants.New(e.store)})
	if err != nil {
		t.Fatal(err)
	}
	e.local.Register(invoke.Webtools, svc.Invoke)
	mcptest.BuildStdio(t, e.work)
	return e, bt, sees
}

func stdioDefinition(name string, tools ...string) string {
	return definition(name, tools...) + `[x-agentsfleet.secrets]
TOKEN = "` + ghARN + `"
[x-agentsfleet.limits]
tool_timeout_seconds = 5
[[x-agentsfleet.mcp]]
name = "local"
command = ["./mcpstdio"]
`
}

// A stdio server's tools are offered by the allowlist's names, run in the
// sandbox, and come back screened and fenced.
func TestRunCallsAStdioMCPTool(t *testing.T) {
	t.Parallel()
	e, bt, sees := stdioEnv(t, map[string]string{"": `
[[turn]]
[[turn.tool_call]]
name = "mcp__local__echo"
arguments = { text = "hello from stdio" }
[[turn.tool_call]]
name = "mcp__local__read"
arguments = { path = "token.txt" }
[[turn.tool_call]]
name = "mcp__local__env"
arguments = {}
[[turn]]
text = "done"
`})
	e.write("token.txt", "the token is "+mcpToken+"\n")
	d := e.fleet(stdioDefinition("stdiouser", "mcp__local__echo", "mcp__local__read"))
	id := e.start(d, "use the server")
	e.finish(id)
	run, _ := e.ended(id)
	res := e.results(id)
	if run.Status != store.StatusSucceeded || len(res) != 3 {
		t.Fatalf("run %s, results %+v", run.Status, res)
	}
	if res[0].IsError || !strings.Contains(res[0].Output, `<web_content source="stdio MCP server local (MCP tool echo)"`) || !strings.Contains(res[0].Output, "hello from stdio") {
		t.Errorf("echo = %+v, want the fenced text", res[0])
	}
	if res[1].IsError || !strings.Contains(res[1].Output, "the token is «secret:TOKEN»") {
		t.Errorf("read = %+v, want the token screened", res[1])
	}
	if !res[2].IsError || !strings.Contains(res[2].Output, `there is no tool "mcp__local__env"`) {
		t.Errorf("a tool the allowlist does not name = %+v, want refused", res[2])
	}
	if strings.Contains(sees.all(), mcpToken) {
		t.Error("the model was shown the secret's value")
	}
	if got := strings.Join(bt.calls("")[0], ","); got != "mcp__local__echo,mcp__local__read" {
		t.Errorf("offered tools = %s, want the two allowed", got)
	}
}

// By server: every tool is offered; a tool gone mid-run lists the server
// again; a server that exits says so and is started again.
func TestRunStdioMCPByServer(t *testing.T) {
	t.Parallel()
	e, bt, _ := stdioEnv(t, map[string]string{"": `
[[turn]]
[[turn.tool_call]]
name = "mcp__local__drop"
arguments = { name = "echo" }
[[turn]]
[[turn.tool_call]]
name = "mcp__local__echo"
arguments = { text = "x" }
[[turn]]
[[turn.tool_call]]
name = "mcp__local__exit"
arguments = { code = 7 }
[[turn]]
[[turn.tool_call]]
name = "mcp__local__pid"
arguments = {}
[[turn]]
text = "done"
`})
	d := e.fleet(stdioDefinition("stdioall", "mcp__local__*"))
	id := e.start(d, "go")
	e.finish(id)
	res := e.results(id)
	if len(res) != 4 {
		t.Fatalf("results = %+v", res)
	}
	if !res[1].IsError || !strings.Contains(res[1].Output, "no longer has this tool (its tool list changed); its tools are now mcp__local__drop, mcp__local__env, mcp__local__exit") {
		t.Errorf("a dropped tool = %+v", res[1])
	}
	if !res[2].IsError || !strings.Contains(res[2].Output, "exited with code 7; its standard error ends:\nmcpstdio: exiting with code 7 on request. The next call starts it again") {
		t.Errorf("exit = %+v", res[2])
	}
	if res[3].IsError {
		t.Errorf("the call after the exit = %+v, want the server started again", res[3])
	}
	offered := bt.calls("")
	if !strings.Contains(strings.Join(offered[0], ","), "mcp__local__echo") || strings.Contains(strings.Join(offered[2], ","), "mcp__local__echo") {
		t.Errorf("offered %v, want echo first and not after it was dropped", offered)
	}
}

// A child may be given the parent's MCP tools (by name, or covered by the
// parent's mcp__<server>__*), and calls them; one the parent lacks is
// refused.
func TestChildCallsMCPTools(t *testing.T) {
	t.Parallel()
	e, bt, _ := stdioEnv(t, map[string]string{
		"": `
[[turn]]
[[turn.tool_call]]
name = "delegate_agent"
arguments = '{"task": "kid echo", "tools": ["mcp__local__echo"]}'
[[turn.tool_call]]
name = "delegate_agent"
arguments = '{"task": "kid env", "tools": ["mcp__other__env"]}'
[[turn.tool_call]]
name = "delegate_agent"
arguments = '{"task": "kid all"}'
[[turn]]
text = "done"
`,
		"kid echo": `
[[turn]]
[[turn.tool_call]]
name = "mcp__local__pid"
arguments = {}
[[turn.tool_call]]
name = "mcp__local__echo"
arguments = { text = "from the child" }
[[turn]]
text = "child saw: {{last_output}}"
`,
		"kid all": `
[[turn]]
[[turn.tool_call]]
name = "mcp__local__pid"
arguments = {}
[[turn]]
text = "kid all done"
`,
	})
	d := e.fleet(stdioDefinition("stdiokids", "delegate_agent", "mcp__local__*"))
	id := e.start(d, "parent")
	e.finish(id)
	res := e.agentResults(id, "")
	if len(res) != 3 {
		t.Fatalf("results = %+v", res)
	}
	if res[0].IsError || !strings.Contains(res[0].Output, "from the child") {
		t.Errorf("the child given mcp__local__echo = %+v, want its answer to carry the echo", res[0])
	}
	refused := false
	for _, r := range e.results(id) {
		refused = refused || r.IsError && strings.Contains(r.Output, `there is no tool "mcp__local__pid"`)
	}
	if !refused {
		t.Error("the child given mcp__local__echo alone could call mcp__local__pid")
	}
	if !res[1].IsError || !strings.Contains(res[1].Output, `you do not hold "mcp__other__env"`) {
		t.Errorf("a tool the parent lacks = %+v, want refused", res[1])
	}
	if res[2].IsError || !strings.Contains(res[2].Output, "kid all done") {
		t.Errorf("the child with every tool = %+v", res[2])
	}
	if got := bt.calls("kid echo"); len(got) == 0 || strings.Join(got[0], ",") != "mcp__local__echo" {
		t.Errorf("the child was offered %v, want mcp__local__echo alone", got)
	}
	if got := bt.calls("kid all"); len(got) == 0 || !strings.Contains(strings.Join(got[0], ","), "mcp__local__pid") {
		t.Errorf("the child given everything was offered %v", got)
	}
}
