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
	"os"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// policyMagic is the first line of every encoded policy; trampoline.c
// refuses any other.
const policyMagic = "agentsfleet-confine-policy 1"

// wirePolicy is what Command hands the trampoline.
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
	// Walk is Policy.Walk, clean.
	Walk string
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
//	rlimit RESOURCE SOFT HARD    (one a limit; RLIMIT_AS comes separately)
//	as BYTES
//	landlock HANDLED SCOPED      (only with Landlock; then its rules)
//	rule ACCESS HEXPATH
//	tree ACCESS HEXPATH          (rules on the directories below HEXPATH too)
//	seccomp                      (the filter is mandatory)
//	guard PID                    (added by withGuard)
//	bpf HEX                      (added by withGuard)
func (w *wirePolicy) key() string {
	var b strings.Builder
	line := func(format string, args ...any) { fmt.Fprintf(&b, format+"\n", args...) }
	line("%s", policyMagic)
	if w.UID != 0 {
		line("ids %d %d", w.UID, w.GID)
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
			handled, scoped := landlockHandled(abi)
			line("landlock %d %d", handled, scoped)
			rules := landlockRules(w, abi)
			for _, r := range rules {
				line("rule %d %s", r.access, hex.EncodeToString([]byte(r.path)))
			}
			if access := walkAccess(w.Walk, rules, handled); access != 0 {
				line("tree %d %s", access, hex.EncodeToString([]byte(w.Walk)))
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
	enc := key + "guard " + strconv.Itoa(g.PID) + "\n"
	if strings.Contains(key, "\nseccomp\n") {
		prog, err := compiledFilter(g)
		if err != nil {
			return "", err
		}
		enc += "bpf " + prog + "\n"
	}
	return enc, nil
}

// guard identifies sandboxd, which confined processes may not signal.
type guard struct {
	PID  int
	PGID int
	TIDs []int
}

func currentGuard() guard {
	g := guard{PID: os.Getpid(), PGID: syscall.Getpgrp()}
	if f, err := os.Open("/proc/self/task"); err == nil {
		names, _ := f.Readdirnames(maxGuardTIDs)
		f.Close()
		for _, n := range names {
			if tid, err := strconv.Atoi(n); err == nil && tid != g.PID {
				g.TIDs = append(g.TIDs, tid)
			}
		}
	}
	return g
}

const maxGuardTIDs = 64
