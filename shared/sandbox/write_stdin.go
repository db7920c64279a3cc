package sandbox

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/agentsfleet/agentsfleet/shared/tool"
)

//go:embed write_stdin.txt
var writeStdinText string

// WriteStdinArgs are write_stdin's arguments, Codex's names. The yield
// time has no default here: it depends on whether chars is empty (a poll).
type WriteStdinArgs struct {
	SessionID       SessionID `json:"session_id" description:"Identifier of the running unified exec session."`
	Chars           string    `json:"chars,omitempty" description:"Bytes to write to stdin (may be empty to poll)."`
	YieldTimeMS     *float64  `json:"yield_time_ms,omitempty" description:"How long to wait (in milliseconds) for output before yielding."`
	MaxOutputTokens *float64  `json:"max_output_tokens,omitempty" description:"Maximum number of tokens to return. Excess output will be truncated."`
}

// SessionID is a session id given as a JSON number (Codex's schema) or a
// string of digits.
type SessionID int

// UnmarshalJSON accepts 1234 and "1234".
func (id *SessionID) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if len(b) > 0 && b[0] == '"' {
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		b = []byte(s)
	}
	n, err := strconv.Atoi(string(b))
	if err != nil {
		return fmt.Errorf("session_id must be an integer, not %s", b)
	}
	*id = SessionID(n)
	return nil
}

// WriteStdin is write_stdin's contract: sends input to a process
// exec_command started, and polls it.
var WriteStdin = tool.DefineIn[WriteStdinArgs](&contracts, tool.About{
	Name:        "write_stdin",
	RunsIn:      tool.InSandbox,
	Scope:       tool.ScopeExecute,
	Summary:     "Sends input to a process exec_command started",
	Description: writeStdinText,
	Rules: tool.Rules{
		"session_id":        tool.Min(0),
		"yield_time_ms":     tool.Min(0),
		"max_output_tokens": tool.Min(0).Default(DefaultMaxOutputToks),
	},
	Values: map[string]any{
		"DefaultYieldMS": DefaultWriteYield.Milliseconds(),
		"MinYieldMS":     MinYield.Milliseconds(),
		"MaxYieldMS":     MaxYield.Milliseconds(),
		"MinPollMS":      MinEmptyPollYield.Milliseconds(),
		"BytesPerToken":  BytesPerToken,
	},
})
