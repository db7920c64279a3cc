package fleet_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/agentsfleet/agentsfleet/shared/fault"
	"github.com/agentsfleet/agentsfleet/shared/fleet"
)

// declaredDoc is a Definition declaring one tool whose table body is tool.
func declaredDoc(tool string) []byte {
	return []byte("name = \"a\"\ninstructions = \"b\"\n\n[[tools.declared]]\n" + tool)
}

const goodTool = "name = \"count\"\ndescription = \"Counts.\"\ncommand = \"wc -c\"\nparameters = { type = \"object\", properties = { path = { type = \"string\" } }, required = [\"path\"] }\n"

func TestDeclaredParses(t *testing.T) {
	t.Parallel()
	d := mustParseFile(t, "testdata/declared.toml")
	if got, want := d.AllowedTools(), []string{"echo_args", "word_count"}; !slices.Equal(got, want) {
		t.Fatalf("AllowedTools = %q, want %q", got, want)
	}
	wc, ok := d.Declared("word_count")
	if !ok {
		t.Fatal("word_count is not declared")
	}
	want := `{"additionalProperties":false,"properties":{"limit":{"default":10,"maximum":1500,"minimum":1,"type":"integer"},"path":{"minLength":1,"type":"string"}},"required":["path"],"type":"object"}`
	if string(wc.Parameters) != want {
		t.Errorf("Parameters = %s, want %s", wc.Parameters, want)
	}
	if wc.Command != `wc -w < "$AGENTSFLEET_ARG_PATH"` || wc.Description != "Counts the words of a file." {
		t.Errorf("word_count = %+v", wc)
	}
	// The TOML and JSON forms give the same Definition and hash.
	j, err := fleet.ParseJSON(d.Canonical())
	if err != nil {
		t.Fatal(err)
	}
	tm, err := fleet.ParseTOML(d.TOML())
	if err != nil {
		t.Fatalf("ParseTOML(TOML()): %v\n%s", err, d.TOML())
	}
	if !reflect.DeepEqual(j, d) || !reflect.DeepEqual(tm, d) || tm.Hash() != d.Hash() {
		t.Fatalf("round trips differ:\n%s\n%s", d.Canonical(), d.TOML())
	}
	// A clone owns its parameters.
	c := d.Clone()
	c.DeclaredTools[0].Parameters[0] = 'X'
	if d.DeclaredTools[0].Parameters[0] == 'X' {
		t.Fatal("Clone shares the parameters' bytes")
	}
}

func TestDeclaredChangesTheHash(t *testing.T) {
	t.Parallel()
	a, err := fleet.ParseTOML(declaredDoc(goodTool))
	if err != nil {
		t.Fatal(err)
	}
	b, err := fleet.ParseTOML(declaredDoc(strings.Replace(goodTool, "wc -c", "wc -l", 1)))
	if err != nil {
		t.Fatal(err)
	}
	plain, err := fleet.ParseTOML([]byte("name = \"a\"\ninstructions = \"b\"\n"))
	if err != nil {
		t.Fatal(err)
	}
	if a.Hash() == b.Hash() || a.Hash() == plain.Hash() {
		t.Fatal("a declared tool's command does not change the hash")
	}
	if strings.Contains(string(plain.Canonical()), `"tools"`) {
		t.Fatalf("a Definition declaring nothing changed its canonical form: %s", plain.Canonical())
	}
}

func TestDeclaredInTheAllowlist(t *testing.T) {
	t.Parallel()
	d, err := fleet.ParseTOML([]byte("name = \"a\"\ninstructions = \"b\"\n[x-agentsfleet]\ntools = [\"count\", \"read\"]\n\n[[tools.declared]]\n" + goodTool))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(d.Tools, []string{"read"}) || !slices.Equal(d.AllowedTools(), []string{"count", "read"}) {
		t.Fatalf("Tools = %q, AllowedTools = %q; want the declared tool held by its declaration alone", d.Tools, d.AllowedTools())
	}
}

func TestDeclaredProblems(t *testing.T) {
	t.Parallel()
	without := func(key string) string {
		var keep []string
		for _, l := range strings.Split(strings.TrimSuffix(goodTool, "\n"), "\n") {
			if !strings.HasPrefix(l, key+" =") {
				keep = append(keep, l)
			}
		}
		return strings.Join(keep, "\n") + "\n"
	}
	with := func(key, value string) string { return without(key) + key + " = " + value + "\n" }
	tests := []struct {
		name, tool, want string
	}{
		{"no name", without("name"), "tools.declared[0].name: required"},
		{"bad name", with("name", `"Run-Tests"`), `tools.declared[0].name: "Run-Tests" is not a valid tool name; a declared tool's name is 1 to 64 lowercase`},
		{"long name", with("name", `"`+strings.Repeat("a", 65)+`"`), "tools.declared[0].name: \"aaaa"},
		{"digit first", with("name", `"9lives"`), `tools.declared[0].name: "9lives" is not a valid tool name`},
		{"shadows bash", with("name", `"bash"`), `tools.declared[0].name: "bash" is the name of agentsfleet's own sandbox tool; a declared tool may not shadow it`},
		{"shadows a control tool", with("name", `"spawn_agent"`), `tools.declared[0].name: "spawn_agent" is the name of agentsfleet's own runner tool`},
		{"shadows a web tool", with("name", `"websearch"`), `tools.declared[0].name: "websearch" is the name of agentsfleet's own webtools tool`},
		{"mcp prefix", with("name", `"mcp__git__push"`), `tools.declared[0].name: "mcp__git__push" starts with "mcp__", which is reserved for the tools of MCP servers`},
		{"name not a string", with("name", "3"), "tools.declared[0].name: want a string, got an integer"},
		{"no description", without("description"), "tools.declared[0].description: required"},
		{"blank description", with("description", `"  "`), "tools.declared[0].description: required: tell the model what the tool does"},
		{"long description", with("description", `"`+strings.Repeat("d", fleet.MaxDeclaredDescriptionBytes+1)+`"`), "tools.declared[0].description: 8193 bytes long; at most 8192 are allowed"},
		{"no command", without("command"), "tools.declared[0].command: required"},
		{"blank command", with("command", `""`), "tools.declared[0].command: required: the shell command line to run"},
		{"NUL in command", with("command", `"a\u0000b"`), "tools.declared[0].command: contains a NUL character"},
		{"long command", with("command", `"`+strings.Repeat("c", fleet.MaxDeclaredCommandBytes+1)+`"`), "tools.declared[0].command: 16385 bytes long; at most 16384"},
		{"no parameters", without("parameters"), "tools.declared[0].parameters: required: the JSON Schema of the arguments"},
		{"parameters a string", with("parameters", `"{}"`), "tools.declared[0].parameters: want a JSON Schema object (a table), got a string"},
		{"not an object schema", with("parameters", `{ type = "string" }`), `tools.declared[0].parameters.type: the arguments are one JSON object: want type = "object", got "string"`},
		{"no type", with("parameters", `{ properties = {} }`), `tools.declared[0].parameters.type: the arguments are one JSON object: want type = "object", got none`},
		{"bad schema", with("parameters", `{ type = "object", properties = { n = { type = "integr" } } }`), "tools.declared[0].parameters: not a valid JSON Schema:"},
		{"bad keyword value", with("parameters", `{ type = "object", minProperties = -1 }`), "tools.declared[0].parameters: not a valid JSON Schema:"},
		{"bad pattern", with("parameters", `{ type = "object", properties = { n = { type = "string", pattern = "(" } } }`), "tools.declared[0].parameters: not a valid JSON Schema:"},
		{"file reference", with("parameters", `{ type = "object", properties = { n = { "$ref" = "file:///etc/hostname" } } }`), "tools.declared[0].parameters: not a JSON Schema of its own: it refers to file:///etc/hostname"},
		{"web reference", with("parameters", `{ type = "object", "$ref" = "https://example.com/s.json" }`), "tools.declared[0].parameters: not a JSON Schema of its own: it refers to https://example.com/s.json"},
		{"date in schema", with("parameters", `{ type = "object", default = 2024-01-01 }`), "tools.declared[0].parameters: a date or time at default is not a JSON value"},
		{"dash in a parameter", with("parameters", `{ type = "object", properties = { "file-path" = { type = "string" } } }`), `tools.declared[0].parameters.properties.file-path: "file-path" cannot be a parameter name; a parameter's name is also an environment variable's`},
		{"scrubbed parameter", with("parameters", `{ type = "object", properties = { api_key = { type = "string" } } }`), `tools.declared[0].parameters.properties.api_key: "api_key" cannot be a parameter name: the sandbox keeps variables whose name ends in _KEY (here AGENTSFLEET_ARG_API_KEY)`},
		{"secret parameter", with("parameters", `{ type = "object", properties = { my_token = { type = "string" } } }`), `tools.declared[0].parameters.properties.my_token: "my_token" cannot be a parameter name: the sandbox keeps variables whose name holds TOKEN`},
		{"case twins", with("parameters", `{ type = "object", properties = { path = {}, PATH = {} } }`), `tools.declared[0].parameters.properties.path: parameters "PATH" and "path" differ only in case, so both would be the variable AGENTSFLEET_ARG_PATH`},
		{"unknown key", goodTool + "script = 5\n", `tools.declared[0].script: unknown key "script"; the keys in tools.declared[0] are command, description, name, parameters`},
		{"duplicate", goodTool + "\n[[tools.declared]]\n" + goodTool, `tools.declared[1].name: tool "count" is declared twice`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := fleet.ParseTOML(declaredDoc(tt.tool))
			if !errors.Is(err, fault.DefinitionInvalid) {
				t.Fatalf("err = %v, want a Definition error", err)
			}
			probs := problems(t, err)
			var got []string
			for _, p := range probs {
				got = append(got, p.Path+": "+p.Msg)
				if p.Line == 0 {
					t.Errorf("problem %q has no line", p)
				}
			}
			if !slices.ContainsFunc(got, func(s string) bool { return strings.HasPrefix(s, tt.want) }) {
				t.Fatalf("problems = %q, want one starting with %q", got, tt.want)
			}
		})
	}
}

func TestDeclaredProblemLines(t *testing.T) {
	t.Parallel()
	doc := "name = \"a\"\ninstructions = \"b\"\n\n[[tools.declared]]\n" + goodTool +
		"\n[[tools.declared]]\nname = \"second\"\ndescription = \"x\"\ncommand = \"true\"\n\n[tools.declared.parameters]\ntype = \"array\"\n"
	_, err := fleet.ParseTOML([]byte(doc))
	probs := problems(t, err)
	if got, want := probs[0].String(), `line 16: tools.declared[1].parameters.type: the arguments are one JSON object`; !strings.HasPrefix(got, want) {
		t.Fatalf("problem = %q, want it to start with %q", got, want)
	}
}

func TestDeclaredTooMany(t *testing.T) {
	t.Parallel()
	var b strings.Builder
	b.WriteString("name = \"a\"\ninstructions = \"b\"\n")
	for i := range fleet.MaxDeclared + 1 {
		fmt.Fprintf(&b, "\n[[tools.declared]]\n%s", strings.Replace(goodTool, `"count"`, fmt.Sprintf(`"t%d"`, i), 1))
	}
	_, err := fleet.ParseTOML([]byte(b.String()))
	probs := problems(t, err)
	if got, want := probs[0].Path+": "+probs[0].Msg, "tools.declared: 33 declared tools; at most 32 are allowed"; got != want {
		t.Fatalf("problem = %q, want %q", got, want)
	}
	// 32 are fine.
	doc := b.String()[:strings.LastIndex(b.String(), "\n[[tools.declared]]")]
	if _, err := fleet.ParseTOML([]byte(doc)); err != nil {
		t.Fatalf("32 declared tools: %v", err)
	}
}

func TestDeclaredJSON(t *testing.T) {
	t.Parallel()
	doc := `{"name":"a","instructions":"b","tools":{"declared":[{"name":"n","description":"d","command":"c",
	"parameters":{"type":"object","properties":{"x":{"type":"number","maximum":1e3}}}}]}}`
	d, err := fleet.ParseJSON([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	if got := string(d.DeclaredTools[0].Parameters); got != `{"properties":{"x":{"maximum":1000,"type":"number"}},"type":"object"}` {
		t.Fatalf("Parameters = %s", got)
	}
	if _, err := fleet.ParseTOML(d.TOML()); err != nil {
		t.Fatal(err)
	}
	_, err = fleet.ParseJSON([]byte(`{"name":"a","instructions":"b","tools":{"declared":[{"name":"n","description":"d","command":"c","parameters":{"type":"object","default":null}}]}}`))
	if probs := problems(t, err); !strings.Contains(probs[0].Msg, "null at default has no TOML form") {
		t.Fatalf("problem = %q, want null refused", probs[0])
	}
	_, err = fleet.ParseJSON([]byte(`{"name":"a","instructions":"b","tools":{"declared":{"name":"n"}}}`))
	if probs := problems(t, err); probs[0].String() != "line 1: tools.declared: want an array of tables ([[tools.declared]]), got an object" {
		t.Fatalf("problem = %q", probs[0])
	}
}

func TestDeclaredScopes(t *testing.T) {
	t.Parallel()
	d, err := fleet.ParseTOML([]byte("name = \"a\"\ninstructions = \"b\"\n[x-agentsfleet]\ntools = [\"read\"]\n\n[[tools.declared]]\n" + goodTool))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := d.RequiredScopes(), []string{fleet.ScopeExecute, fleet.ScopeFiles}; !slices.Equal(got, want) {
		t.Fatalf("RequiredScopes = %q, want %q", got, want)
	}
	err = d.CheckScopes([]string{fleet.ScopeFiles})
	var se *fleet.ScopeError
	if !errors.As(err, &se) || len(se.Missing) != 1 || se.Missing[0].Scope != fleet.ScopeExecute || !slices.Equal(se.Missing[0].Tools, []string{"count"}) {
		t.Fatalf("CheckScopes = %v, want tools:execute missing for count", err)
	}
	if err := d.CheckScopes([]string{fleet.ScopeFiles, fleet.ScopeExecute}); err != nil {
		t.Fatal(err)
	}
	if err := d.CheckAvailable(fleet.AvailableTools(false)); err != nil {
		t.Fatalf("a declared tool is always available: %v", err)
	}
}

func TestSchemaCheck(t *testing.T) {
	t.Parallel()
	d := mustParseFile(t, "testdata/declared.toml")
	wc, _ := d.Declared("word_count")
	s, err := fleet.CompileSchema(wc.Name, wc.Parameters)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct{ args, want string }{
		{`{"path":"a.txt"}`, ""},
		{`{"path":"a.txt","limit":5}`, ""},
		{`{}`, "at (the arguments): missing property 'path'"},
		{`{"path":7}`, "at /path: got number, want string"},
		{`{"path":"a","limit":0}`, "at /limit: minimum: got 0, want 1"},
		{`{"path":"a","more":1}`, "at (the arguments): additional properties 'more' not allowed"},
	}
	for _, tt := range tests {
		if got := s.Check(json.RawMessage(tt.args)); got != tt.want {
			t.Errorf("Check(%s) = %q, want %q", tt.args, got, tt.want)
		}
	}
}

func TestReferenceDeclaresATool(t *testing.T) {
	t.Parallel()
	data, err := os.ReadFile(filepath.Join("..", "..", "examples", "reference.toml"))
	if err != nil {
		t.Fatal(err)
	}
	d, err := fleet.ParseTOML(data)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := d.Declared("run_tests"); !ok {
		t.Fatal("examples/reference.toml declares no run_tests")
	}
}

// TestSchemaDrafts: a schema is checked against the meta-schema of the
// draft its $schema names, each compiled on first use (third_party/
// jsonschema), and arguments are validated by that draft's rules.
func TestSchemaDrafts(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, schema string
		compiles     bool
		args, want   string
	}{
		{"draft 4's boolean exclusiveMinimum", `{"$schema":"http://json-schema.org/draft-04/schema#","type":"object","properties":{"n":{"type":"integer","minimum":0,"exclusiveMinimum":true}}}`, true,
			`{"n":0}`, "at /n: exclusiveMinimum: got 0, want 0"},
		{"draft 4 refuses a numeric exclusiveMinimum", `{"$schema":"http://json-schema.org/draft-04/schema#","type":"object","properties":{"n":{"exclusiveMinimum":1}}}`, false, "", ""},
		{"draft 6", `{"$schema":"http://json-schema.org/draft-06/schema#","type":"object","propertyNames":{"maxLength":2}}`, true,
			`{"abc":1}`, "at (the arguments): invalid propertyName 'abc'"},
		{"draft 7 refuses an unknown type", `{"$schema":"http://json-schema.org/draft-07/schema#","type":"object","properties":{"n":{"type":"integr"}}}`, false, "", ""},
		{"draft 2019-09", `{"$schema":"https://json-schema.org/draft/2019-09/schema","type":"object","dependentRequired":{"a":["b"]}}`, true,
			`{"a":1}`, "at (the arguments): properties 'b' required, if 'a' exists"},
		{"draft 2020-12 refuses a negative minProperties", `{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"object","minProperties":-1}`, false, "", ""},
	}
	for _, tt := range tests {
		s, err := fleet.CompileSchema("t", json.RawMessage(tt.schema))
		if !tt.compiles {
			if err == nil || !strings.Contains(err.Error(), "not a valid JSON Schema") {
				t.Errorf("%s: CompileSchema = %v, want it refused as not a valid JSON Schema", tt.name, err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: CompileSchema: %v", tt.name, err)
			continue
		}
		if got := s.Check(json.RawMessage(tt.args)); !strings.HasPrefix(got, tt.want) {
			t.Errorf("%s: Check(%s) = %q, want %q", tt.name, tt.args, got, tt.want)
		}
	}
}
