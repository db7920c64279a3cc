//go:build linux

package confine

import (
	"errors"
	"os/exec"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

// Group is a started confined command and the process group it leads.
//
// When the leader exits on its own, whatever it left running in its process
// group is killed before the leader is reaped: while the leader is an
// unreaped zombie its pid, which is also the group's id, cannot be given to
// another process, so the kill never reaches an unrelated group. That is
// one kill(2), where KillGroup's walk of /proc would add milliseconds to
// every command; a process that moved itself to another process group
// (setpgid) and outlives the leader is not reached. Kill, for a timeout or
// an explicit stop, uses KillGroup, which reaches every descendant of a
// leader still running. A Group is safe for concurrent use.
type Group struct {
	cmd  *exec.Cmd
	mu   sync.Mutex
	done chan struct{} // closed once the leader is reaped
	err  error         // cmd.Wait's error, valid after done
	gone bool          // the leader is reaped: its pid may be reused
}

// StartGroup starts cmd with Start. cmd must come from Policy.Command (so
// it leads its own session and process group) and must not have stdio that
// os/exec copies through goroutines (use *os.File or nil): nothing then
// waits on the group but the Group itself.
func StartGroup(cmd *exec.Cmd) (*Group, error) {
	if err := Start(cmd); err != nil {
		return nil, err
	}
	g := &Group{cmd: cmd, done: make(chan struct{})}
	go g.reap()
	return g, nil
}

func (g *Group) reap() {
	waitExited(g.cmd.Process.Pid)
	g.mu.Lock()
	defer g.mu.Unlock()
	// The leader is gone; end whatever it left behind in its group.
	_ = unix.Kill(-g.cmd.Process.Pid, unix.SIGKILL)
	g.err = g.cmd.Wait()
	g.gone = true
	close(g.done)
}

// Done is closed once the leader has exited, its group has been killed and
// the leader has been reaped.
func (g *Group) Done() <-chan struct{} { return g.done }

// Err is cmd.Wait's error (an *exec.ExitError for a non-zero exit). It is
// valid once Done is closed.
func (g *Group) Err() error {
	<-g.done
	return g.err
}

// Kill kills the leader and every descendant with KillGroup, unless the
// leader is already reaped (its group was killed then). It does not wait:
// receive from Done for that.
func (g *Group) Kill() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.gone {
		_ = KillGroup(g.cmd)
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
