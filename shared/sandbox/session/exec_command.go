package session

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/agentsfleet/agentsfleet/shared/sandbox"
	"github.com/agentsfleet/agentsfleet/shared/tool"
)

// execCommand is the exec_command tool.
type execCommand struct {
	*tool.Def[sandbox.ExecCommandArgs]
	m *Manager
}

// Close closes the Manager (every session's process group dies): the
// server closes tools that are io.Closers when it stops.
func (t *execCommand) Close() error { return t.m.Close() }

// CloseAgent closes the sessions agent started (Manager.CloseAgent): the
// server finds it on the tool by type assertion.
func (t *execCommand) CloseAgent(agent string) int { return t.m.CloseAgent(agent) }

// Run starts the command and waits up to the yield time, at most the
// call's tool timeout (Manager.within). It returns an
// error result for bad arguments, a workdir outside the roots, an unknown
// shell or a command that cannot start; a Go error only when sandboxd
// cannot make pipes or terminals, or is shutting down. The session belongs
// to the agent ctx carries (WithAgent), for CloseAgent.
func (t *execCommand) Run(ctx context.Context, args json.RawMessage) (tool.Result, error) {
	p, res, ok := t.Decode(args)
	if !ok {
		return res, nil
	}
	yield := t.m.within(ctx, yieldTime(p.YieldTimeMS, sandbox.DefaultExecYield, sandbox.MinYield))
	tokens := maxTokens(p.MaxOutputTokens)
	dir, err := t.m.workdir(p.Workdir)
	if err != nil {
		return tool.Errorf("exec_command: workdir: %v", err), nil
	}
	shell, ok := t.m.shellPath(p.Shell)
	if !ok {
		return tool.Errorf("exec_command: shell %q not found", p.Shell), nil
	}
	flag := "-c"
	if p.Login {
		flag = "-lc"
	}
	began := time.Now()
	s, err := t.m.launch(spec{shell: shell, args: []string{flag, p.Cmd}, dir: dir, env: env(p.TTY), tty: p.TTY, command: p.Cmd, agent: AgentFrom(ctx)})
	if errors.Is(err, errClosed) {
		return tool.Result{}, err
	}
	if err != nil {
		return tool.Errorf("exec_command: cannot start %s: %v", shell, err), nil
	}
	out, total, exited := s.collect(ctx, began.Add(yield), false)
	r := response{wall: time.Since(began), exited: exited, id: s.id, output: out, total: total, maxTokens: tokens}
	if exited {
		r.code = s.code
		t.m.finish(s)
	} else {
		t.m.keep(s)
	}
	return tool.Text(r.String()), nil
}

// yieldTime turns yield_time_ms (never negative: the contract refuses
// that) into a duration: def when absent, clamped to [lo, sandbox.MaxYield].
func yieldTime(ms *float64, def, lo time.Duration) time.Duration {
	if ms == nil {
		return max(def, lo)
	}
	d := time.Duration(min(*ms, float64(sandbox.MaxYield/time.Millisecond)) * float64(time.Millisecond))
	return min(max(d, lo), sandbox.MaxYield)
}

// maxTokens reads max_output_tokens (never negative): the default when
// absent, at most 2^30.
func maxTokens(n *float64) int {
	if n == nil {
		return sandbox.DefaultMaxOutputToks
	}
	return int(min(*n, 1<<30))
}
