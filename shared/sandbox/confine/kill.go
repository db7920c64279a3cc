//go:build linux

package confine

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// KillGroup kills cmd's process and every descendant with SIGKILL, including
// descendants that left its process group and session (setsid, daemonising
// double forks). It is safe to call more than once, on a command that has
// exited, and concurrently with Wait; it does not wait for the processes to
// be reaped.
//
// How: the trampoline made cmd's process a child subreaper that may not
// undo it, so while that process lives every descendant whose parent dies
// is re-parented to it and stays in its tree. KillGroup freezes the tree
// with SIGSTOP, rescanning /proc until every member is stopped and no new
// one appears, then sends SIGKILL to each (through pidfds, so a recycled pid
// is never hit) and to the process group.
//
// It reads /proc/*/stat a few times: a few milliseconds, at most about two
// seconds against a fork bomb, after which it kills what it has found.
//
// Limits: once cmd's own process has exited, descendants it left behind
// have been re-parented to sandboxd's nearest subreaper or to init; those
// still in its process group or session are killed, one that also called
// setsid is out of reach. Killed descendants are reaped by init: where
// sandboxd is PID 1 of its container nothing reaps them, and the zombies
// keep counting against RLIMIT_NPROC; run sandboxd under an init (ECS
// initProcessEnabled, tini).
func KillGroup(cmd *exec.Cmd) error {
	if cmd == nil || cmd.Process == nil {
		return nil
	}
	root := cmd.Process.Pid
	if root <= 1 || root == os.Getpid() {
		return fmt.Errorf("confine: refusing to kill the tree of pid %d", root)
	}
	// Once Wait has reaped the root its pid may be recycled. os.Process
	// knows (through its own pidfd) whether that happened; asked after
	// opening ours, a "not yet" means ours is the root.
	rootFD, err := unix.PidfdOpen(root, 0)
	alive := err == nil || errors.Is(err, unix.ENOSYS)
	if alive && cmd.Process.Signal(syscall.Signal(0)) != nil {
		alive = false
	}
	if err == nil {
		unix.Close(rootFD)
	}
	if !alive {
		if _, ok := readStat(root); ok {
			// Another process has the pid now, so the old group and
			// session are empty: nothing of ours is left to kill.
			return nil
		}
	}
	// The group first: one call that no fork in progress escapes.
	_ = unix.Kill(-root, unix.SIGSTOP)
	members := freeze(root, 2*time.Second)
	var errs []error
	for _, m := range members {
		if err := m.signal(unix.SIGKILL); err != nil && !errors.Is(err, unix.ESRCH) {
			errs = append(errs, fmt.Errorf("kill %d: %w", m.pid, err))
		}
		m.close()
	}
	if err := unix.Kill(-root, unix.SIGKILL); err != nil && !errors.Is(err, unix.ESRCH) {
		errs = append(errs, fmt.Errorf("kill process group %d: %w", root, err))
	}
	if len(errs) > 0 {
		return fmt.Errorf("confine: kill tree of %d: %w", root, errors.Join(errs...))
	}
	return nil
}

// member is one process of a tree being killed.
type member struct {
	pid   int
	start uint64 // start time, to tell a recycled pid
	fd    int    // pidfd, or -1 where the kernel has none
}

func (m member) signal(sig unix.Signal) error {
	if m.fd >= 0 {
		return unix.PidfdSendSignal(m.fd, sig, nil, 0)
	}
	return unix.Kill(m.pid, sig)
}

func (m member) close() {
	if m.fd >= 0 {
		unix.Close(m.fd)
	}
}

// freeze stops root's tree and returns its members. It rescans until a scan
// finds no new member and every member is stopped or dead, since a stopped
// process can no longer fork; after the deadline it returns what it has.
func freeze(root int, timeout time.Duration) []member {
	deadline := time.Now().Add(timeout)
	known := map[int]member{}
	var order []member
	for {
		procs := scanProcs()
		settled := true
		for _, p := range treeOf(root, procs) {
			if _, ok := known[p.pid]; ok {
				if p.state != 'T' && p.state != 't' && p.state != 'Z' && p.state != 'X' {
					settled = false
				}
				continue
			}
			m, ok := take(p)
			if !ok {
				continue
			}
			known[p.pid] = m
			order = append(order, m)
			_ = m.signal(unix.SIGSTOP)
			settled = false
		}
		if settled || time.Now().After(deadline) {
			return order
		}
		time.Sleep(time.Millisecond)
	}
}

// take opens a pidfd on p and checks it is still the process scanned.
func take(p proc) (member, bool) {
	fd, err := unix.PidfdOpen(p.pid, 0)
	if err != nil {
		if errors.Is(err, unix.ENOSYS) {
			return member{pid: p.pid, start: p.start, fd: -1}, true
		}
		return member{}, false // gone
	}
	again, ok := readStat(p.pid)
	if !ok || again.start != p.start {
		unix.Close(fd)
		return member{}, false
	}
	return member{pid: p.pid, start: p.start, fd: fd}, true
}

// proc is what KillGroup needs from /proc/<pid>/stat.
type proc struct {
	pid, ppid, pgrp, sid int
	state                byte
	start                uint64
}

// treeOf returns root and its descendants by parent links, plus every
// process in root's process group or session.
func treeOf(root int, procs []proc) []proc {
	children := map[int][]int{}
	byPID := map[int]proc{}
	for _, p := range procs {
		children[p.ppid] = append(children[p.ppid], p.pid)
		byPID[p.pid] = p
	}
	self := os.Getpid()
	seen := map[int]bool{}
	var out []proc
	var visit func(pid int)
	visit = func(pid int) {
		if seen[pid] || pid == self || pid <= 1 {
			return
		}
		seen[pid] = true
		if p, ok := byPID[pid]; ok {
			out = append(out, p)
		}
		for _, c := range children[pid] {
			visit(c)
		}
	}
	visit(root)
	for _, p := range procs {
		if p.pgrp == root || p.sid == root {
			visit(p.pid)
		}
	}
	return out
}

func scanProcs() []proc {
	f, err := os.Open("/proc")
	if err != nil {
		return nil
	}
	names, _ := f.Readdirnames(-1)
	f.Close()
	procs := make([]proc, 0, len(names))
	for _, n := range names {
		pid, err := strconv.Atoi(n)
		if err != nil {
			continue
		}
		if p, ok := readStat(pid); ok {
			procs = append(procs, p)
		}
	}
	return procs
}

// readStat parses /proc/<pid>/stat: "pid (comm) state ppid pgrp session …
// starttime(22nd field) …". comm may hold spaces and parentheses.
func readStat(pid int) (proc, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return proc{}, false
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 || i+2 >= len(b) {
		return proc{}, false
	}
	f := bytes.Fields(b[i+2:]) // f[0] is field 3 (state)
	if len(f) < 20 {
		return proc{}, false
	}
	num := func(j int) int { v, _ := strconv.Atoi(string(f[j])); return v }
	start, _ := strconv.ParseUint(string(f[19]), 10, 64)
	return proc{pid: pid, ppid: num(1), pgrp: num(2), sid: num(3), state: f[0][0], start: start}, true
}
