package shell_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentsfleet/agentsfleet/shared/sandbox"
	"github.com/agentsfleet/agentsfleet/shared/sandbox/confine"
	"github.com/agentsfleet/agentsfleet/shared/sandbox/sandboxtest"
)

// The shared helpers, under the names these tests use.
var (
	mkdir     = sandboxtest.Mkdir
	write     = sandboxtest.Write
	run       = sandboxtest.Run
	wantText  = sandboxtest.WantText
	wantError = sandboxtest.WantError
)

// fixture is a workdir and a data root under one base directory, with a
// secret file outside both. When the tests run as root, confined processes
// run as nobody, so the base is world-readable and the workdir
// world-writable.
type fixture struct {
	roots            *sandbox.Roots
	policy           *confine.Policy
	base, work, data string
	secret           string
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	base := sandboxtest.Base(t)
	f := &fixture{base: base, work: filepath.Join(base, "work"), data: filepath.Join(base, "data")}
	mkdir(t, f.work)
	mkdir(t, f.data)
	if err := confine.PrepareRoots([]string{f.work}, 0, 0); err != nil {
		t.Fatal(err)
	}
	f.secret = filepath.Join(base, "secret.txt")
	write(t, f.secret, "top secret\n")
	roots, err := sandbox.New(sandbox.Dirs{Workdir: f.work, Data: f.data})
	if err != nil {
		t.Fatal(err)
	}
	f.roots = roots
	f.policy = &confine.Policy{ReadOnly: roots.ReadOnlyPaths(), Writable: roots.WritablePaths()}
	return f
}

// alive reports whether pid is a live process (a zombie, killed but not yet
// reaped by its new parent, counts as dead).
func alive(pid int) bool {
	stat, err := os.ReadFile("/proc/" + itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	i := strings.LastIndexByte(string(stat), ')')
	return i < 0 || i+2 >= len(stat) || (stat[i+2] != 'Z' && stat[i+2] != 'X')
}

// eventuallyDead waits a little for pid to die, as SIGKILL is asynchronous.
func eventuallyDead(t *testing.T, pid int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for alive(pid) {
		if time.Now().After(deadline) {
			t.Fatalf("process %d is still alive", pid)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func itoa(n int) string {
	b, _ := json.Marshal(n)
	return string(b)
}
