package fleet_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/agentsfleet/agentsfleet/shared/fault"
	"github.com/agentsfleet/agentsfleet/shared/fleet"
)

// parseFile reads a fixture and parses it in the format its name implies.
func parseFile(t *testing.T, name string) (*fleet.Definition, error) {
	t.Helper()
	data, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	format, ok := fleet.FormatOf(name)
	if !ok {
		t.Fatalf("FormatOf(%q) = false, want a format", name)
	}
	return fleet.Parse(data, format)
}

func mustParseFile(t *testing.T, name string) *fleet.Definition {
	t.Helper()
	d, err := parseFile(t, name)
	if err != nil {
		t.Fatalf("parse %s: %v", name, err)
	}
	return d
}

// problems returns err's problems, failing the test unless err is an
// *fleet.Error that matches fault.DefinitionInvalid.
func problems(t *testing.T, err error) []fleet.Problem {
	t.Helper()
	if err == nil {
		t.Fatal("got no error, want a Definition error")
	}
	if !errors.Is(err, fault.DefinitionInvalid) {
		t.Fatalf("errors.Is(%v, fault.DefinitionInvalid) = false, want true", err)
	}
	if code, ok := fault.CodeOf(err); !ok || code != fault.DefinitionInvalid {
		t.Fatalf("fault.CodeOf(err) = %v, %v; want %s", code.ID(), ok, fault.DefinitionInvalid.ID())
	}
	var fe *fleet.Error
	if !errors.As(err, &fe) {
		t.Fatalf("errors.As(%v, *fleet.Error) = false, want true", err)
	}
	if len(fe.Problems) == 0 {
		t.Fatal("got an *Error with no problems")
	}
	return fe.Problems
}

func TestExamplesParse(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob("../../examples/*")
	if err != nil {
		t.Fatal(err)
	}
	var n int
	for _, f := range files {
		if _, ok := fleet.FormatOf(f); !ok {
			continue
		}
		n++
		t.Run(filepath.Base(f), func(t *testing.T) {
			t.Parallel()
			d := mustParseFile(t, f)
			want := strings.TrimSuffix(filepath.Base(f), filepath.Ext(f))
			if want == "reference" {
				want = "reference-fleet"
			}
			if d.Name != want {
				t.Errorf("Name = %q, want %q (the file's name)", d.Name, want)
			}
			if err := d.CheckAvailable(fleet.AvailableTools(false)); err != nil {
				t.Errorf("CheckAvailable(no display) = %v, want nil: examples should run anywhere", err)
			}
		})
	}
	if n < 5 {
		t.Fatalf("found %d example Definitions, want at least 5", n)
	}
}

func TestExampleContents(t *testing.T) {
	t.Parallel()
	tests := []struct {
		file      string
		wantTools []string
		wantHosts fleet.HostList
		secrets   []string
	}{
		{"minimal.toml", nil, nil, nil},
		{"slack-helper.toml", []string{"bash", "grep", "message", "read", "update_plan"}, nil, nil},
		{"uptime-checker.toml", []string{"http_request", "pushover", "schedule_create", "schedule_delete", "schedule_list"},
			fleet.HostList{"api.pushover.net", "status.example.com"}, []string{"PUSHOVER_TOKEN", "PUSHOVER_USER", "STATUS_TOKEN"}},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			t.Parallel()
			d := mustParseFile(t, "../../examples/"+tt.file)
			if !reflect.DeepEqual(d.Tools, tt.wantTools) {
				t.Errorf("Tools = %q, want %q", d.Tools, tt.wantTools)
			}
			if !reflect.DeepEqual(d.Hosts, tt.wantHosts) {
				t.Errorf("Hosts = %q, want %q", d.Hosts, tt.wantHosts)
			}
			for _, s := range tt.secrets {
				if d.Secrets[s] == "" {
					t.Errorf("Secrets[%q] is empty, want a Secrets Manager reference", s)
				}
			}
		})
	}
}

func TestMinimalGetsDefaults(t *testing.T) {
	t.Parallel()
	d := mustParseFile(t, "../../examples/minimal.toml")
	want := &fleet.Definition{
		Name:         "minimal",
		Instructions: "Answer questions about agentsfleet briefly and politely.",
		Workdir:      fleet.DefaultWorkdir,
		Limits: fleet.Limits{
			ToolTimeoutSeconds: fleet.DefaultToolTimeoutSeconds,
			Budget:             fleet.Budget{Tokens: fleet.DefaultBudgetTokens, ToolCalls: fleet.DefaultBudgetToolCalls},
		},
		Sandbox: fleet.Sandbox{Size: fleet.SizeSmall},
		Slack:   fleet.Slack{OnReply: fleet.ReplyQueue, MergeSeconds: fleet.DefaultMergeSeconds},
	}
	if !reflect.DeepEqual(d, want) {
		t.Fatalf("got %+v\nwant %+v", d, want)
	}
	if got := d.Limits.ToolTimeout().Seconds(); got != 120 {
		t.Errorf("ToolTimeout = %vs, want 120s", got)
	}
}

func TestTOMLAndJSONGiveEqualDefinitions(t *testing.T) {
	t.Parallel()
	tests := []struct{ toml, json string }{
		{"testdata/same.toml", "testdata/same.json"},
		{"testdata/tools-runtime.toml", "testdata/tools-runtime.json"},
	}
	for _, tt := range tests {
		t.Run(tt.toml, func(t *testing.T) {
			t.Parallel()
			a, b := mustParseFile(t, tt.toml), mustParseFile(t, tt.json)
			if !reflect.DeepEqual(a, b) {
				t.Fatalf("TOML gives %+v\nJSON gives %+v\nwant them equal", a, b)
			}
			if a.Hash() != b.Hash() {
				t.Errorf("hashes differ: %s and %s", a.Hash(), b.Hash())
			}
		})
	}
	d := mustParseFile(t, "testdata/same.json")
	wantHosts := fleet.HostList{"*.example.com", "api.github.com", "uploads.github.com"}
	if !reflect.DeepEqual(d.Hosts, wantHosts) {
		t.Errorf("Hosts = %q, want %q", d.Hosts, wantHosts)
	}
	wantTools := []string{"grep", "http_request", "message", "read"}
	if !reflect.DeepEqual(d.Tools, wantTools) {
		t.Errorf("Tools = %q, want %q", d.Tools, wantTools)
	}
}

func TestToolListForms(t *testing.T) {
	t.Parallel()
	want := []string{"bash", "message", "read"}
	for _, f := range []string{"tools-runtime.toml", "tools-runtime.json", "tools-builtin.toml", "tools-split.toml"} {
		t.Run(f, func(t *testing.T) {
			t.Parallel()
			d := mustParseFile(t, "testdata/"+f)
			if !reflect.DeepEqual(d.Tools, want) {
				t.Fatalf("Tools = %q, want %q", d.Tools, want)
			}
		})
	}
	// The JSON form of [tools] builtin is accepted too.
	d, err := fleet.ParseJSON([]byte(`{"name":"a","instructions":"b","tools":{"builtin":["read","read"]}}`))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(d.Tools, []string{"read"}) {
		t.Errorf("Tools = %q, want [read]", d.Tools)
	}
}

func TestProblemsCarryTOMLLines(t *testing.T) {
	t.Parallel()
	_, err := parseFile(t, "testdata/problems.toml")
	probs := problems(t, err)
	want := []struct {
		line int
		path string
		msg  string
	}{
		{2, "name", `"Bad Name" is not a valid fleet name`},
		{4, "workdir", `"relative/dir" is not an absolute path`},
		{5, "colour", `unknown key "colour"`},
		{8, "x-agentsfleet.tools[1]", `unknown tool "reed" (did you mean "read"?); valid tools: apply_patch, bash,`},
		{11, "x-agentsfleet.network.hosts[0]", "user information"},
		{14, "x-agentsfleet.secrets.API_KEY", "looks like a credential"},
		{17, "x-agentsfleet.limits.tool_timeout_seconds", "99999 is out of range; want 1 to 3600 seconds"},
		{20, "x-agentsfleet.sandbox.size", `"huge" is not a sandbox size`},
	}
	if len(probs) != len(want) {
		t.Fatalf("got %d problems, want %d:\n%v", len(probs), len(want), err)
	}
	for i, w := range want {
		p := probs[i]
		if p.Line != w.line || p.Path != w.path || !strings.Contains(p.Msg, w.msg) {
			t.Errorf("problem %d = line %d, %q, %q; want line %d, %q, containing %q", i, p.Line, p.Path, p.Msg, w.line, w.path, w.msg)
		}
	}
	if strings.Contains(err.Error(), "abcdefghijklmnopqrstuvwxyz") {
		t.Errorf("error repeats a secret value: %v", err)
	}
	if !strings.HasPrefix(err.Error(), "UZ-DEF-400: the Definition is not valid (8 problems): line 2: name: ") {
		t.Errorf("error = %q, want it to start with the code, the count and the first problem", err)
	}
}

func TestSyntaxAndTypeErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		format fleet.Format
		doc    string
		want   string // the whole first problem, as Problem.String gives it
	}{
		{"toml syntax", fleet.TOML, "name = \"a\"\ninstructions = \"b\"\n\n[x-agentsfleet]\ntools = [\"read\",\n\n  \"bash\"\n", "line 7, column"},
		{"toml bad value", fleet.TOML, "name = \"a\"\ninstructions = oops\n", "line 2, column 16: TOML syntax: "},
		{"toml key twice", fleet.TOML, "name = \"a\"\ninstructions = \"b\"\nname = \"c\"\n", "line 3, column 1: name: TOML syntax: "},
		{"toml type", fleet.TOML, "name = \"a\"\ninstructions = \"b\"\n\n[x-agentsfleet.limits]\ntool_timeout_seconds = \"60\"\n",
			"line 5: x-agentsfleet.limits.tool_timeout_seconds: want a whole number, got a string"},
		{"toml float", fleet.TOML, "name = \"a\"\ninstructions = \"b\"\n[x-agentsfleet.limits]\ntool_timeout_seconds = 1.5\n",
			"line 4: x-agentsfleet.limits.tool_timeout_seconds: want a whole number, got a float"},
		{"toml tools not a list", fleet.TOML, "name = \"a\"\ninstructions = \"b\"\n[x-agentsfleet]\ntools = \"read\"\n",
			"line 4: x-agentsfleet.tools: want an array of strings, got a string"},
		{"toml table wanted", fleet.TOML, "name = \"a\"\ninstructions = \"b\"\nx-agentsfleet = 3\n",
			"line 3: x-agentsfleet: want a table, got an integer"},
		{"toml inline element", fleet.TOML, "name = \"a\"\ninstructions = \"b\"\nx-agentsfleet = { tools = [\n  \"read\",\n  7,\n] }\n",
			"line 5: x-agentsfleet.tools[1]: want a string, got an integer"},
		{"toml date", fleet.TOML, "name = 2024-01-01\ninstructions = \"b\"\n", "line 1: name: want a string, got a date or time"},
		{"json syntax", fleet.JSON, "{\n  \"name\": \"a\",\n  \"instructions\": \"b\"\n  \"model\": \"m\"\n}", "line 4, column 3: JSON syntax: invalid character"},
		{"json truncated", fleet.JSON, "{\"name\": \"a\",\n", "line 1, column 14: JSON syntax: unexpected end of the document"},
		{"json trailing", fleet.JSON, "{\"name\":\"a\",\"instructions\":\"b\"}\n{}", "line 2, column 1: JSON syntax: unexpected data after"},
		{"json type", fleet.JSON, "{\"name\": \"a\",\n \"instructions\": \"b\",\n \"x-agentsfleet\": {\"limits\": {\n  \"tool_timeout_seconds\": true}}}",
			"line 4: x-agentsfleet.limits.tool_timeout_seconds: want a whole number, got a boolean"},
		{"json fraction", fleet.JSON, `{"name":"a","instructions":"b","x-agentsfleet":{"limits":{"budget":{"tokens":1.5}}}}`,
			"line 1: x-agentsfleet.limits.budget.tokens: want a whole number, got 1.5"},
		{"json huge", fleet.JSON, `{"name":"a","instructions":"b","x-agentsfleet":{"limits":{"budget":{"tokens":123456789012345678901234567890}}}}`,
			"line 1: x-agentsfleet.limits.budget.tokens: 123456789012345678901234567890 is out of range"},
		{"json duplicate", fleet.JSON, "{\"name\": \"a\",\n\"instructions\": \"b\",\n\"name\": \"c\"}", `line 3: name: key "name" is given twice`},
		{"json not object", fleet.JSON, `["name"]`, "a Definition is a JSON object, not an array"},
		{"json empty", fleet.JSON, " \n", "the document is empty; want a JSON object"},
		{"json syntax first line", fleet.JSON, `{"name": }`, "line 1, column 10: JSON syntax: invalid character '}'"},
		{"json wrong case", fleet.JSON, `{"Name":"a","name":"a","instructions":"b"}`, `line 1: Name: unknown key "Name"; did you mean "name"?`},
		{"json object type", fleet.JSON, `{"name":"a","instructions":"b","x-agentsfleet":[]}`, "line 1: x-agentsfleet: want an object, got an array"},
		{"json config wrapper", fleet.JSON, `{"config":{"name":"a"}}`, `line 1: config: unknown key "config"; the Definition is the document itself`},
		{"misplaced key", fleet.TOML, "name = \"a\"\ninstructions = \"b\"\n\n[x-agentsfleet]\nname = \"c\"\n",
			`line 5: x-agentsfleet.name: unknown key "name" here; did you mean the top-level key "name"?`},
		{"alias key", fleet.TOML, "name = \"a\"\ninstructions = \"b\"\n[x-agentsfleet.limits]\nmax_tokens = 5\n",
			`line 4: x-agentsfleet.limits.max_tokens: unknown key "max_tokens" here; did you mean x-agentsfleet.limits.budget.tokens?`},
		{"unknown nested", fleet.TOML, "name = \"a\"\ninstructions = \"b\"\n[x-agentsfleet.sandbox]\ncpu = 1024\n",
			`line 4: x-agentsfleet.sandbox.cpu: unknown key "cpu" here; did you mean x-agentsfleet.sandbox.size?`},
		{"unknown tools key", fleet.TOML, "name = \"a\"\ninstructions = \"b\"\n[tools]\ncustom = []\n",
			`line 4: tools.custom: unknown key "custom"; the keys in tools are builtin, declared`},
		{"too big", fleet.TOML, strings.Repeat("#", fleet.MaxSize+1), "the document is 262145 bytes long; at most 262144 are allowed"},
		{"unknown format", fleet.Format(9), "", "unknown format Format(9); want TOML or JSON"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := fleet.Parse([]byte(tt.doc), tt.format)
			probs := problems(t, err)
			if got := probs[0].String(); !strings.HasPrefix(got, tt.want) {
				t.Fatalf("first problem = %q, want it to start with %q (all: %v)", got, tt.want, err)
			}
		})
	}
}

func TestTypeProblemIsNotRepeated(t *testing.T) {
	t.Parallel()
	_, err := fleet.ParseJSON([]byte(`{"name": 5, "instructions": ["x"]}`))
	probs := problems(t, err)
	if len(probs) != 2 {
		t.Fatalf("got %d problems, want 2 (one per key): %v", len(probs), err)
	}
}

func TestNullIsAbsent(t *testing.T) {
	t.Parallel()
	d, err := fleet.ParseJSON([]byte(`{"name":"a","instructions":"b","model":null,"x-agentsfleet":{"limits":null,"secrets":{"A":null}}}`))
	if err != nil {
		t.Fatal(err)
	}
	if d.Model != "" || d.Limits.ToolTimeoutSeconds != fleet.DefaultToolTimeoutSeconds || d.Secrets != nil {
		t.Fatalf("got model %q, timeout %d, secrets %v; want defaults", d.Model, d.Limits.ToolTimeoutSeconds, d.Secrets)
	}
}

func TestByteOrderMark(t *testing.T) {
	t.Parallel()
	for _, f := range []fleet.Format{fleet.TOML, fleet.JSON} {
		doc := "name = \"a\"\ninstructions = \"b\"\n"
		if f == fleet.JSON {
			doc = `{"name":"a","instructions":"b"}`
		}
		if _, err := fleet.Parse([]byte("\xef\xbb\xbf"+doc), f); err != nil {
			t.Errorf("%v with a byte-order mark: got %v, want no error", f, err)
		}
	}
}

// minimal returns a TOML Definition with extra appended.
func minimal(extra string) []byte {
	return []byte("name = \"a\"\ninstructions = \"b\"\n" + extra)
}

func TestValueRules(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		doc  string
		want string // "" for valid; else the first problem's path and text start
	}{
		{"name digits dashes", "name = \"triage-bot-2\"\ninstructions = \"b\"\n", ""},
		{"name 63", "name = \"" + strings.Repeat("a", 63) + "\"\ninstructions = \"b\"\n", ""},
		{"name 64", "name = \"" + strings.Repeat("a", 64) + "\"\ninstructions = \"b\"\n", `name: "aaaa`},
		{"name empty", "name = \"\"\ninstructions = \"b\"\n", "name: required"},
		{"name missing", "instructions = \"b\"\n", "name: required"},
		{"name digit first", "name = \"1abc\"\ninstructions = \"b\"\n", `name: "1abc" is not a valid fleet name`},
		{"name dash last", "name = \"abc-\"\ninstructions = \"b\"\n", `name: "abc-" ends with a dash`},
		{"name capitals", "name = \"Abc\"\ninstructions = \"b\"\n", `name: "Abc" has capital letters`},
		{"name underscore", "name = \"a_b\"\ninstructions = \"b\"\n", `name: "a_b" is not a valid fleet name`},
		{"instructions blank", "name = \"a\"\ninstructions = \"  \\n \"\n", "instructions: required"},
		{"instructions missing", "name = \"a\"\n", "instructions: required"},
		{"instructions long", "name = \"a\"\ninstructions = \"" + strings.Repeat("x", fleet.MaxInstructionsBytes+1) + "\"\n", "instructions: 65537 bytes long"},
		{"model bedrock", "model = \"anthropic.claude-3-5-sonnet-20241022-v2:0\"\n", ""},
		{"model arn", "model = \"arn:aws:bedrock:us-east-1:123456789012:inference-profile/us.anthropic.claude\"\n", ""},
		{"model openai", "model = \"gpt-4.1\"\n", ""},
		{"model space", "model = \"gpt 4\"\n", `model: "gpt 4" is not a model id`},
		{"model empty means default", "model = \"\"\n", ""},
		{"workdir ok", "workdir = \"/agent/repo\"\n", ""},
		{"workdir tmp", "workdir = \"/tmp/work\"\n", ""},
		{"workdir relative", "workdir = \"repo\"\n", `workdir: "repo" is not an absolute path`},
		{"workdir unclean", "workdir = \"/agent/../etc\"\n", `workdir: "/agent/../etc" is not a clean path; write "/etc"`},
		{"workdir trailing slash", "workdir = \"/agent/\"\n", `workdir: "/agent/" is not a clean path; write "/agent"`},
		{"workdir root", "workdir = \"/\"\n", "workdir: the root directory cannot be the workdir"},
		{"workdir etc", "workdir = \"/etc/app\"\n", `workdir: "/etc/app" is inside the system directory /etc`},
		{"workdir usrlocal", "workdir = \"/usrlocal\"\n", ""},
		{"workdir empty", "workdir = \"\"\n", "workdir: empty"},
		{"workdir control", "workdir = \"/a\\u0001b\"\n", "workdir: contains a control character"},
		{"timeout 1", "[x-agentsfleet.limits]\ntool_timeout_seconds = 1\n", ""},
		{"timeout 3600", "[x-agentsfleet.limits]\ntool_timeout_seconds = 3600\n", ""},
		{"timeout 0", "[x-agentsfleet.limits]\ntool_timeout_seconds = 0\n", "x-agentsfleet.limits.tool_timeout_seconds: 0 is out of range; want 1 to 3600 seconds (default 120)"},
		{"timeout 3601", "[x-agentsfleet.limits]\ntool_timeout_seconds = 3601\n", "x-agentsfleet.limits.tool_timeout_seconds: 3601 is out of range"},
		{"tokens 0", "[x-agentsfleet.limits.budget]\ntokens = 0\n", "x-agentsfleet.limits.budget.tokens: 0 is out of range; want 1 to 200000000 tokens"},
		{"tokens negative", "[x-agentsfleet.limits.budget]\ntokens = -5\n", "x-agentsfleet.limits.budget.tokens: -5 is out of range"},
		{"tool calls 0", "[x-agentsfleet.limits.budget]\ntool_calls = 0\n", "x-agentsfleet.limits.budget.tool_calls: 0 is out of range; want 1 to 10000 tool calls"},
		{"tool calls max", "[x-agentsfleet.limits.budget]\ntool_calls = 10_000\n", ""},
		{"size xlarge", "[x-agentsfleet.sandbox]\nsize = \"xlarge\"\n", ""},
		{"size caps", "[x-agentsfleet.sandbox]\nsize = \"Small\"\n", `x-agentsfleet.sandbox.size: "Small" is not a sandbox size`},
		{"secret name", "[x-agentsfleet.secrets]\nGITHUB_TOKEN = \"prod/github\"\n_x1 = \"a\"\n", ""},
		{"secret name digit", "[x-agentsfleet.secrets]\n1X = \"prod/a\"\n", `x-agentsfleet.secrets.1X: secret name "1X" is not valid`},
		{"secret name dash", "[x-agentsfleet.secrets]\nMY-KEY = \"prod/a\"\n", `x-agentsfleet.secrets.MY-KEY: secret name "MY-KEY" is not valid`},
		{"secret name dot", "[x-agentsfleet.secrets]\n\"a.b\" = \"prod/a\"\n", `x-agentsfleet.secrets."a.b": secret name "a.b" is not valid`},
		{"secret arn", "[x-agentsfleet.secrets]\nA = \"arn:aws:secretsmanager:us-east-1:123456789012:secret:prod/a-AbCdEf\"\n", ""},
		{"secret arn gov", "[x-agentsfleet.secrets]\nA = \"arn:aws-us-gov:secretsmanager:us-gov-west-1:123456789012:secret:a\"\n", ""},
		{"secret arn ssm", "[x-agentsfleet.secrets]\nA = \"arn:aws:ssm:us-east-1:123456789012:parameter/a\"\n", `x-agentsfleet.secrets.A: an ARN of the "ssm" service`},
		{"secret arn account", "[x-agentsfleet.secrets]\nA = \"arn:aws:secretsmanager:us-east-1:1234:secret:a\"\n", "x-agentsfleet.secrets.A: the account in the ARN is not 12 digits"},
		{"secret arn region", "[x-agentsfleet.secrets]\nA = \"arn:aws:secretsmanager:moon:123456789012:secret:a\"\n", `x-agentsfleet.secrets.A: "moon" in the ARN is not an AWS region`},
		{"secret arn short", "[x-agentsfleet.secrets]\nA = \"arn:aws:secretsmanager\"\n", "x-agentsfleet.secrets.A: not a complete Secrets Manager secret ARN"},
		{"secret empty", "[x-agentsfleet.secrets]\nA = \"\"\n", "x-agentsfleet.secrets.A: empty"},
		{"secret github token", "[x-agentsfleet.secrets]\nA = \"ghp_16C7e42F292c6912E7710c838347Ae178B4a\"\n", "x-agentsfleet.secrets.A: looks like a credential"},
		{"secret slack token", "[x-agentsfleet.secrets]\nA = \"xoxb-123456789012-abcdefghijkl\"\n", "x-agentsfleet.secrets.A: looks like a credential"},
		{"secret aws key", "[x-agentsfleet.secrets]\nA = \"AKIAIOSFODNN7EXAMPLE\"\n", "x-agentsfleet.secrets.A: looks like a credential"},
		{"secret random", "[x-agentsfleet.secrets]\nA = \"prod/Zx8Qw3Lm9Rt2Yv6Kp1Nb4Hs7Df0Gj5Ua\"\n", "x-agentsfleet.secrets.A: looks like a credential"},
		{"secret with space", "[x-agentsfleet.secrets]\nA = \"my password 123\"\n", "x-agentsfleet.secrets.A: not the name or ARN of a Secrets Manager secret"},
		{"secret pem", "[x-agentsfleet.secrets]\nA = \"-----BEGIN PRIVATE KEY-----\"\n", "x-agentsfleet.secrets.A: not the name or ARN"},
		{"secret long name", "[x-agentsfleet.secrets]\nA = \"prod/service-name/production-api-key\"\n", ""},
		{"secret type", "[x-agentsfleet.secrets]\nA = 5\n", "x-agentsfleet.secrets.A: want a string (the secret's Secrets Manager name or ARN) or a table {id, approve}, got an integer"},
		{"secret without id", "[x-agentsfleet.secrets]\nA = { approve = true }\n", "x-agentsfleet.secrets.A.id: required"},
		{"secret approve type", "[x-agentsfleet.secrets]\nA = { id = \"prod/a\", approve = \"yes\" }\n", "x-agentsfleet.secrets.A.approve: want true or false, got a string"},
		{"secret unknown key", "[x-agentsfleet.secrets]\nA = { id = \"prod/a\", ask = true }\n", "x-agentsfleet.secrets.A"},
		{"hosts bad", "[x-agentsfleet.network]\nhosts = [\"ok.example\", \"/just/a/path\"]\n", `x-agentsfleet.network.hosts[1]: host entry "/just/a/path" has a path but no host`},
		{"empty tool", "[x-agentsfleet]\ntools = [\"\"]\n", "x-agentsfleet.tools[0]: empty tool name; valid tools: "},
		{"tool case", "[x-agentsfleet]\ntools = [\"Read\"]\n", `x-agentsfleet.tools[0]: unknown tool "Read" (did you mean "read"?)`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			doc := []byte(tt.doc)
			if !strings.Contains(tt.doc, "instructions") && !strings.Contains(tt.doc, "name =") {
				doc = minimal(tt.doc)
			}
			_, err := fleet.ParseTOML(doc)
			if tt.want == "" {
				if err != nil {
					t.Fatalf("got %v, want no error", err)
				}
				return
			}
			probs := problems(t, err)
			p := probs[0]
			if got := p.Path + ": " + p.Msg; !strings.HasPrefix(got, tt.want) {
				t.Fatalf("first problem = %q, want it to start with %q", got, tt.want)
			}
			if strings.Contains(tt.name, "secret") && strings.Contains(tt.name, "token") && strings.Contains(err.Error(), "16C7e42F") {
				t.Errorf("error repeats the secret value: %v", err)
			}
		})
	}
}

func TestLimitsOnCounts(t *testing.T) {
	t.Parallel()
	var hosts, secrets strings.Builder
	for i := range fleet.MaxHosts + 1 {
		hosts.WriteString("\"h" + strconv.Itoa(i) + ".example\",")
	}
	for i := range fleet.MaxSecrets + 1 {
		secrets.WriteString("S" + strconv.Itoa(i) + " = \"prod/s\"\n")
	}
	tests := []struct{ name, doc, want string }{
		{"hosts", "[x-agentsfleet.network]\nhosts = [" + hosts.String() + "]\n", "x-agentsfleet.network.hosts: 257 hosts; at most 256"},
		{"secrets", "[x-agentsfleet.secrets]\n" + secrets.String(), "x-agentsfleet.secrets: 65 secrets; at most 64"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := fleet.ParseTOML(minimal(tt.doc))
			p := problems(t, err)[0]
			if got := p.Path + ": " + p.Msg; !strings.HasPrefix(got, tt.want) {
				t.Fatalf("got %q, want it to start with %q", got, tt.want)
			}
		})
	}
}

func TestFormatOf(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		want fleet.Format
		ok   bool
	}{
		{"a.toml", fleet.TOML, true},
		{"dir/A.TOML", fleet.TOML, true},
		{"a.json", fleet.JSON, true},
		{"a.yaml", 0, false},
		{"toml", 0, false},
	}
	for _, tt := range tests {
		got, ok := fleet.FormatOf(tt.name)
		if got != tt.want || ok != tt.ok {
			t.Errorf("FormatOf(%q) = %v, %v; want %v, %v", tt.name, got, ok, tt.want, tt.ok)
		}
	}
	if got := fleet.TOML.String() + fleet.JSON.String(); got != "TOMLJSON" {
		t.Errorf("format names = %q, want TOMLJSON", got)
	}
}

func TestManyProblemsAreCapped(t *testing.T) {
	t.Parallel()
	tools := strings.Repeat(`"nope",`, 5000)
	_, err := fleet.ParseJSON([]byte(`{"name":"a","instructions":"b","x-agentsfleet":{"tools":[` + strings.TrimSuffix(tools, ",") + `]}}`))
	problems(t, err)
	var fe *fleet.Error
	errors.As(err, &fe)
	if len(fe.Problems) != 100 || fe.More != 4900 {
		t.Fatalf("got %d problems and %d more, want 100 and 4900", len(fe.Problems), fe.More)
	}
	msg := err.Error()
	if !strings.Contains(msg, "(5000 problems)") || !strings.HasSuffix(msg, "; and 4980 more") || len(msg) > 20_000 {
		t.Fatalf("error is %d bytes, want the count, 20 problems and \"and 4980 more\": %.200s…", len(msg), msg)
	}
}

func TestSlackSettings(t *testing.T) {
	t.Parallel()
	base := "name = \"talker\"\ninstructions = \"Talk.\"\n"
	d, err := fleet.ParseTOML([]byte(base + "[x-agentsfleet.slack]\non_reply = \"interrupt\"\nmerge_seconds = 0\n"))
	if err != nil || d.Slack != (fleet.Slack{OnReply: fleet.ReplyInterrupt, MergeSeconds: 0}) {
		t.Fatalf("Parse = %+v, %v", d, err)
	}
	// They survive the canonical form and the TOML layout; the defaults
	// leave no trace in either.
	for _, back := range []func() (*fleet.Definition, error){
		func() (*fleet.Definition, error) { return fleet.ParseJSON(d.Canonical()) },
		func() (*fleet.Definition, error) { return fleet.ParseTOML(d.TOML()) },
	} {
		if got, err := back(); err != nil || got.Slack != d.Slack {
			t.Fatalf("round trip = %+v, %v", got, err)
		}
	}
	plain, _ := fleet.ParseTOML([]byte(base))
	if strings.Contains(string(plain.Canonical()), "slack") || strings.Contains(string(plain.TOML()), "slack") {
		t.Fatalf("defaults written out: %s", plain.Canonical())
	}
	for _, bad := range []struct{ toml, want string }{
		{"on_reply = \"later\"", `"later" is not a reply mode`},
		{"merge_seconds = 31", "31 is out of range; want 0 to 30 seconds"},
		{"merge = 3", `unknown key "merge"`},
	} {
		_, err := fleet.ParseTOML([]byte(base + "[x-agentsfleet.slack]\n" + bad.toml + "\n"))
		if err == nil || !strings.Contains(err.Error(), bad.want) || !strings.Contains(err.Error(), "x-agentsfleet.slack") {
			t.Errorf("%s: %v, want %q", bad.toml, err, bad.want)
		}
	}
}

func TestSlackAccess(t *testing.T) {
	t.Parallel()
	base := "name = \"talker\"\ninstructions = \"Talk.\"\n[x-agentsfleet.slack]\n"
	d, err := fleet.ParseTOML([]byte(base + "allow_start = [\"U0AAA\", \"S0ONCALL\", \"W0GRID\", \"U0AAA\"]\n"))
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"S0ONCALL", "U0AAA", "W0GRID"}; !reflect.DeepEqual(d.SlackAccess.AllowStart, want) || d.SlackAccess.AllowStop != nil {
		t.Fatalf("SlackAccess = %+v, want allow_start %v and no allow_stop", d.SlackAccess, want)
	}
	if got := d.SlackAccess.StopList(); !reflect.DeepEqual(got, d.SlackAccess.AllowStart) {
		t.Fatalf("StopList = %v, want allow_start when allow_stop is not set", got)
	}
	both, err := fleet.ParseTOML([]byte(base + "allow_start = [\"U0AAA\"]\nallow_stop = [\"S0LEADS\"]\non_reply = \"interrupt\"\n"))
	if err != nil || !reflect.DeepEqual(both.SlackAccess.StopList(), []string{"S0LEADS"}) {
		t.Fatalf("Parse = %+v, %v", both.SlackAccess, err)
	}
	for _, d := range []*fleet.Definition{d, both} {
		for _, back := range []func() (*fleet.Definition, error){
			func() (*fleet.Definition, error) { return fleet.ParseJSON(d.Canonical()) },
			func() (*fleet.Definition, error) { return fleet.ParseTOML(d.TOML()) },
		} {
			if got, err := back(); err != nil || !reflect.DeepEqual(got, d) {
				t.Fatalf("round trip = %+v, %v; want %+v", got, err, d)
			}
		}
		if c := d.Clone(); !reflect.DeepEqual(c, d) || (len(c.SlackAccess.AllowStart) > 0 && &c.SlackAccess.AllowStart[0] == &d.SlackAccess.AllowStart[0]) {
			t.Fatal("Clone shares or loses the access lists")
		}
	}
	if plain, _ := fleet.ParseTOML([]byte("name = \"talker\"\ninstructions = \"Talk.\"\n")); plain.SlackAccess.AllowStart != nil || plain.SlackAccess.StopList() != nil {
		t.Fatalf("a Definition without the keys has access %+v, want none set", plain.SlackAccess)
	}
	many := make([]string, fleet.MaxSlackAccess+1)
	for i := range many {
		many[i] = fmt.Sprintf("\"U0%04d\"", i)
	}
	for _, bad := range []struct{ toml, want string }{
		{"allow_start = []", "an empty list lets nobody in"},
		{"allow_stop = [\"alice\"]", `"alice" is not a Slack user id`},
		{"allow_start = [\"@alice\"]", "is not a Slack user id"},
		{"allow_start = [\"C0123ABCD\"]", "is not a Slack user id"},
		{"allow_start = [\"u0lower\"]", "is not a Slack user id"},
		{"allow_start = \"U0AAA\"", "want an array of strings"},
		{"allow_start = [" + strings.Join(many, ",") + "]", "at most 100"},
	} {
		_, err := fleet.ParseTOML([]byte(base + bad.toml + "\n"))
		if err == nil || !strings.Contains(err.Error(), bad.want) || !strings.Contains(err.Error(), "x-agentsfleet.slack.allow_") {
			t.Errorf("%.60s: %v, want %q", bad.toml, err, bad.want)
		}
	}
}
