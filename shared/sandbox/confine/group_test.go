//go:build linux

package confine

import (
	"errors"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A Group's leader that exits leaves nothing running in its group, and
// its exit status is reported.
func TestGroupKillsLeftoversWhenTheLeaderExits(t *testing.T) {
	t.Parallel()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	p := &Policy{}
	cmd, err := p.Command("/bin/sh", "-c", "sleep 60 </dev/null >/dev/null 2>&1 & echo $!; exit 3")
	if err != nil {
		t.Fatal(err)
	}
	cmd.Dir, cmd.Stdout = "/", w
	g, err := StartGroup(cmd)
	w.Close()
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-g.Done():
	case <-time.After(30 * time.Second):
		g.Kill()
		t.Fatal("the leader did not exit within 30s")
	}
	var exitErr interface{ ExitCode() int }
	if err := g.Err(); !errors.As(err, &exitErr) || exitErr.ExitCode() != 3 {
		t.Fatalf("Err() = %v, want exit status 3", err)
	}
	out := make([]byte, 64)
	n, _ := r.Read(out)
	pid, err := strconv.Atoi(strings.TrimSpace(string(out[:n])))
	if err != nil {
		t.Fatalf("background pid %q: %v", out[:n], err)
	}
	// Killed before the leader was reaped: at most a zombie awaiting init.
	for deadline := time.Now().Add(5 * time.Second); ; {
		stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		if err != nil || strings.Contains(string(stat), ") Z ") {
			break
		}
		if time.Now().After(deadline) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
			t.Fatalf("the background sleep %d outlived its leader", pid)
		}
		time.Sleep(10 * time.Millisecond)
	}
	g.Kill() // after the reap: a no-op, never a signal to a reused pid
}
