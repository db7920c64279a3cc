package files_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/agentsfleet/agentsfleet/shared/sandbox"
	"github.com/agentsfleet/agentsfleet/shared/sandbox/sandboxtest"
)

// The shared helpers, under the names these tests use.
var (
	mkdir     = sandboxtest.Mkdir
	write     = sandboxtest.Write
	link      = sandboxtest.Link
	run       = sandboxtest.Run
	wantText  = sandboxtest.WantText
	wantError = sandboxtest.WantError
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
	base := sandboxtest.Base(t)
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

func itoa(n int) string {
	b, _ := json.Marshal(n)
	return string(b)
}
