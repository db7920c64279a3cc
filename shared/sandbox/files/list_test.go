package files_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentsfleet/agentsfleet/shared/sandbox"
	"github.com/agentsfleet/agentsfleet/shared/sandbox/files"
)

func TestListFormat(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	w := f.work
	write(t, filepath.Join(w, "b.txt"), "")
	write(t, filepath.Join(w, "A.md"), "")
	write(t, filepath.Join(w, ".hidden"), "")
	mkdir(t, filepath.Join(w, "zdir"))
	mkdir(t, filepath.Join(w, "adir"))
	write(t, filepath.Join(w, "adir", "inner.txt"), "x")
	link(t, "adir", filepath.Join(w, "link-in"))   // a directory of the workdir
	link(t, f.data, filepath.Join(w, "link-data")) // a directory of another root
	link(t, "nowhere", filepath.Join(w, "dangling"))
	mkdir(t, filepath.Join(f.data, "big"))
	tool := files.NewList(f.roots)

	// Links leading outside the roots (abs-out, rel-out, proc-out, to-base)
	// are shown as files: list never looks through them.
	want := strings.Join([]string{
		"adir/", "link-data/", "link-in/", "zdir/",
		".hidden", "A.md", "abs-out", "b.txt", "dangling", "proc-out", "rel-out", "to-base",
	}, "\n")
	wantText(t, run(t, tool, map[string]any{}), want)
	wantText(t, run(t, tool, map[string]any{"path": "adir"}), "inner.txt")
	wantText(t, run(t, tool, map[string]any{"path": "link-in"}), "inner.txt")
	wantText(t, run(t, tool, map[string]any{"path": f.data}), "big/")
	wantText(t, run(t, tool, map[string]any{"path": "zdir"}), "[zdir is an empty directory]")
}

func TestListCapsAt500(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	dir := filepath.Join(f.work, "many")
	// 600 files and 10 directories whose names sort after every file: the
	// directories must still come first.
	for i := range 600 {
		write(t, filepath.Join(dir, fmt.Sprintf("f%04d", i)), "")
	}
	for i := range 10 {
		mkdir(t, filepath.Join(dir, fmt.Sprintf("z%02d", i)))
	}
	res := run(t, files.NewList(f.roots), map[string]any{"path": "many"})
	lines := strings.Split(res.Output, "\n")
	if got, want := len(lines), sandbox.ListMaxEntries+1; got != want {
		t.Fatalf("got %d lines, want %d", got, want)
	}
	if lines[0] != "z00/" || lines[9] != "z09/" || lines[10] != "f0000" || lines[499] != "f0489" {
		t.Fatalf("got order %q … %q, %q … %q; want dirs z00/…z09/ then f0000…f0489", lines[0], lines[9], lines[10], lines[499])
	}
	if got, want := lines[500], "[110 more entries not shown: many holds 610 in all]"; got != want {
		t.Fatalf("last line = %q, want %q", got, want)
	}
}

func TestListErrors(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	write(t, filepath.Join(f.work, "file.txt"), "x")
	tool := files.NewList(f.roots)
	wantError(t, run(t, tool, map[string]any{"path": "file.txt"}), "list: file.txt is a file, not a directory")
	wantError(t, run(t, tool, map[string]any{"path": "nope"}), "list: nope does not exist")
	wantError(t, run(t, tool, map[string]any{"path": 3}), `"path" must be a string`)
	for _, p := range append(f.escapes(), "/proc/self/root/", "to-base", "..") {
		t.Run(p, func(t *testing.T) {
			res := run(t, tool, map[string]any{"path": p})
			wantError(t, res, "outside the agent's data")
		})
	}
}

func TestListUnreadableDirectory(t *testing.T) {
	t.Parallel()
	if os.Geteuid() == 0 {
		t.Skip("root reads every directory")
	}
	f := newFixture(t)
	dir := filepath.Join(f.work, "locked")
	mkdir(t, dir)
	if err := os.Chmod(dir, 0); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Chmod(dir, 0o755) })
	wantError(t, run(t, files.NewList(f.roots), map[string]any{"path": "locked"}), "list: permission denied: locked")
}
