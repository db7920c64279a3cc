package sandbox_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/agentsfleet/agentsfleet/shared/sandbox"
	"github.com/agentsfleet/agentsfleet/shared/tool"
	"github.com/agentsfleet/agentsfleet/shared/tool/tooltest"
)

func TestSpecsConform(t *testing.T) {
	t.Parallel()
	for _, s := range sandbox.Specs() {
		t.Run(s.Name(), func(t *testing.T) {
			t.Parallel()
			tooltest.Conform(t, s)
		})
	}
}

// TestDescriptionsAreUnchanged compares each description, its figures now
// taken from the constants, with the text the model was shown before
// (testdata/descriptions): a change to a figure or a word shows here.
func TestDescriptionsAreUnchanged(t *testing.T) {
	t.Parallel()
	for _, s := range sandbox.Specs() {
		want, err := os.ReadFile(filepath.Join("testdata", "descriptions", s.Name()+".golden"))
		if os.IsNotExist(err) {
			continue // a tool that had no description before
		}
		if err != nil {
			t.Fatal(err)
		}
		if got := s.Description(); got != string(want) {
			t.Errorf("%s: Description() =\n%s\nwant\n%s", s.Name(), got, want)
		}
	}
}

func TestArgumentErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		check func(json.RawMessage) (string, bool)
		in    string
		want  string
	}{
		{wrap(sandbox.Read.Check), `{"path": 3}`, `read: argument "path" must be a string, not 3`},
		{wrap(sandbox.Read.Check), `{"path": "a", "limit": "x"}`, `read: argument "limit" must be an integer, not a string`},
		{wrap(sandbox.Read.Check), `{"path": "a", "nope": 1}`, `read: unknown argument "nope"; the arguments are path, offset and limit`},
		{wrap(sandbox.Read.Check), `[1]`, `read: the arguments must be a JSON object, not an array`},
		{wrap(sandbox.Read.Check), `{"path": "a"} {}`, `read: the arguments must be one JSON object, with nothing after it`},
		{wrap(sandbox.Read.Check), `{"path": "a", "offset": 0}`, `read: argument "offset" must be 1 or more, not 0`},
		{wrap(sandbox.Grep.Check), `{"pattern": "x", "max_results": -3}`, `grep: argument "max_results" must be 1 or more, not -3`},
		{wrap(sandbox.Bash.Check), `{"command": "  "}`, `bash: argument "command" must not be empty`},
		{wrap(sandbox.WriteStdin.Check), `{"session_id": "x1"}`, `write_stdin: argument "session_id" must be an integer, not a string`},
		{wrap(sandbox.WriteStdin.Check), `{}`, `write_stdin: argument "session_id" is required`},
		{wrap(sandbox.ExecCommand.Check), `{"cmd": "ls", "yield_time_ms": -1}`, `exec_command: argument "yield_time_ms" must be 0 or more, not -1`},
		{wrap(sandbox.Screenshot.Check), `{"full": true}`, `screenshot: unknown argument "full"; the arguments are full_page and selector`},
	}
	for _, tt := range tests {
		if got, ok := tt.check(json.RawMessage(tt.in)); ok || got != tt.want {
			t.Errorf("Check(%s) = %q, %v; want %q", tt.in, got, ok, tt.want)
		}
	}
}

func TestDefaultsAndClamps(t *testing.T) {
	t.Parallel()
	read, _, _ := sandbox.Read.Decode(json.RawMessage(`{"path":"a","limit":5000}`))
	if read.Offset != 1 || read.Limit != sandbox.ReadMaxLimit {
		t.Errorf("read = %+v, want offset 1 and limit %d", read, sandbox.ReadMaxLimit)
	}
	grep, _, _ := sandbox.Grep.Decode(json.RawMessage(`{"pattern":"x"}`))
	if grep.MaxResults != sandbox.GrepDefaultResults {
		t.Errorf("grep max_results = %d, want %d", grep.MaxResults, sandbox.GrepDefaultResults)
	}
	ws, _, _ := sandbox.WriteStdin.Decode(json.RawMessage(`{"session_id":"12"}`))
	if ws.SessionID != 12 || ws.YieldTimeMS != nil || ws.MaxOutputTokens == nil || *ws.MaxOutputTokens != sandbox.DefaultMaxOutputToks {
		t.Errorf("write_stdin = %+v; want session 12, no yield time, the default token cap", ws)
	}
}

func wrap(check func(json.RawMessage) (tool.Result, bool)) func(json.RawMessage) (string, bool) {
	return func(raw json.RawMessage) (string, bool) {
		res, ok := check(raw)
		return res.Output, ok
	}
}
