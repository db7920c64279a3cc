package main

import (
	"bytes"
	"context"
	"os"
	"strings"
	"testing"

	"github.com/agentsfleet/agentsfleet/shared/api/apitest"
)

// dropPlan proposes removing update_plan from apitest's ops fleet.
const dropPlan = `[[turn]]
[[turn.tool_call]]
name = "propose_definition"
[turn.tool_call.arguments]
summary = "no more plans"
definition = '''
name = "ops"
instructions = "Keep things running."
[x-agentsfleet]
tools = []
'''

[[turn]]
text = "Proposed: no tools."
`

// The interactive chat against the real API: a line to the agent, its
// answer and diff, "a" applies; the history then says the revision came
// from the chat, through the CLI, and --diff shows it.
func TestImproveAndRevisions(t *testing.T) {
	t.Parallel()
	s := apitest.New(t, apitest.Options{ChatScript: dropPlan})
	args := []string{"--api", s.URL, "--key", s.Admin}
	var out bytes.Buffer
	re := remoteEnv{out: &out, getenv: func(string) string { return "" }}
	if err := re.run(context.Background(), append([]string{"apply", "-f", writeTemp(t, apitest.OpsTOML)}, args...)); err != nil {
		t.Fatal(err)
	}
	out.Reset()
	err := improveCmd(context.Background(), append([]string{"ops"}, args...), strings.NewReader("stop planning\na\n"), &out, func(string) string { return "" })
	got := out.String()
	if err != nil || !strings.Contains(got, "agent> Proposed: no tools.") || !strings.Contains(got, `-  "update_plan",`) ||
		!strings.Contains(got, "applied: fleet ops is at revision 2") || strings.Contains(got, "\x1b[") {
		t.Fatalf("improve = %v:\n%s\nwant the answer, the plain diff and the apply", err, got)
	}
	out.Reset()
	if err := re.run(context.Background(), append([]string{"revisions", "ops"}, args...)); err != nil {
		t.Fatal(err)
	}
	if lines := strings.Split(strings.TrimSpace(out.String()), "\n"); len(lines) != 3 || !strings.Contains(lines[1], "cli") || !strings.Contains(lines[1], "chat imp_") {
		t.Fatalf("revisions =\n%s\nwant revision 2 from the chat via cli above revision 1", out.String())
	}
	out.Reset()
	if err := re.run(context.Background(), append([]string{"revisions", "ops", "--diff", "1", "2"}, args...)); err != nil || !strings.Contains(out.String(), `-  "update_plan",`) {
		t.Fatalf("revisions --diff 1 2 = %v:\n%s", err, out.String())
	}
	if err := re.run(context.Background(), append([]string{"revisions", "ops", "--diff", "1"}, args...)); err == nil {
		t.Fatal("revisions --diff with one revision: no usage error")
	}
}

func writeTemp(t *testing.T, text string) string {
	t.Helper()
	p := t.TempDir() + "/fleet.toml"
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}
