package shell

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/agentsfleet/agentsfleet/shared/sandbox"
	"github.com/agentsfleet/agentsfleet/shared/sandbox/confine"
	"github.com/agentsfleet/agentsfleet/shared/tool"
)

// drainWait is how long the output is still read after the command's
// process group is gone, for a process that left the group and still
// holds the output open.
const drainWait = 2 * time.Second

// Bash is the bash tool. Safe for concurrent use.
type Bash struct {
	*tool.Def[sandbox.BashArgs]
	roots   *sandbox.Roots
	policy  *confine.Policy
	timeout time.Duration
}

var _ tool.Tool = (*Bash)(nil)

// NewBash returns the bash tool: commands run in the workdir of roots under
// policy, and are killed with their whole process group after timeout (the
// fleet's tool_timeout_seconds; zero means no limit), or after the call's
// own (sandbox.WithToolTimeout).
func NewBash(roots *sandbox.Roots, policy *confine.Policy, timeout time.Duration) *Bash {
	return &Bash{Def: sandbox.Bash, roots: roots, policy: policy, timeout: timeout}
}

// Run runs the command. A non-zero exit or a timeout is an error result; a
// failure to start the shell is a Go error.
func (t *Bash) Run(ctx context.Context, raw json.RawMessage) (tool.Result, error) {
	args, res, ok := t.Decode(raw)
	if !ok {
		return res, nil
	}
	if strings.ContainsRune(args.Command, 0) {
		return tool.Errorf("bash: command must not contain a NUL character"), nil
	}
	cmd, err := t.policy.Command("/bin/sh", "-c", args.Command)
	if err != nil {
		return tool.Result{}, fmt.Errorf("bash: %w", err)
	}
	cmd.Dir = t.roots.Workdir()
	cmd.Stdin = nil // /dev/null
	return runGroup(ctx, "bash", cmd, t.timeout)
}

// runGroup runs cmd, from Policy.Command with its Dir and Stdin set, as
// bash runs its command, and makes its result: the combined output, cut as
// bash's, then the exit code, or what stopped it (the tool timeout, else
// ctx). name starts a Go error.
func runGroup(ctx context.Context, name string, cmd *exec.Cmd, ownTimeout time.Duration) (tool.Result, error) {
	o, err := runCaptured(ctx, cmd, sandbox.ToolTimeout(ctx, ownTimeout)) // the call's, else the tool's own
	if err != nil {
		return tool.Result{}, fmt.Errorf("%s: %w", name, err)
	}
	switch {
	case o.timedOut:
		return tool.Errorf("%s[timed out after %s: the command and every process it started were killed]", o.text, seconds(o.timeout)), nil
	case o.stopped != nil:
		return tool.Errorf("%s[stopped before it finished (%v): the command and every process it started were killed]", o.text, o.stopped), nil
	}
	return tool.Result{Output: fmt.Sprintf("%s[exit code %d]", o.text, o.code), IsError: o.code != 0}, nil
}

// outcome is how a command runCaptured ran ended.
type outcome struct {
	// text is the captured output, ending in a newline unless empty.
	text string
	// code is the exit status, when the command was not stopped.
	code int
	// timedOut says timeout passed and the command's group was killed.
	timedOut bool
	timeout  time.Duration
	// stopped is why ctx ended the command first, when it did.
	stopped error
}

// runCaptured starts cmd (from Policy.Command, its Dir and Stdin set) with
// one pipe for stdout and stderr, which keeps their order, keeps its first
// BashOutputHead and last BashOutputTail bytes, and kills its whole
// process group after timeout (zero: none) or when ctx ends. A failure to
// start is the error.
func runCaptured(ctx context.Context, cmd *exec.Cmd, timeout time.Duration) (outcome, error) {
	// sandboxd reads the pipe itself (not os/exec), so a process holding
	// it open cannot hold up the result past drainWait.
	pr, pw, err := os.Pipe()
	if err != nil {
		return outcome{}, fmt.Errorf("pipe: %w", err)
	}
	defer pr.Close()
	cmd.Stdout, cmd.Stderr = pw, pw
	g, err := confine.StartGroup(cmd)
	pw.Close()
	if err != nil {
		return outcome{}, fmt.Errorf("start /bin/sh: %w", err)
	}
	out := newCapture(sandbox.BashOutputHead, sandbox.BashOutputTail)
	copied := make(chan struct{})
	go func() {
		drain(out, pr)
		close(copied)
	}()

	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeoutCause(ctx, timeout, errToolTimeout)
		defer cancel()
	}
	var stopped error
	select {
	case <-g.Done():
	case <-ctx.Done():
		g.Kill()
		<-g.Done()
		stopped = context.Cause(ctx)
	}
	_ = pr.SetReadDeadline(time.Now().Add(drainWait))
	<-copied

	o := outcome{text: out.String(), timeout: timeout}
	if o.text != "" && !strings.HasSuffix(o.text, "\n") {
		o.text += "\n"
	}
	if stopped != nil {
		o.timedOut = stopped == errToolTimeout
		if !o.timedOut {
			o.stopped = stopped
		}
		return o, nil
	}
	o.code, err = exitCode(g.Err())
	return o, err
}

// drain copies the output pipe r into w until it closes or its read
// deadline passes. A large pipe and large reads keep a command that prints
// gigabytes from waiting on sandboxd.
func drain(w io.Writer, r *os.File) {
	if rc, err := r.SyscallConn(); err == nil {
		_ = rc.Control(func(fd uintptr) { _, _ = unix.FcntlInt(fd, unix.F_SETPIPE_SZ, pipeSize) })
	}
	buf := drainBuffers.Get().(*[]byte)
	defer drainBuffers.Put(buf)
	// Hide r's WriteTo, which would copy through a small buffer of its own.
	_, _ = io.CopyBuffer(w, struct{ io.Reader }{r}, *buf)
}

var drainBuffers = sync.Pool{New: func() any { b := make([]byte, pipeSize); return &b }}

// pipeSize is the output pipe's capacity and read size: the default
// largest pipe an unprivileged process may ask for.
const pipeSize = 1 << 20

// seconds writes a timeout the way the fleet sets it: "120 seconds".
func seconds(d time.Duration) string {
	if d%time.Second == 0 {
		n := int(d / time.Second)
		if n == 1 {
			return "1 second"
		}
		return fmt.Sprintf("%d seconds", n)
	}
	return d.String()
}
