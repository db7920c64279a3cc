package files_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentsfleet/agentsfleet/shared/sandbox"
)

// fixture is a set of roots under one base directory, with a secret file
// outside all of them and links that try to reach it.
type fixture struct {
	roots                   *sandbox.Roots
	base, work, data, agent string
	secret                  string // outside every root, readable by all
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	base := t.TempDir()
	if err := os.Chmod(base, 0o755); err != nil {
		t.Fatal(err)
	}
	f := &fixture{base: base, work: filepath.Join(base, "work"), data: filepath.Join(base, "data"), agent: filepath.Join(base, "agent")}
	for _, d := range []string{f.work, f.data, f.agent} {
		mkdir(t, d)
	}
	f.secret = filepath.Join(base, "secret.txt")
	write(t, f.secret, "top secret\n")
	link(t, f.secret, filepath.Join(f.work, "abs-out"))
	link(t, "../secret.txt", filepath.Join(f.work, "rel-out"))
	link(t, "/proc/self/root"+f.secret, filepath.Join(f.work, "proc-out"))
	link(t, base, filepath.Join(f.work, "to-base"))
	roots, err := sandbox.New(sandbox.Dirs{Workdir: f.work, Agent: f.agent, Data: f.data})
	if err != nil {
		t.Fatal(err)
	}
	f.roots = roots
	return f
}

// escapes are paths that must be refused as outside the agent's data.
func (f *fixture) escapes() []string {
	return []string{
		"../secret.txt",
		f.secret,
		"abs-out",
		"rel-out",
		"proc-out",
		"to-base/secret.txt",
		"/proc/self/root" + f.secret,
		"/proc/self/environ",
		"/proc/" + itoa(os.Getpid()) + "/environ",
		"/proc/self/cwd/" + f.secret,
		"sub/../../secret.txt",
		"/root",
		"/",
	}
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

func link(t *testing.T, target, name string) {
	t.Helper()
	if err := os.Symlink(target, name); err != nil {
		t.Fatal(err)
	}
}

// run calls tool with args given as a Go value.
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

func wantError(t *testing.T, res sandbox.Result, substr string) {
	t.Helper()
	if !res.IsError || !strings.Contains(res.Output, substr) {
		t.Fatalf("got %q (is_error=%v), want an error result containing %q", res.Output, res.IsError, substr)
	}
}

func wantText(t *testing.T, res sandbox.Result, want string) {
	t.Helper()
	if res.IsError || res.Output != want {
		t.Fatalf("got %q (is_error=%v)\nwant %q", res.Output, res.IsError, want)
	}
}

func itoa(n int) string {
	b, _ := json.Marshal(n)
	return string(b)
}
