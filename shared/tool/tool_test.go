package tool_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/agentsfleet/agentsfleet/shared/tool"
	"github.com/agentsfleet/agentsfleet/shared/tool/tooltest"
)

const (
	sampleDefault = 400
	sampleMax     = 2000
)

type step struct {
	Step   string `json:"step"`
	Status string `json:"status"`
}

type sampleArgs struct {
	Path    string            `json:"path" description:"The file."`
	Limit   int               `json:"limit,omitempty"`
	Offset  *int              `json:"offset,omitempty"`
	Method  string            `json:"method,omitempty"`
	Title   string            `json:"title,omitempty"`
	Wait    *float64          `json:"wait_ms,omitempty"`
	Headers map[string]string `json:"headers,omitempty"`
	Body    json.RawMessage   `json:"body,omitempty"`
	Plan    []step            `json:"plan,omitempty"`
	Quiet   bool              `json:"quiet,omitempty"`
}

var sample = tool.Define[sampleArgs](tool.About{
	Name:        "sample",
	Description: `Reads. limit: default {{default "limit"}}, at most {{max "limit"}}; lines cut at {{.LineChars}}.`,
	Rules: tool.Rules{
		"limit":       tool.Min(1).Max(sampleMax).Clamp().Default(sampleDefault),
		"offset":      tool.Min(1),
		"method":      tool.OneOf("GET", "POST").FoldCase().Default("GET"),
		"title":       tool.MaxLen(5),
		"wait_ms":     tool.Between(0, 30000),
		"plan.status": tool.OneOf("pending", "in_progress", "completed"),
	},
	Values: map[string]any{"LineChars": 4000},
})

func TestDescriptionTakesItsFiguresFromTheRules(t *testing.T) {
	t.Parallel()
	if got, want := sample.Description(), "Reads. limit: default 400, at most 2000; lines cut at 4000."; got != want {
		t.Errorf("Description() = %q, want %q", got, want)
	}
}

func TestSchema(t *testing.T) {
	t.Parallel()
	want := `{"type":"object","properties":{` +
		`"path":{"type":"string","description":"The file.","minLength":1},` +
		`"limit":{"type":"integer","default":400,"minimum":1,"maximum":2000},` +
		`"offset":{"type":"integer","minimum":1},` +
		`"method":{"type":"string","enum":["GET","POST"],"default":"GET"},` +
		`"title":{"type":"string","maxLength":5},` +
		`"wait_ms":{"type":"number","minimum":0,"maximum":30000},` +
		`"headers":{"type":"object","additionalProperties":{"type":"string"}},` +
		`"body":{},` +
		`"plan":{"type":"array","items":{"type":"object","properties":{"step":{"type":"string","minLength":1},"status":{"type":"string","enum":["pending","in_progress","completed"],"minLength":1}},"required":["step","status"],"additionalProperties":false}},` +
		`"quiet":{"type":"boolean"}` +
		`},"required":["path"],"additionalProperties":false}`
	if got := string(sample.Schema()); got != want {
		t.Errorf("Schema() =\n%s\nwant\n%s", got, want)
	}
	tooltest.Conform(t, sample)
}

func TestDecode(t *testing.T) {
	t.Parallel()
	args, res, ok := sample.Decode(json.RawMessage(`{"path":"a","limit":5000,"method":" post ","plan":[{"step":"s","status":"pending"}],"body":{"k":[1]}}`))
	if !ok {
		t.Fatalf("Decode refused: %s", res.Output)
	}
	if args.Limit != sampleMax || args.Method != "POST" || args.Offset != nil || string(args.Body) != `{"k":[1]}` || len(args.Plan) != 1 {
		t.Errorf("Decode = %+v; want limit clamped to %d, method POST, no offset, the body as given, one step", args, sampleMax)
	}
	args, _, _ = sample.Decode(json.RawMessage(`{"path":"a","limit":null,"method":" "}`))
	if args.Limit != sampleDefault || args.Method != "GET" {
		t.Errorf("defaults: limit %d, method %q; want %d and GET", args.Limit, args.Method, sampleDefault)
	}
	if _, res, ok := sample.Decode(nil); ok || res.Output != `sample: argument "path" is required` {
		t.Errorf("Decode(nil) = %q, %v; want path required", res.Output, ok)
	}
}

// TestArgumentErrors fixes the wording every tool shares.
func TestArgumentErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ args, want string }{
		{`{"path":"a","bogus":1}`, `sample: unknown argument "bogus"; the arguments are path, limit, offset, method, title, wait_ms, headers, body, plan and quiet`},
		{`{"path":3}`, `sample: argument "path" must be a string, not 3`},
		{`{"path":"a","limit":"x"}`, `sample: argument "limit" must be an integer, not a string`},
		{`{"path":"a","limit":1.5}`, `sample: argument "limit" must be an integer, not 1.5`},
		{`{"path":"a","quiet":"yes"}`, `sample: argument "quiet" must be true or false, not a string`},
		{`{"path":"a","headers":{"X":3}}`, `sample: argument "headers.X" must be a string, not 3`},
		{`{"path":"a","headers":[]}`, `sample: argument "headers" must be an object of strings, not an array`},
		{`{"path":"a","plan":{}}`, `sample: argument "plan" must be an array of objects, not an object`},
		{`{"path":"a","plan":[{"step":"s"}]}`, `sample: argument "plan[0].status" is required`},
		{`{"path":"a","plan":[{"step":"s","status":"done"}]}`, `sample: argument "plan[0].status" must be one of pending, in_progress or completed, not "done"`},
		{`{"path":"a","plan":[{"step":"s","status":"pending","x":1}]}`, `sample: argument "plan[0]" has no field "x"; its fields are step and status`},
		{`{}`, `sample: argument "path" is required`},
		{`{"path":null}`, `sample: argument "path" is required`},
		{`{"path":""}`, `sample: argument "path" must not be empty`},
		{`{"path":"a","limit":0}`, `sample: argument "limit" must be 1 or more, not 0`},
		{`{"path":"a","offset":-2}`, `sample: argument "offset" must be 1 or more, not -2`},
		{`{"path":"a","wait_ms":30001}`, `sample: argument "wait_ms" must be between 0 and 30000, not 30001`},
		{`{"path":"a","method":"PUT"}`, `sample: argument "method" must be one of GET or POST, not "PUT"`},
		{`{"path":"a","title":"héllo!"}`, `sample: argument "title" must be at most 5 characters, not 6`},
		{`[1]`, `sample: the arguments must be a JSON object, not an array`},
		{`"a"`, `sample: the arguments must be a JSON object, not a string`},
		{`{"path":"a"} {}`, `sample: the arguments must be one JSON object, with nothing after it`},
		{`{"path":`, `sample: the arguments are not valid JSON: the JSON ends too early`},
		{`{"path" "a"}`, `sample: the arguments are not valid JSON: invalid character '"' after object key (at byte 9)`},
	} {
		_, res, ok := sample.Decode(json.RawMessage(tc.args))
		if ok || !res.IsError || res.Output != tc.want {
			t.Errorf("Decode(%s) = %q, ok %v\n want %q", tc.args, res.Output, ok, tc.want)
		}
	}
}

func TestRefuseWordsLikeDecode(t *testing.T) {
	t.Parallel()
	if got, want := sample.Refuse("path", "must not be %s", "a directory").Output, `sample: argument "path" must not be a directory`; got != want {
		t.Errorf("Refuse = %q, want %q", got, want)
	}
}

func TestNoArguments(t *testing.T) {
	t.Parallel()
	none := tool.Define[struct{}](tool.About{Name: "list_agents", Description: "Lists."})
	if got := string(none.Schema()); got != `{"type":"object","properties":{},"additionalProperties":false}` {
		t.Errorf("Schema() = %s", got)
	}
	if _, ok := none.Check(json.RawMessage(`{}`)); !ok {
		t.Error("Check({}) refused")
	}
	if res, _ := none.Check(json.RawMessage(`{"x":1}`)); res.Output != `list_agents: unknown argument "x": this tool takes no arguments` {
		t.Errorf("Check = %q", res.Output)
	}
	tooltest.Conform(t, none)
}

func TestUnbuilt(t *testing.T) {
	t.Parallel()
	u := tool.Unbuilt(sample, "it comes with the runner")
	res, err := u.Run(context.Background(), json.RawMessage(`{"path":"a"}`))
	if err != nil || !res.IsError || res.Output != "sample is not available in this version of agentsfleet: it comes with the runner" {
		t.Errorf("Run = %q, %v", res.Output, err)
	}
	if res, _ := u.Run(context.Background(), json.RawMessage(`{}`)); !strings.Contains(res.Output, `"path" is required`) {
		t.Errorf("Run({}) = %q; the arguments are checked first", res.Output)
	}
}

// TestDefinePanicsOnProgrammingErrors: a rule for no argument, a default
// outside its own range and a template key that is not there are found by
// Define or, for what Define makes lazily, by the Spec's first use (which
// every package's tests make of every contract).
func TestDefinePanicsOnProgrammingErrors(t *testing.T) {
	t.Parallel()
	for name, about := range map[string]tool.About{
		"rule for no argument": {Name: "x", Rules: tool.Rules{"nope": tool.Min(1)}},
		"default out of range": {Name: "x", Rules: tool.Rules{"limit": tool.Min(1).Default(0)}},
		"range on a string":    {Name: "x", Rules: tool.Rules{"path": tool.Min(1)}},
		"default on required":  {Name: "x", Rules: tool.Rules{"path": tool.Default("a")}},
		"unknown value":        {Name: "x", Description: "{{.Nope}}"},
		"no such default":      {Name: "x", Description: `{{default "offset"}}`},
		"no such argument":     {Name: "x", Description: `{{max "nope"}}`},
		"no maximum":           {Name: "x", Description: `{{max "path"}}`},
		"another form":         {Name: "x", Description: `{{if .Nope}}x{{end}}`},
		"unclosed":             {Name: "x", Description: `at most {{max "limit"`},
		"a place, no scope":    {Name: "x", RunsIn: tool.InSandbox, Summary: "s"},
		"a place, no summary":  {Name: "x", RunsIn: tool.InSandbox, Scope: tool.ScopeFiles},
		"no such place":        {Name: "x", RunsIn: "moon", Scope: tool.ScopeFiles, Summary: "s"},
		"a scope, no place":    {Name: "x", Scope: tool.ScopeFiles},
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s: neither Define nor the first use panicked", name)
				}
			}()
			tool.Define[sampleArgs](about).Schema()
		}()
	}
}
