package files_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"

	"github.com/agentsfleet/agentsfleet/shared/sandbox"
	"github.com/agentsfleet/agentsfleet/shared/sandbox/files"
	"github.com/agentsfleet/agentsfleet/shared/tool"
)

func numbered(from, to int) string {
	var b strings.Builder
	for i := from; i <= to; i++ {
		if i > from {
			b.WriteByte('\n')
		}
		fmt.Fprintf(&b, "%d\tline %d", i, i)
	}
	return b.String()
}

func linesFile(t *testing.T, name string, n int) {
	t.Helper()
	var b strings.Builder
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, "line %d\n", i)
	}
	write(t, name, b.String())
}

func TestReadFormat(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	linesFile(t, filepath.Join(f.work, "500.txt"), 500)
	linesFile(t, filepath.Join(f.work, "3000.txt"), 3000)
	write(t, filepath.Join(f.work, "two.txt"), "a\nb\n")
	write(t, filepath.Join(f.work, "noeol.txt"), "a\nb")
	write(t, filepath.Join(f.work, "blank.txt"), "\n\n")
	write(t, filepath.Join(f.work, "crlf.txt"), "a\r\nb\r\n")
	write(t, filepath.Join(f.data, "d.txt"), "in data\n")
	tool := files.NewRead(f.roots)
	tests := []struct {
		name string
		args map[string]any
		want string
	}{
		{"tab-separated numbers", map[string]any{"path": "two.txt"}, "1\ta\n2\tb"},
		{"no newline at the end", map[string]any{"path": "noeol.txt"}, "1\ta\n2\tb"},
		{"blank lines", map[string]any{"path": "blank.txt"}, "1\t\n2\t"},
		{"carriage returns are kept", map[string]any{"path": "crlf.txt"}, "1\ta\r\n2\tb\r"},
		{"default limit is 400", map[string]any{"path": "500.txt"}, numbered(1, 400) + "\n[more lines follow: continue with offset 401]"},
		{"continue from there", map[string]any{"path": "500.txt", "offset": 401}, numbered(401, 500)},
		{"offset and limit", map[string]any{"path": "500.txt", "offset": 10, "limit": 3}, numbered(10, 12) + "\n[more lines follow: continue with offset 13]"},
		{"last line exactly", map[string]any{"path": "500.txt", "offset": 500, "limit": 1}, numbered(500, 500)},
		{"limit beyond the end", map[string]any{"path": "500.txt", "offset": 499, "limit": 10}, numbered(499, 500)},
		{"limit at most 2000", map[string]any{"path": "3000.txt", "limit": 5000}, numbered(1, 2000) + "\n[more lines follow: continue with offset 2001]"},
		{"absolute path", map[string]any{"path": filepath.Join(f.work, "two.txt"), "limit": 1}, "1\ta\n[more lines follow: continue with offset 2]"},
		{"another root", map[string]any{"path": filepath.Join(f.data, "d.txt")}, "1\tin data"},
		{"a system file", map[string]any{"path": "/etc/passwd", "limit": 1}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			res := run(t, tool, tt.args)
			if tt.want == "" {
				if res.IsError || !strings.HasPrefix(res.Output, "1\t") {
					t.Fatalf("got %q, want line 1", res.Output)
				}
				return
			}
			wantText(t, res, tt.want)
		})
	}
}

func TestReadCutsLongLines(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	exact := strings.Repeat("é", sandbox.ReadMaxLineChars) // 4000 characters, 8000 bytes
	long := strings.Repeat("ab", 100_000)
	write(t, filepath.Join(f.work, "long.txt"), exact+"\n"+exact+"x\n"+long+"\nafter\n")
	tool := files.NewRead(f.roots)
	res := run(t, tool, map[string]any{"path": "long.txt"})
	want := "1\t" + exact + "\n" +
		"2\t" + exact + " [line truncated]\n" +
		"3\t" + long[:sandbox.ReadMaxLineChars] + " [line truncated]\n" +
		"4\tafter"
	wantText(t, res, want)
}

func TestReadErrors(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	linesFile(t, filepath.Join(f.work, "12.txt"), 12)
	write(t, filepath.Join(f.work, "one.txt"), "only\n")
	write(t, filepath.Join(f.work, "empty.txt"), "")
	write(t, filepath.Join(f.work, "noeol.txt"), "a\nb")
	write(t, filepath.Join(f.work, "newlines.txt"), "\n\n\n")
	mkdir(t, filepath.Join(f.work, "dir"))
	bin := append([]byte("text first"), 0, 1, 2)
	if err := os.WriteFile(filepath.Join(f.work, "bin.dat"), bin, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(f.work, "fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
	tool := files.NewRead(f.roots)
	tests := []struct {
		args map[string]any
		want string
	}{
		{map[string]any{}, `read: argument "path" is required`},
		{map[string]any{"path": "12.txt", "offset": 13}, "read: offset 13 is past the end of 12.txt, which has 12 lines"},
		{map[string]any{"path": "12.txt", "offset": 1000}, "read: offset 1000 is past the end of 12.txt, which has 12 lines"},
		{map[string]any{"path": "one.txt", "offset": 2}, "which has 1 line"},
		{map[string]any{"path": "empty.txt", "offset": 2}, "read: offset 2 is past the end of empty.txt, which is empty"},
		{map[string]any{"path": "noeol.txt", "offset": 3}, "read: offset 3 is past the end of noeol.txt, which has 2 lines"},
		{map[string]any{"path": "newlines.txt", "offset": 4}, "read: offset 4 is past the end of newlines.txt, which has 3 lines"},
		{map[string]any{"path": "12.txt", "offset": 0}, `read: argument "offset" must be 1 or more, not 0`},
		{map[string]any{"path": "12.txt", "limit": 0}, `read: argument "limit" must be 1 or more, not 0`},
		{map[string]any{"path": "12.txt", "limit": "x"}, `"limit" must be an integer`},
		{map[string]any{"path": "dir"}, "read: dir is a directory; use list"},
		{map[string]any{"path": "bin.dat"}, "read: bin.dat looks like a binary file"},
		{map[string]any{"path": "missing.txt"}, "read: missing.txt does not exist"},
		{map[string]any{"path": "12.txt/x"}, "not a directory"},
		{map[string]any{"path": "fifo"}, "read: fifo is not a regular file"},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprint(tt.args), func(t *testing.T) {
			t.Parallel()
			wantError(t, run(t, tool, tt.args), tt.want)
		})
	}
	t.Run("empty file", func(t *testing.T) {
		t.Parallel()
		wantText(t, run(t, tool, map[string]any{"path": "empty.txt"}), "[empty.txt is empty]")
	})
}

// TestReadRefusesEscapes tries every way out of the roots.
func TestReadRefusesEscapes(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	tool := files.NewRead(f.roots)
	for _, p := range f.escapes() {
		t.Run(p, func(t *testing.T) {
			t.Parallel()
			res := run(t, tool, map[string]any{"path": p})
			wantError(t, res, "outside the agent's data")
			if strings.Contains(res.Output, "top secret") {
				t.Fatalf("read %s returned the secret", p)
			}
		})
	}
}

// TestReadHardLink documents what read does with a hard link: a hard link
// inside the workdir is a file of the workdir, whatever other name it has,
// so read shows it. The defence is at creation: sandboxd's user cannot link
// a file it may not already read and write (fs.protected_hardlinks; see
// the shell package's test).
func TestReadHardLink(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	if err := os.Link(f.secret, filepath.Join(f.work, "hard")); err != nil {
		t.Skipf("cannot make a hard link here: %v", err)
	}
	wantText(t, run(t, files.NewRead(f.roots), map[string]any{"path": "hard"}), "1\ttop secret")
}

// TestReadSparseLongLine reads past a 64 MiB line of a sparse file and
// checks that memory did not grow with it (read_internal_test.go does the
// same with a gigabyte, without the disk). Not parallel: it measures the
// process's allocations.
func TestReadSparseLongLine(t *testing.T) {
	f := newFixture(t)
	name := filepath.Join(f.work, "huge.txt")
	fh, err := os.Create(name)
	if err != nil {
		t.Fatal(err)
	}
	// Text for the binary check, then a hole (NUL bytes), then a newline
	// and one more line.
	if _, err := fh.WriteString("start" + strings.Repeat("y", 8<<10)); err != nil {
		t.Fatal(err)
	}
	if _, err := fh.WriteAt([]byte("\nend\n"), 64<<20); err != nil {
		t.Fatal(err)
	}
	fh.Close()
	tool := files.NewRead(f.roots)

	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	res, err := tool.Run(context.Background(), []byte(`{"path":"huge.txt","offset":2}`))
	runtime.ReadMemStats(&after)
	if err != nil {
		t.Fatal(err)
	}
	wantText(t, res, "2\tend")
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 4<<20 {
		t.Errorf("reading past a 64 MiB line allocated %d bytes, want at most 4 MiB", alloc)
	}
	res = run(t, tool, map[string]any{"path": "huge.txt", "limit": 1})
	want := "1\tstart" + strings.Repeat("y", sandbox.ReadMaxLineChars-5) + " [line truncated]\n[more lines follow: continue with offset 2]"
	wantText(t, res, want)
}

func TestReadStopsWhenCancelled(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	linesFile(t, filepath.Join(f.work, "many.txt"), 100_000)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	res, err := files.NewRead(f.roots).Run(ctx, []byte(`{"path":"many.txt","offset":90000}`))
	if err != nil {
		t.Fatal(err)
	}
	wantError(t, res, "read: stopped before reaching line 90000")
}

var _ tool.Tool = files.NewRead(nil)
