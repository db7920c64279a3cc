//go:build linux

package confine

import (
	"fmt"
	"os"
	"slices"
	"strings"

	"golang.org/x/sys/unix"
)

// shedEnv asks the constructor in trampoline.c to drop every capability of
// the process before the Go runtime starts; the constructor then changes
// its value to "done".
const shedEnv = "AGENTSFLEET_CONFINE_NOCAPS"

// capabilitySets are the lines of /proc/PID/status that show a process's
// capabilities.
var capabilitySets = []string{"CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"}

// ShedCapabilities leaves a root process (sandboxd in local mode, --local
// --user 0) with uid 0 and no capability at all, as its commands are under
// a KeepRoot policy: the securebits that keep an exec from giving root any
// back, set and locked, the bounding and ambient sets empty, and empty
// effective, permitted and inheritable sets. Its file tools then meet the
// permissions root's files give their owner and nothing more, and it
// cannot change its ids again.
//
// Capabilities belong to each thread, and by the time main runs the Go
// runtime has started several, which Go cannot change all at once when it
// is built with cgo (syscall.AllThreadsSyscall refuses). So while the
// process still holds any capability, ShedCapabilities executes it again:
// /proc/self/exe with the same arguments and its environment plus env
// (what the caller took out of it and still needs, such as the token) and a
// request to the constructor in trampoline.c, which drops them while the
// process is still single-threaded. The new image runs main again from the
// start, calls ShedCapabilities again, which then finds none and returns
// nil. It does not return when that exec succeeds; a process whose
// capabilities cannot be dropped (it lacks CAP_SETPCAP, say) exits with
// ExitConfineFailure from the constructor, saying why.
//
// Call it before anything that must not be done twice (listening, starting
// commands). It returns nil at once when the process is not root.
func ShedCapabilities(env []string) error {
	if os.Getuid() != 0 && os.Geteuid() != 0 {
		return nil
	}
	held, err := Capabilities(os.Getpid())
	if err != nil {
		return err
	}
	done := os.Getenv(shedEnv) == "done"
	_ = os.Unsetenv(shedEnv)
	if held == "" {
		return nil
	}
	if done {
		return fmt.Errorf("confine: the process still holds capabilities after dropping them: %s", held)
	}
	environ := slices.DeleteFunc(os.Environ(), func(kv string) bool { return strings.HasPrefix(kv, shedEnv+"=") })
	environ = append(append(environ, env...), shedEnv+"=1")
	err = unix.Exec(selfExe, os.Args, environ)
	return fmt.Errorf("confine: execute sandboxd again to drop its capabilities: %w", err)
}

// Capabilities returns the capability sets of process pid that are not
// empty, as its /proc status shows them ("CapEff: 000001ffffffffff …"),
// or "" when it holds none.
func Capabilities(pid int) (string, error) {
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return "", fmt.Errorf("confine: capabilities: %w", err)
	}
	var held []string
	seen := 0
	for _, line := range strings.Split(string(status), "\n") {
		name, value, ok := strings.Cut(line, ":")
		if !ok || !slices.Contains(capabilitySets, name) {
			continue
		}
		seen++
		if v := strings.TrimSpace(value); strings.Trim(v, "0") != "" {
			held = append(held, name+": "+v)
		}
	}
	if seen != len(capabilitySets) {
		return "", fmt.Errorf("confine: capabilities: /proc/%d/status shows %d of the %d capability sets", pid, seen, len(capabilitySets))
	}
	return strings.Join(held, " "), nil
}
