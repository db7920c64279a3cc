package sandboxtest

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"time"
)

// Processes lists the running processes (not zombies) that descend from
// root and whose command line contains marker: what a test started, found
// whatever their parent became.
func Processes(root int, marker string) []int {
	var pids []int
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		cmd, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if bytes.Contains(cmd, []byte(marker)) && descends(pid, root) && Running(pid) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// Running reports whether process pid exists and is not a zombie.
func Running(pid int) bool {
	st, ok := stat(pid)
	return ok && len(st) > 0 && st[0] != "Z"
}

// Left is those of pids that still run.
func Left(pids []int) []int {
	var out []int
	for _, pid := range pids {
		if Running(pid) {
			out = append(out, pid)
		}
	}
	return out
}

// LeftAfter is those of pids that still run once they have all stopped or
// within lasts: a process killed with SIGKILL is gone only once the kernel
// has torn it down, which for a process of many threads (Chromium's) may
// take a moment on a busy machine.
func LeftAfter(pids []int, within time.Duration) []int {
	deadline := time.Now().Add(within)
	for {
		left := Left(pids)
		if len(left) == 0 || time.Now().After(deadline) {
			return left
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// descends reports whether root is pid or one of its ancestors.
func descends(pid, root int) bool {
	for range 64 {
		if pid == root {
			return true
		}
		st, ok := stat(pid)
		if !ok || len(st) < 2 || pid <= 1 {
			return false
		}
		pid, _ = strconv.Atoi(st[1])
	}
	return false
}

// stat is /proc/pid/stat's fields after the command's name: state, ppid…
func stat(pid int) ([]string, bool) {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return nil, false
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return nil, false
	}
	var out []string
	for _, f := range bytes.Fields(b[i+1:]) {
		out = append(out, string(f))
	}
	return out, true
}
