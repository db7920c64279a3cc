package confine

import (
	"errors"
	"fmt"
	"os"
	"sync"

	"github.com/landlock-lsm/go-landlock/landlock"
	ll "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"

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

// Device files every confined process may read and write; the terminals
// also take ioctls (Landlock ABI 5 and later refuse device ioctls unless
// granted).
var (
	devices   = []string{"/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom"}
	terminals = []string{"/dev/tty", "/dev/ptmx", "/dev/pts"}
)

// restrictFiles enforces the Landlock part of p on the calling thread, which
// must have no_new_privs set. Scoped IPC: abstract UNIX sockets outside the
// domain are refused; signals are not scoped, so that one command can stop
// a server another one started (the seccomp filter guards sandboxd).
func restrictFiles(p *wirePolicy) error {
	abi := LandlockABI()
	if p.NoLandlock {
		return nil
	}
	if abi == 0 {
		if p.Landlock {
			return errors.New("landlock: sandboxd saw Landlock but this process cannot use it")
		}
		return nil
	}
	cfg := landlock.Config{
		HandledAccessFS: landlock.V11.HandledAccessFS,
		Scoped:          landlock.ScopedSet(ll.ScopeAbstractUnixSocket),
	}.BestEffort()
	fd, flags, err := cfg.NewRulesetFD(landlockRules(p, abi)...)
	if err != nil {
		return fmt.Errorf("landlock: %w", err)
	}
	if fd < 0 {
		return nil // nothing the kernel can enforce (cannot happen with abi > 0)
	}
	defer unix.Close(fd)
	if err := ll.LandlockRestrictSelf(fd, flags); err != nil {
		return fmt.Errorf("landlock_restrict_self: %w", err)
	}
	return nil
}

// landlockRules turns p into rules. A path that does not exist, or that the
// process cannot open, is left out: that only takes access away.
func landlockRules(p *wirePolicy, abi int) []landlock.Rule {
	var rules []landlock.Rule
	add := func(paths []string, dirs, files func(...string) landlock.FSRule, decorate func(landlock.FSRule) landlock.FSRule) {
		var ds, fs []string
		for _, path := range paths {
			fi, err := os.Stat(path)
			if err != nil {
				continue
			}
			fd, err := unix.Open(path, unix.O_PATH|unix.O_CLOEXEC, 0)
			if err != nil {
				continue
			}
			unix.Close(fd)
			if fi.IsDir() {
				ds = append(ds, path)
			} else {
				fs = append(fs, path)
			}
		}
		if len(ds) > 0 {
			rules = append(rules, decorate(dirs(ds...)))
		}
		if len(fs) > 0 {
			rules = append(rules, decorate(files(fs...)))
		}
	}
	plain := func(r landlock.FSRule) landlock.FSRule { return r }
	writable := func(r landlock.FSRule) landlock.FSRule {
		// Refer lets mv and git move files between directories of the
		// writable roots. Asking for it below ABI 2 would turn best effort
		// into no Landlock at all, so it is only asked for from ABI 2.
		if abi >= 2 {
			r = r.WithRefer()
		}
		return r.WithResolveUnix()
	}
	tty := func(r landlock.FSRule) landlock.FSRule { return r.WithIoctlDev() }

	ro := append(append(append([]string{}, sandbox.SystemDirs...), readOnlyExtra...), p.ReadOnly...)
	add(ro, landlock.RODirs, landlock.ROFiles, plain)
	add(append(append([]string{}, writableExtra...), p.Writable...), landlock.RWDirs, landlock.RWFiles, writable)
	add(devices, landlock.RWFiles, landlock.RWFiles, plain)
	add(terminals, landlock.RWFiles, landlock.RWFiles, tty)
	return rules
}
