package scripted_test

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/agentsfleet/agentsfleet/shared/model/scripted"
)

func TestParseErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		file     string
		src      string
		wantLine int
		wantMsg  string
	}{
		{
			name:     "toml syntax",
			file:     "s.toml",
			src:      "[[turn]]\ntext = \"a\"\ntext = = \"b\"\n",
			wantLine: 3,
			wantMsg:  "",
		},
		{
			name:     "json syntax",
			file:     "s.json",
			src:      "{\"turn\": [\n  {\"text\": \"a\"},\n  {\"text\": \"b\",,}\n]}\n",
			wantLine: 3,
			wantMsg:  "invalid character",
		},
		{
			name:     "unknown key",
			file:     "s.toml",
			src:      "[[turn]]\ntext = \"a\"\n\n[[turn]]\ntxt = \"b\"\n",
			wantLine: 5,
			wantMsg:  `turn 2: unknown key "txt"`,
		},
		{
			name:     "unknown top-level key",
			file:     "s.toml",
			src:      "name = \"x\"\n[[turn]]\ntext = \"a\"\n",
			wantLine: 1,
			wantMsg:  `the script: unknown key "name"`,
		},
		{
			name:     "unknown placeholder in multi-line text",
			file:     "s.toml",
			src:      "[[turn]]\ntext = '''first line\nsecond line\nthird {{inptu}} line'''\n",
			wantLine: 4,
			wantMsg:  "turn 1: unknown placeholder {{inptu}}: the placeholders are {{input}}",
		},
		{
			name:     "unknown placeholder in a table argument",
			file:     "s.toml",
			src:      "[[turn]]\n[[turn.tool_call]]\nname = \"bash\"\narguments = { command = \"echo {{nope}}\" }\n",
			wantLine: 4,
			wantMsg:  "turn 1, tool call 1 (bash): unknown placeholder {{nope}}",
		},
		{
			name:     "unknown placeholder in a nested table argument",
			file:     "s.toml",
			src:      "[[turn]]\n[[turn.tool_call]]\nname = \"x\"\n[turn.tool_call.arguments]\na = \"ok\"\nb = [\"ok\", \"{{nope}}\"]\n",
			wantLine: 6,
			wantMsg:  "unknown placeholder {{nope}}",
		},
		{
			name:     "unknown placeholder in a JSON-string argument",
			file:     "s.toml",
			src:      "[[turn]]\ntext = \"hi\"\n\n[[turn.tool_call]]\nname = \"bash\"\narguments = '{\"command\": \"echo {{ nope }}\"}'\n",
			wantLine: 6,
			wantMsg:  "unknown placeholder {{ nope }}",
		},
		{
			name:     "unknown placeholder in a JSON script",
			file:     "s.json",
			src:      "{\n  \"turn\": [\n    {\"text\": \"a\"},\n    {\"text\": \"b\",\n     \"tool_call\": [{\"name\": \"bash\", \"arguments\": {\"command\": \"{{what}}\"}}]}\n  ]\n}\n",
			wantLine: 5,
			wantMsg:  "turn 2, tool call 1 (bash): unknown placeholder {{what}}",
		},
		{
			name:     "unclosed placeholder",
			file:     "s.toml",
			src:      "[[turn]]\ntext = \"a {{input\"\n",
			wantLine: 2,
			wantMsg:  "unclosed placeholder {{input",
		},
		{
			name:     "output without a tool name",
			file:     "s.toml",
			src:      "[[turn]]\n[[turn.tool_call]]\nname = \"list\"\n[[turn]]\ntext = \"{{output}}\"\n",
			wantLine: 5,
			wantMsg:  `malformed placeholder {{output}}: output takes a tool name in double quotes`,
		},
		{
			name:     "a turn with neither text nor tool calls",
			file:     "s.toml",
			src:      "[[turn]]\ntext = \"a\"\n\n[[turn]]\n\n[[turn]]\ntext = \"c\"\n",
			wantLine: 4,
			wantMsg:  "turn 2 has neither text nor tool calls",
		},
		{
			name:     "an empty inline turn",
			file:     "s.toml",
			src:      "turn = [\n  { text = \"a\" },\n  { },\n]\n",
			wantLine: 3,
			wantMsg:  "turn 2 has neither text nor tool calls",
		},
		{
			name:     "empty text counts as none",
			file:     "s.json",
			src:      "{\"turn\": [\n{\"text\": \"\"}]}",
			wantLine: 2,
			wantMsg:  "turn 1 has neither text nor tool calls",
		},
		{
			name:     "last_output in the first turn",
			file:     "s.toml",
			src:      "# comment\n[[turn]]\ntext = \"\"\"\nI saw {{last_output}}\"\"\"\n",
			wantLine: 4,
			wantMsg:  "turn 1: {{last_output}} reads the last tool result, but no earlier turn calls a tool",
		},
		{
			name:     "output of a tool no earlier turn calls",
			file:     "s.toml",
			src:      "[[turn]]\n[[turn.tool_call]]\nname = \"list\"\n\n[[turn]]\ntext = '{{output \"read\"}}'\n",
			wantLine: 6,
			wantMsg:  `turn 2: {{output "read"}} reads a result of read, but no earlier turn calls read`,
		},
		{
			name:     "a tool called in the same turn does not count",
			file:     "s.toml",
			src:      "[[turn]]\ntext = '{{output \"list\"}}'\n[[turn.tool_call]]\nname = \"list\"\n",
			wantLine: 2,
			wantMsg:  `no earlier turn calls list`,
		},
		{
			name:     "an alternative without a condition",
			file:     "s.toml",
			src:      "[[turn]]\n[[turn.tool_call]]\nname = \"list\"\n[[turn]]\ntext = \"a\"\n[[turn.alternative]]\ntext = \"b\"\n",
			wantLine: 6,
			wantMsg:  "turn 2, alternative 1: an alternative needs a condition",
		},
		{
			name:     "a condition in the first turn",
			file:     "s.toml",
			src:      "[[turn]]\ntext = \"a\"\n[[turn.alternative]]\nwhen_last_error = true\ntext = \"b\"\n",
			wantLine: 3,
			wantMsg:  "turn 1, alternative 1: its condition reads the last tool result, but no earlier turn calls a tool",
		},
		{
			name:     "an empty alternative",
			file:     "s.toml",
			src:      "[[turn]]\n[[turn.tool_call]]\nname = \"list\"\n[[turn]]\ntext = \"a\"\n[[turn.alternative]]\nwhen_last_error = true\n",
			wantLine: 6,
			wantMsg:  "turn 2, alternative 1 has neither text nor tool calls",
		},
		{
			name:     "a condition of the wrong type",
			file:     "s.toml",
			src:      "[[turn]]\n[[turn.tool_call]]\nname = \"list\"\n[[turn]]\ntext = \"a\"\n[[turn.alternative]]\nwhen_last_error = \"yes\"\ntext = \"b\"\n",
			wantLine: 7,
			wantMsg:  "turn 2, alternative 1: when_last_error is a string, want true or false",
		},
		{
			name:     "text of the wrong type",
			file:     "s.toml",
			src:      "[[turn]]\ntext = 3\n",
			wantLine: 2,
			wantMsg:  "turn 1: text is a number, want a string",
		},
		{
			name:     "arguments that are not a JSON object",
			file:     "s.toml",
			src:      "[[turn]]\n[[turn.tool_call]]\nname = \"bash\"\narguments = '[1, 2]'\n",
			wantLine: 4,
			wantMsg:  "turn 1, tool call 1 (bash): arguments are an array, want a JSON object",
		},
		{
			name:     "arguments that are not JSON",
			file:     "s.toml",
			src:      "[[turn]]\n[[turn.tool_call]]\nname = \"bash\"\narguments = '{command: 1}'\n",
			wantLine: 4,
			wantMsg:  "turn 1, tool call 1 (bash): arguments are not JSON",
		},
		{
			name:     "arguments that cannot be JSON",
			file:     "s.toml",
			src:      "[[turn]]\n[[turn.tool_call]]\nname = \"x\"\narguments = { n = nan }\n",
			wantLine: 4,
			wantMsg:  "arguments cannot be JSON",
		},
		{
			name:     "a bad tool name",
			file:     "s.toml",
			src:      "[[turn]]\n[[turn.tool_call]]\nname = \"read file\"\n",
			wantLine: 3,
			wantMsg:  `turn 1, tool call 1: name "read file" is not a tool name`,
		},
		{
			name:     "a tool call without a name",
			file:     "s.json",
			src:      "{\"turn\": [\n  {\"tool_call\": [\n    {\"arguments\": {}}]}]}",
			wantLine: 3,
			wantMsg:  "turn 1, tool call 1 has no name",
		},
		{
			name:     "a bad stop",
			file:     "s.toml",
			src:      "[[turn]]\ntext = \"a\"\nstop = \"end_turn\"\n",
			wantLine: 3,
			wantMsg:  `turn 1: stop is "end_turn", want "max_tokens" or "other"`,
		},
		{
			name:     "a stop with tool calls",
			file:     "s.toml",
			src:      "[[turn]]\nstop = \"max_tokens\"\n[[turn.tool_call]]\nname = \"list\"\n",
			wantLine: 2,
			wantMsg:  "turn 1: stop is for an answer without tool calls",
		},
		{
			name:     "no turns",
			file:     "s.toml",
			src:      "# nothing\ndescription = \"x\"\n",
			wantLine: 0,
			wantMsg:  "the script has no turns",
		},
		{
			name:     "turn that is not an array",
			file:     "s.toml",
			src:      "\n[turn]\ntext = \"a\"\n",
			wantLine: 2,
			wantMsg:  "the script: turn is a table, want an array of tables",
		},
		{
			name:     "a JSON document that is not an object",
			file:     "s.json",
			src:      "[]",
			wantLine: 1,
			wantMsg:  `a script is an object with a "turn" array, not an array`,
		},
		{
			name:     "an empty JSON file",
			file:     "s.json",
			src:      "  \n",
			wantLine: 0,
			wantMsg:  "the script is empty",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			m, err := scripted.Parse([]byte(tt.src), tt.file)
			if err == nil {
				t.Fatalf("Parse = %v, nil; want an error", m)
			}
			var pe *scripted.ParseError
			if !errors.As(err, &pe) {
				t.Fatalf("Parse error = %T %v, want a *scripted.ParseError", err, err)
			}
			if pe.File != tt.file {
				t.Errorf("File = %q, want %q", pe.File, tt.file)
			}
			if pe.Line != tt.wantLine {
				t.Errorf("Line = %d, want %d (error: %v)", pe.Line, tt.wantLine, err)
			}
			if !strings.Contains(pe.Message, tt.wantMsg) {
				t.Errorf("Message = %q, want it to contain %q", pe.Message, tt.wantMsg)
			}
			wantPrefix := tt.file + ":"
			if tt.wantLine > 0 {
				wantPrefix = tt.file + ":" + strconv.Itoa(tt.wantLine) + ": "
			}
			if !strings.HasPrefix(err.Error(), wantPrefix) {
				t.Errorf("Error() = %q, want it to start with %q", err.Error(), wantPrefix)
			}
		})
	}
}

func TestParseAccepts(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		file      string
		src       string
		wantTurns int
	}{
		{"inline tool calls", "s.toml", "[[turn]]\ntool_call = [{ name = \"list\" }, { name = \"bash\", arguments = '{\"command\": \"true\"}' }]\n[[turn]]\ntext = \"{{ last_output }}\"\n", 2},
		{"a literal brace placeholder", "s.toml", "[[turn]]\ntext = '{{\"{{\"}}input}}'\n", 1},
		{"an empty argument string", "s.toml", "[[turn]]\n[[turn.tool_call]]\nname = \"list\"\narguments = \"\"\n", 1},
		{"placeholders in comments are not read", "s.toml", "# {{nonsense}}\n[[turn]]\ntext = \"a\" # {{last_output}}\n", 1},
		{"a description", "s.json", `{"description": "x", "turn": [{"text": "a"}]}`, 1},
		{"a file name in upper case", "S.JSON", `{"turn": [{"text": "a"}]}`, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			m, err := scripted.Parse([]byte(tt.src), tt.file)
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if got := m.Turns(); got != tt.wantTurns {
				t.Errorf("Turns() = %d, want %d", got, tt.wantTurns)
			}
		})
	}
}

func TestLoad(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	good := filepath.Join(dir, "good.json")
	if err := os.WriteFile(good, []byte(`{"turn": [{"text": "a"}, {"text": "b"}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	m, err := scripted.Load(good)
	if err != nil {
		t.Fatalf("Load(%s): %v", good, err)
	}
	if got := m.Turns(); got != 2 {
		t.Errorf("Turns() = %d, want 2", got)
	}

	bad := filepath.Join(dir, "bad.toml")
	if err := os.WriteFile(bad, []byte("[[turn]]\ntext = \"{{x}}\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err = scripted.Load(bad)
	if want := bad + ":2: turn 1: unknown placeholder {{x}}"; err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Errorf("Load(bad) error = %v, want it to start with %q", err, want)
	}

	_, err = scripted.Load(filepath.Join(dir, "missing.toml"))
	if !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Load(missing) error = %v, want os.ErrNotExist", err)
	}
}
