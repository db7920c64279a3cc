package fleet_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/agentsfleet/agentsfleet/shared/fault"
	"github.com/agentsfleet/agentsfleet/shared/fleet"
)

// fixtures returns every example and testdata Definition that parses.
func fixtures(t *testing.T) []string {
	t.Helper()
	var out []string
	for _, pattern := range []string{"../../examples/*", "testdata/*"} {
		files, err := filepath.Glob(pattern)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range files {
			if _, ok := fleet.FormatOf(f); ok && !strings.Contains(f, "problems") {
				out = append(out, f)
			}
		}
	}
	return out
}

func TestCanonicalRoundTrip(t *testing.T) {
	t.Parallel()
	for _, f := range fixtures(t) {
		t.Run(f, func(t *testing.T) {
			t.Parallel()
			d := mustParseFile(t, f)
			c := d.Canonical()
			back, err := fleet.ParseJSON(c)
			if err != nil {
				t.Fatalf("ParseJSON(Canonical()) = %v, want no error\n%s", err, c)
			}
			if !reflect.DeepEqual(back, d) {
				t.Fatalf("ParseJSON(Canonical()) = %+v\nwant %+v", back, d)
			}
			if again := back.Canonical(); !bytes.Equal(again, c) {
				t.Fatalf("Canonical changed on a round trip:\n%s\n%s", c, again)
			}
			fromTOML, err := fleet.ParseTOML(d.TOML())
			if err != nil {
				t.Fatalf("ParseTOML(TOML()) = %v, want no error\n%s", err, d.TOML())
			}
			if !reflect.DeepEqual(fromTOML, d) {
				t.Fatalf("ParseTOML(TOML()) = %+v\nwant %+v", fromTOML, d)
			}
			if len(d.Hash()) != 64 || d.Hash() != back.Hash() {
				t.Fatalf("Hash = %q and %q, want one 64-digit hex hash", d.Hash(), back.Hash())
			}
		})
	}
}

func TestCanonicalForm(t *testing.T) {
	t.Parallel()
	d := mustParseFile(t, "testdata/same.toml")
	want := `{"name":"same-fleet","instructions":"Check the repository and report.\nUse «secret:GITHUB_TOKEN» only in http_request.\n",` +
		`"model":"anthropic.claude-sonnet-4-5-20250929-v1:0","workdir":"/agent/repo","x-agentsfleet":{` +
		`"tools":["grep","http_request","message","read"],` +
		`"network":{"hosts":["*.example.com","api.github.com","uploads.github.com"]},` +
		`"secrets":{"GITHUB_TOKEN":"prod/github-token"},` +
		`"limits":{"tool_timeout_seconds":60,"budget":{"tokens":500000,"tool_calls":50}},` +
		`"sandbox":{"size":"large"}}}`
	if got := string(d.Canonical()); got != want {
		t.Fatalf("Canonical() =\n%s\nwant\n%s", got, want)
	}
	m, err := d.MarshalJSON()
	if err != nil || string(m) != want {
		t.Fatalf("MarshalJSON() = %s, %v; want the canonical form", m, err)
	}
}

func TestHashIgnoresSpelling(t *testing.T) {
	t.Parallel()
	a := mustParseFile(t, "testdata/same.toml")
	b := mustParseFile(t, "testdata/same.json")
	if a.Hash() != b.Hash() {
		t.Fatalf("hashes of one Definition in two spellings differ: %s, %s", a.Hash(), b.Hash())
	}
	c := a.Clone()
	c.Limits.ToolTimeoutSeconds++
	if c.Hash() == a.Hash() {
		t.Fatal("changing the tool timeout did not change the hash")
	}
	c = a.Clone()
	c.Secrets["OTHER"] = "prod/other"
	if c.Hash() == a.Hash() || len(a.Secrets) != 1 {
		t.Fatal("Clone shares the secrets map, or a new secret did not change the hash")
	}
	// Explicit defaults mean the same as none.
	x, err := fleet.ParseTOML(minimal(""))
	if err != nil {
		t.Fatal(err)
	}
	y, err := fleet.ParseTOML(minimal("workdir = \"/agent\"\n[x-agentsfleet]\ntools = []\n[x-agentsfleet.limits]\ntool_timeout_seconds = 120\n[x-agentsfleet.sandbox]\nsize = \"small\"\n"))
	if err != nil {
		t.Fatal(err)
	}
	if x.Hash() != y.Hash() {
		t.Errorf("explicit defaults changed the hash:\n%s\n%s", x.Canonical(), y.Canonical())
	}
}

func TestDefinitionInsideJSON(t *testing.T) {
	t.Parallel()
	type revision struct {
		Number     int               `json:"number"`
		Definition *fleet.Definition `json:"definition"`
	}
	d := mustParseFile(t, "../../examples/uptime-checker.toml")
	data, err := json.Marshal(revision{Number: 3, Definition: d})
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(data, d.Canonical()) {
		t.Fatalf("marshalled revision %s does not hold the canonical Definition", data)
	}
	var back revision
	if err := json.Unmarshal(data, &back); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back.Definition, d) {
		t.Fatalf("got %+v, want %+v", back.Definition, d)
	}
	// Decoding checks the Definition.
	err = json.Unmarshal([]byte(`{"number":1,"definition":{"name":"x","instructions":"y","x-agentsfleet":{"tools":["nope"]}}}`), &back)
	if !errors.Is(err, fault.DefinitionInvalid) || !strings.Contains(err.Error(), `unknown tool "nope"`) {
		t.Fatalf("got %v, want an unknown tool error", err)
	}
}

func TestNormalize(t *testing.T) {
	t.Parallel()
	d := &fleet.Definition{
		Name:         "go-built",
		Instructions: "Built in Go.",
		Tools:        []string{"read", "bash", "read"},
		Hosts:        fleet.HostList{"HTTPS://API.GitHub.com/x"},
	}
	n, err := d.Normalize()
	if err != nil {
		t.Fatal(err)
	}
	want := &fleet.Definition{
		Name:         "go-built",
		Instructions: "Built in Go.",
		Workdir:      fleet.DefaultWorkdir,
		Tools:        []string{"bash", "read"},
		Hosts:        fleet.HostList{"api.github.com"},
		Limits: fleet.Limits{ToolTimeoutSeconds: fleet.DefaultToolTimeoutSeconds,
			Budget: fleet.Budget{Tokens: fleet.DefaultBudgetTokens, ToolCalls: fleet.DefaultBudgetToolCalls}},
		Sandbox: fleet.Sandbox{Size: fleet.DefaultSandboxSize},
		Slack:   fleet.Slack{OnReply: fleet.ReplyQueue, MergeSeconds: fleet.DefaultMergeSeconds},
	}
	if !reflect.DeepEqual(n, want) {
		t.Fatalf("Normalize() = %+v\nwant %+v", n, want)
	}
	bad := &fleet.Definition{Name: "Bad", Instructions: "x", Limits: fleet.Limits{ToolTimeoutSeconds: -1}}
	probs := problems(t, func() error { _, err := bad.Normalize(); return err }())
	if len(probs) != 2 || probs[0].Line != 0 || probs[0].Path != "name" || probs[1].Path != "x-agentsfleet.limits.tool_timeout_seconds" {
		t.Fatalf("got %+v, want problems at name and the timeout, without lines", probs)
	}
}

func TestTOMLOutputEscapes(t *testing.T) {
	t.Parallel()
	for _, instr := range []string{
		`ends with a quote "`,
		`has """ three quotes and "" two`,
		"\nstarts with a newline",
		"tab\there, CRLF\r\nand a backslash \\ and \\n",
		"control \x01 and DEL \x7f",
		`""""""`,
		"«secret:X» and ünïcödé",
	} {
		d := &fleet.Definition{Name: "esc", Instructions: instr, Workdir: "/agent/a \"b\""}
		n, err := d.Normalize()
		if err != nil {
			t.Fatalf("Normalize(%q) = %v", instr, err)
		}
		back, err := fleet.ParseTOML(n.TOML())
		if err != nil {
			t.Fatalf("ParseTOML(TOML()) for %q = %v\n%s", instr, err, n.TOML())
		}
		if back.Instructions != instr || back.Workdir != n.Workdir {
			t.Errorf("instructions %q came back as %q", instr, back.Instructions)
		}
	}
}
