package session

import (
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"time"

	"github.com/agentsfleet/agentsfleet/shared/sandbox"
	"github.com/agentsfleet/agentsfleet/shared/tool"
)

// writeStdin is the write_stdin tool.
type writeStdin struct {
	*tool.Def[sandbox.WriteStdinArgs]
	m *Manager
}

// Close closes the Manager, as exec_command's Close does (it is idempotent).
func (t *writeStdin) Close() error { return t.m.Close() }

// Run writes chars to the session (none: a poll) and collects its output,
// within the call's tool timeout (Manager.within) once it has the session.
// An unknown session, or a write to a closed input, is an error result
// listing the live sessions.
func (t *writeStdin) Run(ctx context.Context, args json.RawMessage) (tool.Result, error) {
	p, res, ok := t.Decode(args)
	if !ok {
		return res, nil
	}
	def, lo := sandbox.DefaultWriteYield, sandbox.MinYield
	if p.Chars == "" {
		def, lo = sandbox.MinEmptyPollYield, sandbox.MinEmptyPollYield
	}
	yield := t.m.within(ctx, yieldTime(p.YieldTimeMS, def, lo))
	tokens := maxTokens(p.MaxOutputTokens)
	id := int(p.SessionID)
	s, why := t.m.lookup(id)
	if s == nil {
		return tool.Errorf("write_stdin: %s", why), nil
	}
	s.io.Lock()
	defer s.io.Unlock()
	if s, why = t.m.lookup(id); s == nil { // finished while we waited for the lock
		return tool.Errorf("write_stdin: %s", why), nil
	}
	began := time.Now()
	if p.Chars != "" {
		if s.hasExited() {
			return tool.Errorf("write_stdin: session %d has exited, so its stdin is closed; poll it with empty chars to read the rest of its output and its exit code", id), nil
		}
		if err := s.write(p.Chars, t.m.within(ctx, max(yield, 2*time.Second))); err != nil {
			if errors.Is(err, errStdinClosed) {
				return tool.Errorf("write_stdin: the stdin of session %d is closed; poll it with empty chars to read its output. %s", id, t.m.liveList()), nil
			}
			return tool.Errorf("write_stdin: session %d: %v", id, err), nil
		}
	}
	out, total, exited := s.collect(ctx, began.Add(yield), p.Chars == "")
	r := response{wall: time.Since(began), exited: exited, id: id, output: out, total: total, maxTokens: tokens}
	if exited {
		r.code = s.code
		t.m.finish(s)
	}
	return tool.Text(r.String()), nil
}
