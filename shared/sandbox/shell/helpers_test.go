package shell_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentsfleet/agentsfleet/shared/sandbox"
	"github.com/agentsfleet/agentsfleet/shared/sandbox/confine"
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
	base := t.TempDir()
	// t.TempDir's parent is 0700: open both to the confined uid.
	for _, d := range []string{filepath.Dir(base), base} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
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

func mkdir(t *testing.T, dir string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
}

func write(t *testing.T, name, content string) {
	t.Helper()
	mkdir(t, filepath.Dir(name))
	if err := os.WriteFile(name, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func run(t *testing.T, tool sandbox.Tool, args any) sandbox.Result {
	t.Helper()
	raw, err := json.Marshal(args)
	if err != nil {
		t.Fatal(err)
	}
	res, err := tool.Run(context.Background(), raw)
	if err != nil {
		t.Fatalf("%s %s: Go error %v, want a result", tool.Name(), raw, err)
	}
	return res
}

func wantText(t *testing.T, res sandbox.Result, want string) {
	t.Helper()
	if res.IsError || res.Output != want {
		t.Fatalf("got %q (is_error=%v)\nwant %q", res.Output, res.IsError, want)
	}
}

func wantError(t *testing.T, res sandbox.Result, substr string) {
	t.Helper()
	if !res.IsError || !strings.Contains(res.Output, substr) {
		t.Fatalf("got %q (is_error=%v), want an error result containing %q", res.Output, res.IsError, substr)
	}
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
