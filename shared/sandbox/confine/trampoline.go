//go:build linux

package confine

// The trampoline itself is C (trampoline.c), run as an ELF constructor
// before the Go runtime starts; this file writes the policy it reads.

/*
#cgo CFLAGS: -O2 -Wall -Wextra -Wno-unused-parameter
*/
import "C"

import (
	"encoding/hex"
	"fmt"
	"io"
	"log/slog"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

// policyMagic is the first line of every encoded policy; trampoline.c
// refuses any other.
const policyMagic = "agentsfleet-confine-policy 1"

// wirePolicy is what Command hands the trampoline. key caches by every
// field: a new one must join the id it builds (TestKeyCoversEveryField).
type wirePolicy struct {
	ReadOnly []string
	Writable []string
	Limits   Limits
	// Landlock enforces the Landlock rules; false when the kernel lacks
	// Landlock, or in this package's tests (Policy.noLandlock) to tell its
	// protection from another's.
	Landlock bool
	// Seccomp loads the seccomp filter; false only in this package's
	// benchmarks (Policy.noSeccomp), to measure its cost.
	Seccomp bool
	// UID and GID, when not zero, are the identity the root trampoline
	// drops to.
	UID, GID int
	// NoCaps makes the root trampoline keep uid 0 and drop every
	// capability instead (Policy.KeepRoot); UID and GID are then zero.
	NoCaps bool
	// UncheckedReads is Policy.UncheckedReads.
	UncheckedReads bool
}

// key encodes w without what changes with sandboxd's threads (the guard and
// the filter built for it); withGuard completes it. Equal policies have
// equal keys, so it also names the pool of warm trampolines.
//
// The format is a line a setting, decimal numbers, paths and the filter in
// hex:
//
//	agentsfleet-confine-policy 1
//	ids UID GID                  (only when the trampoline drops root)
//	nocaps                       (only when it keeps uid 0 without capabilities)
//	rlimit RESOURCE SOFT HARD    (one a limit; RLIMIT_AS comes separately)
//	as BYTES
//	landlock HANDLED SCOPED      (only with Landlock; then its rules)
//	rule ACCESS HEXPATH
//	seccomp                      (the filter is mandatory)
//	guard PID                    (added by withGuard)
//	bpf HEX                      (added by withGuard)
func (w *wirePolicy) key() string {
	// Building it takes some 15 µs (the rules, in hex); a process uses a
	// handful of policies, so the last few are kept by what they are made
	// of.
	var id strings.Builder
	for _, n := range []uint64{uint64(w.UID), uint64(w.GID), w.Limits.Processes, w.Limits.OpenFiles,
		w.Limits.FileSize, w.Limits.AddressSpace, w.Limits.CPUSeconds} {
		id.WriteString(strconv.FormatUint(n, 10))
		id.WriteByte(' ')
	}
	id.WriteString(strconv.FormatBool(w.Landlock) + strconv.FormatBool(w.Seccomp) + strconv.FormatBool(w.UncheckedReads) +
		strconv.FormatBool(w.NoCaps))
	for _, list := range [][]string{w.ReadOnly, w.Writable} {
		id.WriteString(" " + strconv.Itoa(len(list)))
		for _, path := range list {
			id.WriteString(" " + strconv.Itoa(len(path)) + ":" + path)
		}
	}
	keys.Lock()
	defer keys.Unlock()
	if k, ok := keys.m[id.String()]; ok {
		return k
	}
	k := w.build()
	if len(keys.m) >= 16 {
		clear(keys.m)
	}
	keys.m[id.String()] = k
	return k
}

var keys = struct {
	sync.Mutex
	m map[string]string
}{m: map[string]string{}}

// build writes the key.
func (w *wirePolicy) build() string {
	var b strings.Builder
	line := func(format string, args ...any) { fmt.Fprintf(&b, format+"\n", args...) }
	line("%s", policyMagic)
	if w.UID != 0 {
		line("ids %d %d", w.UID, w.GID)
	}
	if w.NoCaps {
		line("nocaps")
	}
	l := w.Limits.withDefaults()
	for _, r := range []struct {
		resource   int
		soft, hard uint64
	}{
		{unix.RLIMIT_CORE, 0, 0},
		{unix.RLIMIT_NPROC, l.Processes, l.Processes},
		{unix.RLIMIT_NOFILE, l.OpenFiles, l.OpenFiles},
		{unix.RLIMIT_FSIZE, l.FileSize, l.FileSize},
		{unix.RLIMIT_CPU, l.CPUSeconds, l.CPUSeconds + 1},
	} {
		line("rlimit %d %d %d", r.resource, r.soft, r.hard)
	}
	line("as %d", l.AddressSpace)
	if w.Landlock {
		if abi := LandlockABI(); abi > 0 {
			handled, scoped := landlockHandled(w, abi)
			line("landlock %d %d", handled, scoped)
			for _, r := range landlockRules(w, abi) {
				line("rule %d %s", r.access, hex.EncodeToString([]byte(r.path)))
			}
		}
	}
	if w.Seccomp {
		line("seccomp")
	}
	return b.String()
}

// withGuard completes a key with sandboxd's identity as of now and the
// seccomp filter that keeps confined processes from signalling it.
func withGuard(key string) (string, error) {
	g := currentGuard()
	guarded.Lock()
	defer guarded.Unlock()
	if key == guarded.key && slices.Equal(g.TIDs, guarded.guard.TIDs) && g.PID == guarded.guard.PID &&
		g.PGID == guarded.guard.PGID && g.PPID == guarded.guard.PPID {
		return guarded.enc, nil
	}
	enc := key + "guard " + strconv.Itoa(g.PID) + "\n"
	if strings.Contains(key, "\nseccomp\n") {
		prog, err := compiledFilter(g)
		if err != nil {
			return "", err
		}
		enc += "bpf " + prog + "\n"
	}
	guarded.key, guarded.guard, guarded.enc = key, g, enc
	return enc, nil
}

// guarded is the last policy withGuard completed.
var guarded struct {
	sync.Mutex
	key   string
	guard guard
	enc   string
}

// ReserveThreads has the Go runtime hold at least n threads from now on,
// idle until it needs them; sandboxd calls it when it starts. The seccomp
// filter of a command names sandboxd's threads as they were when the
// command started (see guard); a thread the runtime starts later, while the
// command runs, is not in it, and a command of sandboxd's uid could signal
// sandboxd through it. The runtime hands work to an idle thread before it
// starts one, so a reserve makes such threads rare (it does not rule them
// out: see doc.go).
//
// n goroutines each lock themselves to a thread and wait until all are
// locked: that takes n threads at once, whatever the scheduler's timing.
// They then unlock and return, which leaves the threads idle, not gone.
func ReserveThreads(n int) {
	var locked, release sync.WaitGroup
	release.Add(1)
	for range n {
		locked.Add(1)
		go func() {
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			locked.Done()
			release.Wait()
		}()
	}
	locked.Wait()
	release.Done()
}

// guard identifies sandboxd, which confined processes may not signal.
type guard struct {
	PID  int
	PGID int
	TIDs []int
	// PPID is sandboxd's parent: tini in the image, which passes the
	// signals it gets on to sandboxd.
	PPID int
}

// currentGuard returns sandboxd's threads as they are now: the Go runtime
// starts threads as it needs them. Listing /proc/self/task takes some 70 µs
// with the reserve of idle threads, so the list is kept while the kernel's
// count of the threads (the directory's link count, 2 + threads) is
// unchanged: the runtime only ever adds threads, except when a goroutine
// locked to one exits, which sandboxd never does.
func currentGuard() guard {
	g := guard{PID: os.Getpid(), PGID: syscall.Getpgrp(), PPID: os.Getppid()}
	tasks.Lock()
	defer tasks.Unlock()
	if tasks.fd < 0 {
		fd, err := unix.Open("/proc/self/task", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != nil {
			return g
		}
		tasks.fd = fd
	}
	// Counted before the listing: a thread started in between is listed
	// and the next call lists again.
	var st unix.Stat_t
	if err := unix.Fstat(tasks.fd, &st); err != nil {
		return g
	}
	if tasks.listed && uint64(st.Nlink) == tasks.links {
		g.TIDs = tasks.tids
		return g
	}
	if _, err := unix.Seek(tasks.fd, 0, io.SeekStart); err != nil {
		return g
	}
	var names []string
	for len(names) < maxGuardTIDs {
		n, err := unix.Getdents(tasks.fd, tasks.buf[:])
		if err != nil || n <= 0 {
			break
		}
		_, _, names = unix.ParseDirent(tasks.buf[:n], maxGuardTIDs-len(names), names)
	}
	for _, n := range names {
		if tid, err := strconv.Atoi(n); err == nil && tid != g.PID {
			g.TIDs = append(g.TIDs, tid)
		}
	}
	tasks.links, tasks.tids, tasks.listed = uint64(st.Nlink), g.TIDs, true
	if threads := int(st.Nlink) - 2; threads > maxGuardTIDs && !isRoot() {
		tasks.warnOnce.Do(func() {
			slog.Warn("confine: sandboxd has more threads than its commands' seccomp filter names; commands of its uid could signal the others (run sandboxd as root to keep them apart)",
				"threads", threads, "named", maxGuardTIDs)
		})
	}
	return g
}

var tasks = struct {
	sync.Mutex
	fd     int
	buf    [4096]byte
	listed bool
	links  uint64 // the link count when tids was listed
	tids   []int  // shared: read only
	// warnOnce logs that there are more threads than maxGuardTIDs.
	warnOnce sync.Once
}{fd: -1}

// maxGuardTIDs bounds the threads the filter names; sandboxd keeps about
// 100 (ReserveThreads).
const maxGuardTIDs = 128
