//go:build linux

package runner_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/agentsfleet/agentsfleet/shared/model"
	"github.com/agentsfleet/agentsfleet/shared/runner"
	"github.com/agentsfleet/agentsfleet/shared/sandbox"
	"github.com/agentsfleet/agentsfleet/shared/store"
)

// declaredFleet declares the tools TestDeclaredTools calls, with a tool
// timeout of one second.
const declaredFleet = `name = "declared"
instructions = "Use the declared tools."

[x-agentsfleet]
tools = ["read"]

[x-agentsfleet.limits]
tool_timeout_seconds = 1

[[tools.declared]]
name = "probe"
description = "Shows what the command is given."
command = '''printf 'stdin=%s\n' "$(cat)"; echo "path=$AGENTSFLEET_ARG_PATH n=$AGENTSFLEET_ARG_N"; cat "$AGENTSFLEET_ARG_PATH"; touch probe.ran'''
parameters = { type = "object", properties = { path = { type = "string" }, n = { type = "integer", minimum = 1 } }, required = ["path"], additionalProperties = false }

[[tools.declared]]
name = "slow"
description = "Sleeps."
command = "echo sleeping; sleep 60"
parameters = { type = "object" }

[[tools.declared]]
name = "big"
description = "Prints 100000 bytes."
command = "head -c 50000 /dev/zero | tr '\\0' a; head -c 50000 /dev/zero | tr '\\0' b"
parameters = { type = "object" }

[[tools.declared]]
name = "fail"
description = "Fails."
command = "echo broken >&2; exit 3"
parameters = { type = "object" }

[[tools.declared]]
name = "escape"
description = "Writes where it is told."
command = 'echo x > "$AGENTSFLEET_ARG_TARGET"'
parameters = { type = "object", properties = { target = { type = "string" } } }
`

// offered records the tools each model call was offered.
type offered struct {
	model.Model
	mu    sync.Mutex
	tools [][]model.Tool
	last  []model.Message // the last call's conversation
}

func (o *offered) Converse(ctx context.Context, req model.Request) (model.Response, error) {
	o.mu.Lock()
	o.tools = append(o.tools, req.Tools)
	o.last = req.Messages
	o.mu.Unlock()
	return o.Model.Converse(ctx, req)
}

// TestDeclaredTools: a run calls declared tools through a real sandboxd:
// good arguments reach the command on stdin and in the environment, bad
// ones are refused before anything runs, and a timeout, a large output, a
// non-zero exit and a write outside the writable roots come back as bash's
// would.
func TestDeclaredTools(t *testing.T) {
	t.Parallel()
	rec := &offered{}
	e := newEnv(t, `
[[turn]]
[[turn.tool_call]]
name = "probe"
arguments = { path = 3 }
[[turn.tool_call]]
name = "probe"
arguments = { path = "a.txt", n = 0 }
[[turn.tool_call]]
name = "probe"
arguments = { path = "a.txt", n = 2 }
[[turn.tool_call]]
name = "slow"
arguments = {}
[[turn.tool_call]]
name = "big"
arguments = {}
[[turn.tool_call]]
name = "fail"
arguments = {}
[[turn.tool_call]]
name = "escape"
arguments = { target = "/etc/agentsfleet-declared" }
[[turn.tool_call]]
name = "declared"
arguments = { name = "probe", command = "touch model.ran", arguments = {} }
[[turn]]
text = "done"
`, func(c *runner.Config) { rec.Model = c.Model; c.Model = rec })
	e.write("a.txt", "contents of a\n")
	d := e.fleet(declaredFleet)
	id := e.start(d, "go")
	if err := e.runner.Run(ctx, id); err != nil {
		t.Fatal(err)
	}
	run, _ := e.ended(id)
	if run.Status != store.StatusSucceeded {
		t.Fatalf("run %s: %s", run.Status, run.StatusReason)
	}

	// The model is offered each declared tool as declared, beside read.
	var names []string
	for _, tl := range rec.tools[0] {
		names = append(names, tl.Name)
		if tl.Name == "probe" && (tl.Description != "Shows what the command is given." ||
			string(tl.Schema) != `{"additionalProperties":false,"properties":{"n":{"minimum":1,"type":"integer"},"path":{"type":"string"}},"required":["path"],"type":"object"}`) {
			t.Errorf("probe offered as %q %s", tl.Description, tl.Schema)
		}
	}
	slices.Sort(names)
	if want := []string{"big", "escape", "fail", "probe", "read", "slow"}; !slices.Equal(names, want) {
		t.Errorf("offered %q, want %q", names, want)
	}

	// What the model was shown (the events' copies are cut shorter).
	var res []model.ToolResult
	for _, m := range rec.last {
		for _, p := range m.Content {
			if p.ToolResult != nil {
				res = append(res, *p.ToolResult)
			}
		}
	}
	if len(res) != 8 {
		t.Fatalf("got %d results, want 8: %+v", len(res), res)
	}
	check := func(i int, name string, isError bool, wantPrefix, wantSuffix string) {
		t.Helper()
		r := res[i]
		if r.Name != name || r.IsError != isError || !strings.HasPrefix(r.Output, wantPrefix) || !strings.HasSuffix(r.Output, wantSuffix) {
			t.Errorf("result %d = %s %.300q…%.100q (%d bytes, is_error=%v), want %s starting %.300q, ending %.100q (is_error=%v)", i, r.Name, r.Output, r.Output[max(0, len(r.Output)-100):], len(r.Output), r.IsError, name, wantPrefix, wantSuffix, isError)
		}
	}
	check(0, "probe", true, "probe: the arguments do not match the tool's parameters: at /path: got number, want string", "")
	check(1, "probe", true, "probe: the arguments do not match the tool's parameters: at /n: minimum: got 0, want 1", "")
	check(2, "probe", false, "stdin={\"n\":2,\"path\":\"a.txt\"}\npath=a.txt n=2\ncontents of a\n[exit code 0]", "")
	check(3, "slow", true, "sleeping\n[timed out after 1 second: the command and every process it started were killed]", "")
	check(4, "big", false, strings.Repeat("a", sandbox.BashOutputHead)+"\n[... 70000 bytes of output cut from the middle ...]\n", strings.Repeat("b", sandbox.BashOutputTail)+"\n[exit code 0]")
	check(5, "fail", true, "broken\n[exit code 3]", "")
	if os.Geteuid() == 0 {
		check(6, "escape", true, "/bin/sh: 1: cannot create /etc/agentsfleet-declared: Permission denied\n", "[exit code 2]")
	}
	check(7, "declared", true, `there is no tool "declared" for this fleet; its tools are big, escape, fail, probe, read, slow`, "")

	// The command ran once: for the good arguments alone.
	if _, err := os.Stat(filepath.Join(e.work, "probe.ran")); err != nil {
		t.Errorf("the good call did not run its command: %v", err)
	}
	if _, err := os.Stat(filepath.Join(e.work, "model.ran")); err == nil {
		t.Error("the model ran a command of its own through sandboxd's declared tool")
	}
	if _, err := os.Stat("/etc/agentsfleet-declared"); err == nil {
		os.Remove("/etc/agentsfleet-declared")
		t.Error("a declared command wrote outside the writable roots")
	}
}

// TestChildGetsADeclaredTool: a child given a declared tool by name runs it
// in the run's sandbox; a child not given it has no such tool.
func TestChildGetsADeclaredTool(t *testing.T) {
	t.Parallel()
	e, _ := childEnv(t, map[string]string{
		"parent": `[[turn]]
[[turn.tool_call]]
name = "delegate_agent"
arguments = '{"task": "given", "tools": ["greet"]}'
[[turn.tool_call]]
name = "delegate_agent"
arguments = '{"task": "not given", "tools": ["read"]}'
[[turn]]
text = "done"
`,
		"given": `[[turn]]
[[turn.tool_call]]
name = "greet"
arguments = { who = "child" }
[[turn]]
text = "{{last_output}}"
`,
		"not given": `[[turn]]
[[turn.tool_call]]
name = "greet"
arguments = { who = "child" }
[[turn]]
text = "{{last_error}}"
`,
	})
	d := e.fleet(`name = "kids"
instructions = "Split the work."
[x-agentsfleet]
tools = ["delegate_agent", "read"]

[[tools.declared]]
name = "greet"
description = "Greets."
command = 'echo "hello $AGENTSFLEET_ARG_WHO"'
parameters = { type = "object", properties = { who = { type = "string" } } }
`)
	runID := e.start(d, "parent")
	e.finish(runID)
	res := e.agentResults(runID, "")
	if len(res) != 2 || !strings.Contains(res[0].Output, "hello child") || !strings.Contains(res[1].Output, `there is no tool \"greet\"`) {
		t.Fatalf("delegates = %+v; want the first child greeted, the second without the tool", res)
	}
}
