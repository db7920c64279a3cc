package scripted_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentsfleet/agentsfleet/shared/model"
	"github.com/agentsfleet/agentsfleet/shared/model/scripted"
)

const examples = "../../../examples/scripts"

func TestDefaultLoads(t *testing.T) {
	t.Parallel()
	m := scripted.Default()
	if m == nil || m.Turns() != 3 {
		t.Fatalf("Default() = %v, want the 3-turn demo", m)
	}
	if scripted.Default() != m {
		t.Error("Default() returned a new model on the second call, want the same one")
	}
}

func TestExampleDemoIsTheEmbeddedOne(t *testing.T) {
	t.Parallel()
	canonical, err := os.ReadFile("demo.toml")
	if err != nil {
		t.Fatal(err)
	}
	example, err := os.ReadFile(filepath.Join(examples, "demo.toml"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(canonical, example) {
		t.Errorf("examples/scripts/demo.toml differs from shared/model/scripted/demo.toml, which is the one embedded: copy it over (cp shared/model/scripted/demo.toml examples/scripts/)")
	}
}

func TestExamplesLoad(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob(filepath.Join(examples, "*"))
	if err != nil {
		t.Fatal(err)
	}
	var n int
	for _, f := range files {
		if ext := filepath.Ext(f); ext != ".toml" && ext != ".json" {
			continue
		}
		n++
		t.Run(filepath.Base(f), func(t *testing.T) {
			t.Parallel()
			if _, err := scripted.Load(f); err != nil {
				t.Errorf("Load: %v", err)
			}
		})
	}
	if n < 2 {
		t.Errorf("found %d example scripts in %s, want at least 2", n, examples)
	}
}

// tools answers the demo's calls as a workdir would.
type tools map[string]model.ToolResult

func (ts tools) run(c model.ToolCall) model.ToolResult {
	r, ok := ts[c.Name]
	if !ok {
		r = model.ToolResult{Output: "unknown tool " + c.Name, IsError: true}
	}
	r.CallID, r.Name = c.ID, c.Name
	return r
}

func TestDemoScript(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		tools     tools
		wantCalls []string // the tool of each turn's call, "" for the answer
		wantIn    []string // in the final answer
	}{
		{
			name: "a README",
			tools: tools{
				"list": {Output: "docs/\nREADME.md\ngo.mod"},
				"read": {Output: "1\t# Widgets\n2\t\n3\tWidgets make gadgets."},
			},
			wantCalls: []string{"list", "read", ""},
			wantIn:    []string{"# Widgets", "Widgets make gadgets.", "scripted demo model", "AGENTSFLEET_MODEL_PROVIDER", "bedrock", "anthropic", "openai"},
		},
		{
			name:      "no README",
			tools:     tools{"list": {Output: "main.go\ngo.mod"}},
			wantCalls: []string{"list", ""},
			wantIn:    []string{"main.go\ngo.mod", "no README.md", "AGENTSFLEET_MODEL_PROVIDER"},
		},
		{
			name: "list not allowed",
			tools: tools{
				"list": {Output: "list is not among this fleet's tools", IsError: true},
				"bash": {Output: "cmd/\nMakefile\n[exit code 0]"},
			},
			wantCalls: []string{"list", "bash", ""},
			wantIn:    []string{"Makefile", "AGENTSFLEET_MODEL_PROVIDER"},
		},
		{
			name:      "no tools at all",
			tools:     tools{},
			wantCalls: []string{"list", "bash", ""},
			wantIn:    []string{"could not look at the workdir: unknown tool bash", "AGENTSFLEET_MODEL_PROVIDER"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			m := scripted.Default()
			conv := []model.Message{user("what is in here?")}
			var resp model.Response
			for i, want := range tt.wantCalls {
				resp, conv = step(t, m, conv, tt.tools.run)
				var got string
				if calls := resp.Message.ToolCalls(); len(calls) > 0 {
					got = calls[0].Name
				}
				if got != want {
					t.Fatalf("turn %d calls %q, want %q (answer: %q)", i+1, got, want, resp.Message.Text())
				}
				if i == 0 && !strings.Contains(resp.Message.Text(), `"what is in here?"`) {
					t.Errorf("first text = %q, want it to quote the input", resp.Message.Text())
				}
			}
			if resp.Stop != model.StopEndTurn {
				t.Errorf("last stop = %q, want %q", resp.Stop, model.StopEndTurn)
			}
			for _, want := range tt.wantIn {
				if !strings.Contains(resp.Message.Text(), want) {
					t.Errorf("answer = %q, want it to contain %q", resp.Message.Text(), want)
				}
			}
			// The demo ends there: one more call is the end of the script.
			_, err := m.Converse(context.Background(), model.Request{Messages: append(conv, user("more"))})
			var me *model.Error
			if len(tt.wantCalls) == 3 && (!errors.As(err, &me) || !strings.Contains(me.Message, "no turn 4")) {
				t.Errorf("Converse after the demo = %v, want the end of the script", err)
			}
		})
	}
}
