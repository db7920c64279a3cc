package session

import (
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"strings"
	"time"

	"github.com/agentsfleet/agentsfleet/shared/sandbox"
)

//go:embed exec_command.txt
var execCommandDescription string

// Limits of exec_command and write_stdin, Codex's.
const (
	DefaultExecYield     = 10 * time.Second
	DefaultWriteYield    = 250 * time.Millisecond
	MinYield             = 250 * time.Millisecond
	MaxYield             = 30 * time.Second
	MinEmptyPollYield    = 5 * time.Second
	DefaultMaxOutputToks = 10_000
)

// ExecCommandParams are exec_command's arguments, Codex's names.
type ExecCommandParams struct {
	Cmd             string   `json:"cmd" description:"Shell command to execute."`
	Workdir         string   `json:"workdir,omitempty" description:"Optional working directory to run the command in; defaults to the workdir."`
	Shell           string   `json:"shell,omitempty" description:"Shell binary to launch. Defaults to /bin/bash (or /bin/sh)."`
	Login           bool     `json:"login,omitempty" description:"Whether to run the shell with -l (read profile files). Defaults to false."`
	TTY             bool     `json:"tty,omitempty" description:"Whether to allocate a TTY for the command. Defaults to false (plain pipes); set to true to open a PTY and access TTY process."`
	YieldTimeMS     *float64 `json:"yield_time_ms,omitempty" description:"How long to wait (in milliseconds) for output before yielding."`
	MaxOutputTokens *float64 `json:"max_output_tokens,omitempty" description:"Maximum number of tokens to return. Excess output will be truncated."`
}

// execCommand is the exec_command tool.
type execCommand struct{ m *Manager }

func (*execCommand) Name() string        { return "exec_command" }
func (*execCommand) Description() string { return execCommandDescription }

// Close closes the Manager (every session's process group dies): the
// server closes tools that are io.Closers when it stops.
func (t *execCommand) Close() error { return t.m.Close() }

// Run starts the command and waits up to the yield time. It returns an
// error result for bad arguments, a workdir outside the roots, an unknown
// shell or a command that cannot start; a Go error only when sandboxd
// cannot make pipes or terminals, or is shutting down.
func (t *execCommand) Run(ctx context.Context, args json.RawMessage) (sandbox.Result, error) {
	var p ExecCommandParams
	if res, ok := sandbox.DecodeArgs(t.Name(), args, &p); !ok {
		return res, nil
	}
	if strings.TrimSpace(p.Cmd) == "" {
		return sandbox.Errorf(`exec_command: "cmd" is required`), nil
	}
	yield, res, ok := yieldTime(t.Name(), p.YieldTimeMS, DefaultExecYield, MinYield)
	if !ok {
		return res, nil
	}
	tokens, res, ok := maxTokens(t.Name(), p.MaxOutputTokens)
	if !ok {
		return res, nil
	}
	dir, err := t.m.workdir(p.Workdir)
	if err != nil {
		return sandbox.Errorf("exec_command: workdir: %v", err), nil
	}
	shell, ok := t.m.shellPath(p.Shell)
	if !ok {
		return sandbox.Errorf("exec_command: shell %q not found", p.Shell), nil
	}
	flag := "-c"
	if p.Login {
		flag = "-lc"
	}
	began := time.Now()
	s, err := t.m.launch(spec{shell: shell, args: []string{flag, p.Cmd}, dir: dir, env: env(p.TTY), tty: p.TTY, command: p.Cmd})
	if errors.Is(err, errClosed) {
		return sandbox.Result{}, err
	}
	if err != nil {
		return sandbox.Errorf("exec_command: cannot start %s: %v", shell, err), nil
	}
	out, total, exited := s.collect(ctx, began.Add(yield), false)
	r := response{wall: time.Since(began), exited: exited, id: s.id, output: out, total: total, maxTokens: tokens}
	if exited {
		r.code = s.code
		t.m.finish(s)
	} else {
		t.m.keep(s)
	}
	return sandbox.Text(r.String()), nil
}

// yieldTime turns yield_time_ms into a duration: def when absent, clamped
// to [lo, MaxYield].
func yieldTime(tool string, ms *float64, def, lo time.Duration) (time.Duration, sandbox.Result, bool) {
	if ms == nil {
		return max(def, lo), sandbox.Result{}, true
	}
	if *ms < 0 {
		return 0, sandbox.Errorf(`%s: "yield_time_ms" must not be negative`, tool), false
	}
	d := time.Duration(min(*ms, float64(MaxYield/time.Millisecond)) * float64(time.Millisecond))
	return min(max(d, lo), MaxYield), sandbox.Result{}, true
}

// maxTokens reads max_output_tokens: DefaultMaxOutputToks when absent.
func maxTokens(tool string, n *float64) (int, sandbox.Result, bool) {
	if n == nil {
		return DefaultMaxOutputToks, sandbox.Result{}, true
	}
	if *n < 0 {
		return 0, sandbox.Errorf(`%s: "max_output_tokens" must not be negative`, tool), false
	}
	return int(min(*n, 1<<30)), sandbox.Result{}, true
}
