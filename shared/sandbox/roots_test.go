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
