package session

import (
	"bytes"
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/agentsfleet/agentsfleet/shared/sandbox"
)

//go:embed write_stdin.txt
var writeStdinDescription string

// WriteStdinParams are write_stdin's arguments, Codex's names.
type WriteStdinParams struct {
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
		return fmt.Errorf("json: session_id must be an integer, not %s", b)
	}
	*id = SessionID(n)
	return nil
}

// writeStdin is the write_stdin tool.
type writeStdin struct{ m *Manager }

func (*writeStdin) Name() string        { return "write_stdin" }
func (*writeStdin) Description() string { return writeStdinDescription }

// Close closes the Manager, as exec_command's Close does (it is idempotent).
func (t *writeStdin) Close() error { return t.m.Close() }

// Run writes chars to the session (none: a poll) and collects its output.
// An unknown session, or a write to a closed input, is an error result
// listing the live sessions.
func (t *writeStdin) Run(ctx context.Context, args json.RawMessage) (sandbox.Result, error) {
	var p WriteStdinParams
	p.SessionID = -1
	if res, ok := sandbox.DecodeArgs(t.Name(), args, &p); !ok {
		return res, nil
	}
	if p.SessionID < 0 {
		return sandbox.Errorf(`write_stdin: "session_id" is required: the number from "Process running with session ID N"`), nil
	}
	def, lo := DefaultWriteYield, MinYield
	if p.Chars == "" {
		def, lo = MinEmptyPollYield, MinEmptyPollYield
	}
	yield, res, ok := yieldTime(t.Name(), p.YieldTimeMS, def, lo)
	if !ok {
		return res, nil
	}
	tokens, res, ok := maxTokens(t.Name(), p.MaxOutputTokens)
	if !ok {
		return res, nil
	}
	id := int(p.SessionID)
	s, why := t.m.lookup(id)
	if s == nil {
		return sandbox.Errorf("write_stdin: %s", why), nil
	}
	s.io.Lock()
	defer s.io.Unlock()
	if s, why = t.m.lookup(id); s == nil { // finished while we waited for the lock
		return sandbox.Errorf("write_stdin: %s", why), nil
	}
	began := time.Now()
	if p.Chars != "" {
		if s.hasExited() {
			return sandbox.Errorf("write_stdin: session %d has exited, so its stdin is closed; poll it with empty chars to read the rest of its output and its exit code", id), nil
		}
		if err := s.write(p.Chars, max(yield, 2*time.Second)); err != nil {
			if errors.Is(err, errStdinClosed) {
				return sandbox.Errorf("write_stdin: the stdin of session %d is closed; poll it with empty chars to read its output. %s", id, t.m.liveList()), nil
			}
			return sandbox.Errorf("write_stdin: session %d: %v", id, err), nil
		}
	}
	out, total, exited := s.collect(ctx, began.Add(yield), p.Chars == "")
	r := response{wall: time.Since(began), exited: exited, id: id, output: out, total: total, maxTokens: tokens}
	if exited {
		r.code = s.code
		t.m.finish(s)
	}
	return sandbox.Text(r.String()), nil
}
