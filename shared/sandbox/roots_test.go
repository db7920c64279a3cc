package sandbox_test

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/agentsfleet/agentsfleet/shared/sandbox"
)

func newRoots(t *testing.T) (*sandbox.Roots, string, string) {
	t.Helper()
	base := t.TempDir()
	work := filepath.Join(base, "work")
	agent := filepath.Join(base, "agent")
	data := filepath.Join(base, "data")
	for _, d := range []string{work, agent, data} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	secret := filepath.Join(base, "secret.txt")
	if err := os.WriteFile(secret, []byte("top secret"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(work, "notes.txt"), []byte("hi"), 0o644); err != nil {
		t.Fatal(err)
	}
	mustLink := func(target, name string) {
		if err := os.Symlink(target, filepath.Join(work, name)); err != nil {
			t.Fatal(err)
		}
	}
	mustLink(secret, "abs-out")
	mustLink("../secret.txt", "rel-out")
	mustLink("notes.txt", "rel-in")
	mustLink("/proc/self/root"+secret, "proc-out")
	mustLink(data, "to-data")
	mustLink("/etc", "to-etc")
	mustLink(base, "to-base")
	r, err := sandbox.New(sandbox.Dirs{Workdir: work, Agent: agent, Data: data})
	if err != nil {
		t.Fatal(err)
	}
	return r, work, base
}

func TestResolveRefusesEscapes(t *testing.T) {
	t.Parallel()
	r, _, base := newRoots(t)
	for _, p := range []string{
		"../secret.txt", filepath.Join(base, "secret.txt"), "abs-out", "rel-out", "proc-out",
		"/proc/self/root" + filepath.Join(base, "secret.txt"), "/proc/self/environ", "/root",
		"to-base/secret.txt", "to-base/work/../secret.txt", "sub/../../secret.txt", "notes.txt\x00",
	} {
		t.Run(p, func(t *testing.T) {
			t.Parallel()
			rv, err := r.Resolve(p, false)
			if err == nil {
				rv.Close()
				t.Fatalf("Resolve(%q) = %s, want an error", p, rv.Real())
			}
			if !errors.Is(err, sandbox.ErrOutside) {
				t.Fatalf("Resolve(%q) error = %v, want ErrOutside", p, err)
			}
		})
	}
}

func TestResolveFollowsLinksBetweenRoots(t *testing.T) {
	t.Parallel()
	r, work, _ := newRoots(t)
	tests := []struct {
		path     string
		write    bool
		wantRoot string
		wantErr  bool
	}{
		{"notes.txt", true, "workdir", false},
		{"rel-in", false, "workdir", false},
		{"to-data", false, "data", false},
		{"to-data/new.txt", true, "", true}, // data is read-only
		{"to-etc/hostname", false, "system", false},
		{"/etc/hostname", true, "", true},
		{filepath.Join(work, "new/dir/file"), true, "workdir", false},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			t.Parallel()
			rv, err := r.Resolve(tt.path, tt.write)
			if tt.wantErr {
				if err == nil {
					rv.Close()
					t.Fatalf("Resolve(%q, write=%v) succeeded, want an error", tt.path, tt.write)
				}
				return
			}
			if err != nil {
				t.Fatalf("Resolve(%q) error = %v", tt.path, err)
			}
			defer rv.Close()
			if rv.Root.Name != tt.wantRoot {
				t.Fatalf("Resolve(%q) root = %s, want %s", tt.path, rv.Root.Name, tt.wantRoot)
			}
		})
	}
}

func TestResolvedAccessStaysInsideWhenLinkIsSwapped(t *testing.T) {
	t.Parallel()
	r, work, base := newRoots(t)
	rv, err := r.Resolve("swap", false)
	if err != nil {
		t.Fatal(err)
	}
	defer rv.Close()
	// After the check, the name becomes a link pointing outside.
	if err := os.Symlink(filepath.Join(base, "secret.txt"), filepath.Join(work, "swap")); err != nil {
		t.Fatal(err)
	}
	if b, err := rv.FS.ReadFile(rv.Rel); err == nil {
		t.Fatalf("read through a swapped link returned %q, want an error", b)
	}
}

func TestDecodeArgsSaysWhatIsWrong(t *testing.T) {
	t.Parallel()
	type args struct {
		Path  string `json:"path"`
		Limit int    `json:"limit"`
	}
	tests := []struct{ in, want string }{
		{`{"path": 3}`, `read: invalid arguments: "path" must be a string, not number`},
		{`{"limit": "x"}`, `read: invalid arguments: "limit" must be an integer, not string`},
		{`{"nope": 1}`, `read: invalid arguments: unknown argument "nope"`},
		{`[1]`, `read: invalid arguments: arguments must be a JSON object, not array`},
		{`{"path": "a"} {}`, `read: invalid arguments: unexpected data after the JSON object`},
	}
	for _, tt := range tests {
		var a args
		res, ok := sandbox.DecodeArgs("read", []byte(tt.in), &a)
		if ok || !res.IsError || res.Output != tt.want {
			t.Errorf("DecodeArgs(%s) = %q, %v; want %q", tt.in, res.Output, ok, tt.want)
		}
	}
}

func TestCount(t *testing.T) {
	t.Parallel()
	n := func(v int) *int { return &v }
	tests := []struct {
		in      *int
		want    int
		wantErr string
	}{
		{nil, 100, ""},
		{n(1), 1, ""},
		{n(1000), 1000, ""},
		{n(5000), 1000, ""},
		{n(0), 0, "grep: max_results must be 1 or more, not 0"},
		{n(-3), 0, "grep: max_results must be 1 or more, not -3"},
	}
	for _, tt := range tests {
		got, res, ok := sandbox.Count("grep", "max_results", tt.in, 100, 1000)
		if ok != (tt.wantErr == "") || got != tt.want || res.Output != tt.wantErr {
			t.Errorf("Count(%v) = %d, %q, %v; want %d, %q", tt.in, got, res.Output, ok, tt.want, tt.wantErr)
		}
	}
}
