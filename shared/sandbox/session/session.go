package session

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/agentsfleet/agentsfleet/shared/sandbox/confine"
)

// errStdinClosed is a write to a session whose input is closed.
var errStdinClosed = errors.New("stdin is closed")

// session is one process group started by exec_command.
type session struct {
	id      int
	command string // the cmd as the model gave it, for listings
	agent   string // the agent that started it (WithAgent); "" for the top-level one
	tty     bool
	cmd     *exec.Cmd
	out     *outputBuffer
	exited  chan struct{} // closed once the leader has exited and been reaped
	done    chan struct{} // closed once the reader and the waiter have ended
	timer   *time.Timer   // the lifetime limit

	group *confine.Group
	code  int // exit code; valid once exited is closed

	io          sync.Mutex // one write_stdin at a time
	stdin       *os.File   // pipe write end, or the pty master
	stdinClosed atomic.Bool
	output      *os.File // pipe read end, or the pty master

	// Guarded by Manager.mu.
	lastUsed time.Time
	visible  bool // handed to the model: write_stdin may use it
	removed  bool
}

// spec is what to start.
type spec struct {
	shell   string
	args    []string
	dir     string
	env     []string
	tty     bool
	command string
	agent   string
}

// ptyRows and ptyCols are the terminal size of a tty session (Codex's).
const ptyRows, ptyCols = 24, 80

// start starts sp confined by policy and the goroutines that collect its
// output and its exit. bufBytes caps the output kept between calls; after
// lifetime (if positive) the group is killed.
func start(policy *confine.Policy, sp spec, id, bufBytes int, lifetime time.Duration) (*session, error) {
	cmd, err := policy.Command(sp.shell, sp.args...)
	if err != nil {
		return nil, err
	}
	cmd.Dir = sp.dir
	cmd.Env = append(cmd.Env, sp.env...)
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	// Its own session, hence its own process group (confine sets this too).
	cmd.SysProcAttr.Setsid = true
	s := &session{
		id:      id,
		command: sp.command,
		agent:   sp.agent,
		tty:     sp.tty,
		cmd:     cmd,
		out:     newOutputBuffer(bufBytes),
		exited:  make(chan struct{}),
		done:    make(chan struct{}),
	}
	var childFiles []*os.File
	if sp.tty {
		master, slave, err := openPTY(ptyRows, ptyCols)
		if err != nil {
			return nil, err
		}
		if uid, gid := policy.Identity(); uid != os.Geteuid() {
			// The child runs as another user: give it its terminal, as
			// login programs do, so it can reopen it by name.
			if err := slave.Chown(uid, gid); err != nil {
				master.Close()
				slave.Close()
				return nil, fmt.Errorf("give the terminal to uid %d: %w", uid, err)
			}
		}
		cmd.Stdin, cmd.Stdout, cmd.Stderr = slave, slave, slave
		// The terminal becomes the controlling terminal of the new
		// session: Ctty is the child's descriptor, its stdin.
		cmd.SysProcAttr.Setctty = true
		cmd.SysProcAttr.Ctty = 0
		s.stdin, s.output = master, master
		childFiles = []*os.File{slave}
	} else {
		inR, inW, err := os.Pipe()
		if err != nil {
			return nil, fmt.Errorf("stdin pipe: %w", err)
		}
		outR, outW, err := os.Pipe()
		if err != nil {
			inR.Close()
			inW.Close()
			return nil, fmt.Errorf("output pipe: %w", err)
		}
		// stdout and stderr share one pipe, so their order is kept.
		cmd.Stdin, cmd.Stdout, cmd.Stderr = inR, outW, outW
		s.stdin, s.output = inW, outR
		childFiles = []*os.File{inR, outW}
	}
	s.group, err = confine.StartGroup(cmd)
	for _, f := range childFiles {
		f.Close()
	}
	if err != nil {
		s.closeFiles()
		return nil, err
	}
	if lifetime > 0 {
		s.timer = time.AfterFunc(lifetime, s.kill)
	}
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		s.read()
	}()
	go func() {
		defer wg.Done()
		s.wait()
	}()
	go func() {
		wg.Wait()
		close(s.done)
	}()
	return s, nil
}

// read copies the output into the buffer until it ends (every writer
// closed it, or the terminal hung up) or the file is closed.
func (s *session) read() {
	buf := make([]byte, 32<<10)
	for {
		n, err := s.output.Read(buf)
		if n > 0 {
			_, _ = s.out.Write(buf[:n])
		}
		if err != nil {
			// io.EOF for a pipe, EIO for a pty whose last holder left.
			s.out.closeWrite()
			return
		}
	}
}

// wait waits until the leader has exited, whatever it left in its group
// has been killed (a session ends with its leader, like the bash tool's
// commands) and it has been reaped.
func (s *session) wait() {
	<-s.group.Done()
	s.code = exitCode(s.cmd.ProcessState)
	if s.timer != nil {
		s.timer.Stop()
	}
	close(s.exited)
}

// exitCode is the leader's exit status, or 128+N when signal N killed it
// (as a shell reports it).
func exitCode(ps *os.ProcessState) int {
	if ps == nil {
		return -1
	}
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return ps.ExitCode()
}

// kill kills the session's leader and every descendant, unless the leader
// is already reaped (its group was killed then).
func (s *session) kill() { s.group.Kill() }

// hasExited reports whether the leader has exited.
func (s *session) hasExited() bool {
	select {
	case <-s.exited:
		return true
	default:
		return false
	}
}

// closeFiles releases the session's descriptors, ending the reader. It
// does not wait for a write_stdin in progress: its write fails instead.
func (s *session) closeFiles() {
	s.stdinClosed.Store(true)
	if s.stdin != s.output {
		s.stdin.Close()
	}
	s.output.Close()
}

// write sends chars to the session's input within timeout. On a session
// without a terminal, chars of exactly "\x04" (Ctrl-D) closes the input,
// which is how a pipe gets its end of file; on a terminal Ctrl-D is just a
// character the terminal interprets. The caller holds s.io.
func (s *session) write(chars string, timeout time.Duration) error {
	if s.stdinClosed.Load() {
		return errStdinClosed
	}
	if !s.tty && chars == "\x04" {
		s.stdinClosed.Store(true)
		return s.stdin.Close()
	}
	_ = s.stdin.SetWriteDeadline(time.Now().Add(timeout))
	n, err := io.WriteString(s.stdin, chars)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, syscall.EPIPE), errors.Is(err, syscall.EIO), errors.Is(err, os.ErrClosed):
		if !s.tty {
			s.stdinClosed.Store(true)
			s.stdin.Close()
		}
		return errStdinClosed
	case errors.Is(err, os.ErrDeadlineExceeded):
		return fmt.Errorf("only %d of %d bytes were written within %s: the process is not reading its input", n, len(chars), timeout.Round(time.Millisecond))
	}
	return err
}

// settle is how long an empty poll waits for more output once some has
// arrived, so a burst comes back in one piece.
const settle = 100 * time.Millisecond

// exitGrace bounds the wait for the last output after the leader exits
// (its group is killed then, so the output ends at once unless a process
// left the group holding it).
const exitGrace = 200 * time.Millisecond

// collect gathers output until deadline, or until the leader has exited
// and its output ended. With poll, it also returns once output has arrived
// and then stopped for settle. It reports exited only when the leader has
// exited and all its output is in out, so reporting the exit loses
// nothing. total counts bytes dropped from the buffer too.
func (s *session) collect(ctx context.Context, deadline time.Time, poll bool) (out []byte, total int64, exited bool) {
	take := func() {
		b, n := s.out.drain()
		out = append(out, b...)
		total += n
	}
	var quietAt, graceEnd time.Time
	for {
		pending, eof, changed := s.out.state()
		if pending {
			take()
			if poll {
				quietAt = time.Now().Add(settle)
			}
		}
		now := time.Now()
		if s.hasExited() {
			if eof {
				take()
				return out, total, true
			}
			if graceEnd.IsZero() {
				graceEnd = now.Add(exitGrace)
			} else if !now.Before(graceEnd) {
				take()
				return out, total, true
			}
		} else {
			if !now.Before(deadline) {
				return out, total, false
			}
			if poll && !quietAt.IsZero() && !now.Before(quietAt) {
				return out, total, false
			}
		}
		wake := deadline
		if !graceEnd.IsZero() {
			wake = graceEnd
		} else if poll && !quietAt.IsZero() && quietAt.Before(wake) {
			wake = quietAt
		}
		timer := time.NewTimer(time.Until(wake))
		select {
		case <-changed:
		case <-s.exited:
		case <-timer.C:
		case <-ctx.Done():
			timer.Stop()
			take()
			return out, total, false
		}
		timer.Stop()
	}
}
