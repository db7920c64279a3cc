package shell

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"
)

func TestScanForGit(t *testing.T) {
	mk := func(t *testing.T, root string, paths ...string) {
		t.Helper()
		for _, p := range paths {
			if err := os.MkdirAll(filepath.Join(root, p), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(root, p, "f.txt"), []byte("x\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, tt := range []struct {
		name  string
		setup func(t *testing.T, root string)
		want  bool
	}{
		{"no .git", func(t *testing.T, root string) { mk(t, root, "a/b/c", "a/d", "e") }, true},
		{"leaf directory", func(t *testing.T, root string) {}, true},
		{".git on top", func(t *testing.T, root string) { mk(t, root, ".git/objects", "src") }, false},
		{".git deep", func(t *testing.T, root string) { mk(t, root, "a/b/c", "vendor/lib/.git/refs") }, false},
		{".git with nothing in it", func(t *testing.T, root string) { mk(t, root, "a/b", "vendor/lib/.git") }, false},
		{".git file", func(t *testing.T, root string) {
			mk(t, root, "sub/x")
			if err := os.WriteFile(filepath.Join(root, "sub", ".git"), []byte("gitdir: /elsewhere\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		}, false},
		{"link named .git", func(t *testing.T, root string) {
			mk(t, root, "sub/x")
			if err := os.Symlink("/", filepath.Join(root, "sub", ".git")); err != nil {
				t.Fatal(err)
			}
		}, false},
		{"too many directories", func(t *testing.T, root string) {
			for i := range 20 {
				mk(t, root, filepath.Join(strconv.Itoa(i), "sub"))
			}
		}, false},
		{"too many entries", func(t *testing.T, root string) {
			mk(t, root, "a/b")
			for i := range 60 {
				if err := os.WriteFile(filepath.Join(root, "a", strconv.Itoa(i)), nil, 0o644); err != nil {
					t.Fatal(err)
				}
			}
		}, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			root := t.TempDir()
			tt.setup(t, root)
			if got := scanForGit(root, 10, 50); got != tt.want {
				t.Fatalf("scanForGit = %v, want %v", got, tt.want)
			}
		})
	}
	if scanForGit(filepath.Join(t.TempDir(), "missing"), 10, 50) {
		t.Error("a missing directory was found free of .git")
	}
	file := filepath.Join(t.TempDir(), "file")
	os.WriteFile(file, nil, 0o644)
	if scanForGit(file, 10, 50) {
		t.Error("a file was found free of .git")
	}
}
