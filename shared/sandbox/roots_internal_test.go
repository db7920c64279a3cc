//go:build linux

package sandbox

import (
	"os"
	"path/filepath"
	"testing"
)

// TestLinkFree: the one-call check says "no link" only where
// filepath.EvalSymlinks would find none, so linkTarget's answer is the same
// with it as without it.
func TestLinkFree(t *testing.T) {
	t.Parallel()
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(base, "dir")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "f.txt")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, l := range [][2]string{{dir, "link-dir"}, {file, "link-file"}, {"/nowhere", "dangling"}} {
		if err := os.Symlink(l[0], filepath.Join(base, l[1])); err != nil {
			t.Fatal(err)
		}
	}
	for _, tt := range []struct {
		path string
		want bool
	}{
		{base, true},
		{dir, true},
		{file, true},
		{filepath.Join(base, "missing"), false},
		{filepath.Join(base, "link-dir"), false},
		{filepath.Join(base, "link-dir", "f.txt"), false},
		{filepath.Join(base, "link-file"), false},
		{filepath.Join(base, "dangling"), false},
		{"/proc/self/root/etc", false},
	} {
		if got := linkFree(tt.path); got != tt.want {
			t.Errorf("linkFree(%s) = %v, want %v", tt.path, got, tt.want)
		}
		if real, err := filepath.EvalSymlinks(tt.path); linkFree(tt.path) && (err != nil || real != tt.path) {
			t.Errorf("linkFree(%s) but EvalSymlinks = %q, %v", tt.path, real, err)
		}
	}
}
