// Package confine starts the processes sandboxd runs for a fleet (bash, grep,
// exec_command) confined: own session and process group, an unprivileged uid
// when sandboxd runs as root, a scrubbed environment, and the whole group
// killed on timeout.
//
// Security boundary: what a confined process may do is decided here and
// nowhere else. Callers build a Policy from the fleet's roots, call Command,
// set stdio and start it; they never add environment that came from
// sandboxd's own environment.
package confine

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
)

// Limits are the rlimits of a confined process. Zero means the default.
type Limits struct {
	Processes    uint64 // RLIMIT_NPROC, per uid
	OpenFiles    uint64 // RLIMIT_NOFILE
	FileSize     uint64 // RLIMIT_FSIZE, bytes
	AddressSpace uint64 // RLIMIT_AS, bytes
	CPUSeconds   uint64 // RLIMIT_CPU
}

// DefaultLimits are the limits used where a Policy leaves one at zero.
var DefaultLimits = Limits{
	Processes:    256,
	OpenFiles:    1024,
	FileSize:     1 << 30, // 1 GiB
	AddressSpace: 4 << 30, // 4 GiB
	CPUSeconds:   600,
}

// Policy says what a confined process may reach.
type Policy struct {
	ReadOnly []string // readable roots (data, system directories)
	Writable []string // writable roots (workdir, /agent, workspace); /tmp is always writable
	Limits   Limits
	// UID and GID are the identity to drop to when sandboxd runs as root.
	// Zero means 65534 (nobody). Ignored when sandboxd is not root.
	UID, GID int
	// Env is added to the scrubbed base environment (PATH, HOME, LANG…).
	Env []string
}

// Command returns a command that runs name with args under p. The caller
// sets Dir and stdio and starts it; the process leads its own session and
// process group, so KillGroup reaches every descendant that stayed in it.
func (p *Policy) Command(name string, args ...string) (*exec.Cmd, error) {
	if name == "" {
		return nil, errors.New("confine: no program")
	}
	cmd := exec.Command(name, args...)
	cmd.Env = append(BaseEnv(), p.Env...)
	attr := &syscall.SysProcAttr{Setsid: true, Pdeathsig: syscall.SIGKILL}
	if os.Geteuid() == 0 {
		uid, gid := p.UID, p.GID
		if uid == 0 {
			uid = 65534
		}
		if gid == 0 {
			gid = 65534
		}
		attr.Credential = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid), Groups: []uint32{}}
	}
	cmd.SysProcAttr = attr
	return cmd, nil
}

// KillGroup sends SIGKILL to cmd's whole process group.
func KillGroup(cmd *exec.Cmd) error {
	if cmd == nil || cmd.Process == nil {
		return nil
	}
	if err := syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("kill process group %d: %w", cmd.Process.Pid, err)
	}
	return nil
}

// BaseEnv is the environment every confined process starts from. Nothing in
// it comes from sandboxd's own environment, so AWS_*, ECS_* and the token
// cannot leak.
func BaseEnv() []string {
	return []string{
		"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
		"HOME=/tmp",
		"LANG=C.UTF-8",
		"LC_ALL=C.UTF-8",
		"TMPDIR=/tmp",
		"SHELL=/bin/sh",
	}
}

// Scrub removes variables that must never reach a confined process from
// env: AWS_*, ECS_*, SANDBOXD_*, and anything naming a token, secret or key.
func Scrub(env []string) []string {
	out := env[:0:0]
	for _, kv := range env {
		name, _, _ := strings.Cut(kv, "=")
		up := strings.ToUpper(name)
		if strings.HasPrefix(up, "AWS_") || strings.HasPrefix(up, "ECS_") || strings.HasPrefix(up, "SANDBOXD_") ||
			strings.Contains(up, "TOKEN") || strings.Contains(up, "SECRET") || strings.Contains(up, "PASSWORD") ||
			strings.HasSuffix(up, "_KEY") {
			continue
		}
		out = append(out, kv)
	}
	return out
}
