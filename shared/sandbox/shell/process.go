package shell

import (
	"errors"
	"fmt"
	"os/exec"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/agentsfleet/agentsfleet/shared/sandbox/confine"
)

// group is a started confined process and the process group it leads.
//
// When the leader exits on its own, whatever it left running in its process
// group is killed before the leader is reaped: while the leader is an
// unreaped zombie its pid, which is also the group's id, cannot be given to
// another process, so the kill never reaches an unrelated group. That is
// one kill(2), where confine.KillGroup's walk of /proc would add
// milliseconds to every command; a process that moved itself to another
// process group (setpgid) and outlives the leader is not reached. kill, for
// a timeout, uses confine.KillGroup, which reaches every descendant of a
// leader still running. kill is safe to call at any time and from any
// goroutine.
type group struct {
	cmd  *exec.Cmd
	mu   sync.Mutex
	done chan struct{} // closed once the leader is reaped
	err  error         // cmd.Wait's error, valid after done
	gone bool          // the leader is reaped: its pid may be reused
}

// startGroup starts cmd, which must come from confine.Policy.Command (so it
// leads its own session and process group) and must not have stdio that
// os/exec copies through goroutines (use *os.File or nil).
func startGroup(cmd *exec.Cmd) (*group, error) {
	if err := confine.Start(cmd); err != nil {
		return nil, err
	}
	g := &group{cmd: cmd, done: make(chan struct{})}
	go g.reap()
	return g, nil
}

func (g *group) reap() {
	waitExited(g.cmd.Process.Pid)
	g.mu.Lock()
	defer g.mu.Unlock()
	// The leader is gone; end whatever it left behind in its group.
	_ = unix.Kill(-g.cmd.Process.Pid, unix.SIGKILL)
	g.err = g.cmd.Wait()
	g.gone = true
	close(g.done)
}

// kill sends SIGKILL to the whole process group.
func (g *group) kill() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.gone {
		_ = confine.KillGroup(g.cmd)
	}
}

// waitExited blocks until the process pid has exited, leaving it unreaped.
func waitExited(pid int) {
	var info unix.Siginfo
	for {
		err := unix.Waitid(unix.P_PID, pid, &info, unix.WEXITED|unix.WNOWAIT, nil)
		if !errors.Is(err, syscall.EINTR) {
			return
		}
	}
}

// exitCode is the status a shell would report for err from cmd.Wait: the
// exit status, or 128 plus the signal that killed the process.
func exitCode(err error) (int, error) {
	if err == nil {
		return 0, nil
	}
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		return 0, fmt.Errorf("wait: %w", err)
	}
	if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal()), nil
	}
	return ee.ExitCode(), nil
}

// errToolTimeout is the cause of a context ended by the tool timeout, as
// opposed to the caller's cancellation.
var errToolTimeout = errors.New("the tool timeout passed")
