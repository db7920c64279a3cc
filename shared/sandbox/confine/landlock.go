//go:build linux

package confine

import (
	"sync"

	ll "github.com/landlock-lsm/go-landlock/landlock/syscall"

	"github.com/agentsfleet/agentsfleet/shared/sandbox"
)

var landlockABI = sync.OnceValue(func() int {
	v, err := ll.LandlockGetABIVersion()
	if err != nil {
		return 0
	}
	return v
})

// LandlockABI returns the Landlock ABI version of the running kernel, or 0
// when Landlock is missing or disabled. Confinement uses the features of
// this version up to V11, the newest go-landlock knows.
func LandlockABI() int { return landlockABI() }

// Paths every confined process may read and execute besides the policy's
// read-only roots: the system directories, /proc (many tools read
// /proc/self), and what runtimes read to size themselves.
var readOnlyExtra = []string{
	"/proc",
	"/sys/devices/system/cpu",
	"/sys/devices/system/node",
	"/sys/fs/cgroup",
	"/run/systemd/resolve", // /etc/resolv.conf may point here
}

// Paths every confined process may write besides the policy's writable
// roots.
var writableExtra = []string{"/tmp", "/dev/shm"}

// Device files every confined process may read and write.
var (
	devices   = []string{"/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom"}
	terminals = []string{"/dev/tty", "/dev/ptmx", "/dev/pts"}
)

// landlockHandled returns the access rights the ruleset of w handles at abi
// (every file-system right it knows, up to ABI 11, the newest go-landlock
// knows, less uncheckedRights for a policy with UncheckedReads) and the IPC
// it scopes: abstract UNIX sockets outside the domain are refused; signals
// are not scoped, so that one command can stop a server another one
// started (the seccomp filter guards sandboxd), except for a command that
// keeps uid 0 (wirePolicy.NoCaps): it shares its uid with every root
// process of the machine, which it could signal otherwise, so from ABI 6 it
// signals only its own descendants.
func landlockHandled(w *wirePolicy, abi int) (handled, scoped uint64) {
	bits := 0
	switch {
	case abi >= 9:
		bits = 17
	case abi >= 5:
		bits = 16
	case abi >= 3:
		bits = 15
	case abi == 2:
		bits = 14
	case abi == 1:
		bits = 13
	}
	handled = 1<<bits - 1
	if w.UncheckedReads {
		handled &^= uncheckedRights
	}
	if abi >= 6 {
		scoped = ll.ScopeAbstractUnixSocket
		if w.NoCaps {
			scoped |= ll.ScopeSignal
		}
	}
	return handled, scoped
}

// The rights of go-landlock's RODirs and RWDirs; the trampoline keeps only
// the file rights on a path that is not a directory, as ROFiles and RWFiles
// do.
const (
	accessRead  = ll.AccessFSExecute | ll.AccessFSReadFile | ll.AccessFSReadDir
	accessWrite = ll.AccessFSWriteFile | ll.AccessFSRemoveDir | ll.AccessFSRemoveFile | ll.AccessFSMakeChar |
		ll.AccessFSMakeDir | ll.AccessFSMakeReg | ll.AccessFSMakeSock | ll.AccessFSMakeFifo |
		ll.AccessFSMakeBlock | ll.AccessFSMakeSym | ll.AccessFSTruncate
	accessFile = ll.AccessFSExecute | ll.AccessFSWriteFile | ll.AccessFSReadFile | ll.AccessFSTruncate
)

// uncheckedRights are what a policy with UncheckedReads leaves to file
// permissions. Truncation goes with reading: Landlock decides whether an
// opened file may be truncated when it opens it, and a right that no rule
// grants (truncation, in the read-only roots) sends its check up every
// directory to the root, for every file.
const uncheckedRights = accessRead | ll.AccessFSTruncate

// llRule grants access beneath path.
type llRule struct {
	access uint64
	path   string
}

// landlockRules turns p into rules for abi. The trampoline leaves out a path
// that does not exist or that it cannot open: that only takes access away.
func landlockRules(p *wirePolicy, abi int) []llRule {
	handled, _ := landlockHandled(p, abi)
	var rules []llRule
	add := func(paths []string, access uint64) {
		for _, path := range paths {
			if access&handled != 0 {
				rules = append(rules, llRule{access & handled, path})
			}
		}
	}
	// Refer lets mv and git move files between directories of the writable
	// roots; resolving UNIX sockets (ABI 9) lets commands reach servers
	// that other commands started there.
	writable := uint64(accessRead | accessWrite | ll.AccessFSResolveUnix)
	if abi >= 2 {
		writable |= ll.AccessFSRefer
	}
	add(sandbox.SystemDirs, accessRead)
	add(readOnlyExtra, accessRead)
	add(p.ReadOnly, accessRead)
	add(writableExtra, writable)
	add(p.Writable, writable)
	add(devices, accessFile&(accessRead|accessWrite))
	// Terminals also take ioctls: Landlock ABI 5 and later refuse device
	// ioctls unless granted.
	add(terminals, accessFile&(accessRead|accessWrite)|ll.AccessFSIoctlDev)
	return rules
}
