package shell

import (
	"errors"
	"fmt"
	"os/exec"
	"syscall"
)

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
