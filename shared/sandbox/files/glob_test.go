package files_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentsfleet/agentsfleet/shared/sandbox"
	"github.com/agentsfleet/agentsfleet/shared/sandbox/files"
)

func globTree(t *testing.T) *fixture {
	t.Helper()
	f := newFixture(t)
	for _, p := range []string{
		"README.md", "main.go", "main_test.go",
		"docs/guide.md", "docs/api/ref.md",
		"src/a.go", "src/b.ts", "src/c.tsx", "src/deep/x/y/z.go",
		".github/ci.yml", ".git/config", ".git/HEAD.md",
	} {
		write(t, filepath.Join(f.work, p), "x")
	}
	write(t, filepath.Join(f.data, "notes.md"), "x")
	write(t, filepath.Join(f.base, "outside", "secret.md"), "x")
	link(t, filepath.Join(f.base, "outside"), filepath.Join(f.work, "src", "out-dir")) // leads outside
	link(t, "../docs", filepath.Join(f.work, "src", "docs-link"))                      // a directory inside
	return f
}

func TestGlobFormat(t *testing.T) {
	t.Parallel()
	f := globTree(t)
	tool := files.NewGlob(f.roots, time.Minute)
	tests := []struct {
		args map[string]any
		want string
	}{
		// No "/": names anywhere in the tree, in path order; .git skipped;
		// links to directories not followed.
		{map[string]any{"pattern": "*.md"}, "README.md\ndocs/api/ref.md\ndocs/guide.md"},
		{map[string]any{"pattern": "*.go"}, "main.go\nmain_test.go\nsrc/a.go\nsrc/deep/x/y/z.go"},
		// With "/": paths from the search directory.
		{map[string]any{"pattern": "src/*.go"}, "src/a.go"},
		{map[string]any{"pattern": "src/**/*.go"}, "src/a.go\nsrc/deep/x/y/z.go"},
		{map[string]any{"pattern": "./src/*.go"}, "src/a.go"},
		{map[string]any{"pattern": "**/*.{ts,tsx}"}, "src/b.ts\nsrc/c.tsx"},
		{map[string]any{"pattern": "*_test.go"}, "main_test.go"},
		{map[string]any{"pattern": "*.yml"}, ".github/ci.yml"},
		{map[string]any{"pattern": "src/docs-link"}, "src/docs-link"},
		// path: relative to the workdir when under it, absolute otherwise.
		{map[string]any{"pattern": "*.md", "path": "docs"}, "docs/api/ref.md\ndocs/guide.md"},
		{map[string]any{"pattern": "*.md", "path": f.data}, filepath.Join(f.data, "notes.md")},
		{map[string]any{"pattern": "*.md", "path": "src/docs-link"}, "docs/api/ref.md\ndocs/guide.md"},
		{map[string]any{"pattern": "*.rs"}, "No files match *.rs in the workdir."},
		{map[string]any{"pattern": "nope/*.go"}, "No files match nope/*.go in the workdir."},
		{map[string]any{"pattern": "*.go", "max_results": 2}, "main.go\nmain_test.go\n[results cut at 2 paths: narrow the pattern or the path, or raise max_results (at most 2000)]"},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprint(tt.args), func(t *testing.T) {
			t.Parallel()
			wantText(t, run(t, tool, tt.args), tt.want)
		})
	}
}

func TestGlobLimits(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	for i := range 2100 {
		write(t, filepath.Join(f.work, "many", fmt.Sprintf("%04d.txt", i)), "")
	}
	tool := files.NewGlob(f.roots, time.Minute)
	for _, tt := range []struct {
		args     map[string]any
		wantN    int
		wantLast string
	}{
		{map[string]any{"pattern": "*.txt"}, sandbox.GlobDefaultResults, "[results cut at 200 paths: narrow the pattern or the path, or raise max_results (at most 2000)]"},
		{map[string]any{"pattern": "*.txt", "max_results": 5000}, sandbox.GlobMaxResults, "[results cut at 2000 paths: narrow the pattern or the path, or raise max_results (at most 2000)]"},
		{map[string]any{"pattern": "*.txt", "max_results": 2100}, sandbox.GlobMaxResults, "[results cut at 2000 paths: narrow the pattern or the path, or raise max_results (at most 2000)]"},
	} {
		res := run(t, tool, tt.args)
		lines := strings.Split(res.Output, "\n")
		if len(lines) != tt.wantN+1 || lines[len(lines)-1] != tt.wantLast {
			t.Fatalf("%v: got %d lines ending %q, want %d paths then %q", tt.args, len(lines), lines[len(lines)-1], tt.wantN, tt.wantLast)
		}
		if lines[0] != "many/0000.txt" {
			t.Fatalf("first path = %q, want many/0000.txt", lines[0])
		}
	}
}

func TestGlobErrors(t *testing.T) {
	t.Parallel()
	f := globTree(t)
	tool := files.NewGlob(f.roots, time.Minute)
	for _, tt := range []struct {
		args map[string]any
		want string
	}{
		{map[string]any{}, `glob: argument "pattern" is required`},
		{map[string]any{"pattern": "/etc/*"}, "must be relative"},
		{map[string]any{"pattern": "../*"}, "must not contain .."},
		{map[string]any{"pattern": "src/../../*"}, "must not contain .."},
		{map[string]any{"pattern": "[a-"}, "is malformed"},
		{map[string]any{"pattern": "*", "max_results": 0}, `glob: argument "max_results" must be 1 or more, not 0`},
		{map[string]any{"pattern": "*", "path": "main.go"}, "glob: main.go is a file, not a directory"},
		{map[string]any{"pattern": "*", "path": "nope"}, "glob: nope does not exist"},
		{map[string]any{"pattern": "*", "path": "src/out-dir"}, "outside the agent's data"},
		{map[string]any{"pattern": "*", "path": "/proc/self/root" + f.base}, "outside the agent's data"},
		{map[string]any{"pattern": "*", "path": ".."}, "outside the agent's data"},
	} {
		t.Run(fmt.Sprint(tt.args), func(t *testing.T) {
			t.Parallel()
			wantError(t, run(t, tool, tt.args), tt.want)
		})
	}
}

func TestGlobNeverLeavesTheRoots(t *testing.T) {
	t.Parallel()
	f := globTree(t)
	res := run(t, files.NewGlob(f.roots, time.Minute), map[string]any{"pattern": "**", "max_results": 2000})
	for _, line := range strings.Split(res.Output, "\n") {
		if strings.Contains(line, "secret") {
			t.Fatalf("glob ** found %q outside the roots:\n%s", line, res.Output)
		}
	}
}

func TestGlobStopsAtTheTimeout(t *testing.T) {
	t.Parallel()
	f := globTree(t)
	res := run(t, files.NewGlob(f.roots, time.Nanosecond), map[string]any{"pattern": "*.go"})
	wantText(t, res, "[no match found before glob stopped after the tool timeout of 1ns; narrow the path or the pattern]")

	// The call's own tool timeout (a pooled sandboxd's call) wins over the
	// tool's.
	out, err := files.NewGlob(f.roots, time.Minute).Run(sandbox.WithToolTimeout(context.Background(), time.Nanosecond), []byte(`{"pattern":"*.go"}`))
	if want := "[no match found before glob stopped after the tool timeout of 1ns; narrow the path or the pattern]"; err != nil || out.Output != want {
		t.Fatalf("glob with the call's tool timeout of 1ns = %q, %v; want %q", out.Output, err, want)
	}

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	out, err = files.NewGlob(f.roots, time.Minute).Run(ctx, []byte(`{"pattern":"*.go"}`))
	if err != nil || !strings.Contains(out.Output, "[glob stopped: context canceled]") {
		t.Fatalf("cancelled glob = %q, %v; want a line saying it stopped", out.Output, err)
	}
}
