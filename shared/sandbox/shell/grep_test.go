package shell_test

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentsfleet/agentsfleet/shared/sandbox"
	"github.com/agentsfleet/agentsfleet/shared/sandbox/shell"
)

// grepTree writes the files the grep tests search.
func grepTree(t *testing.T) *fixture {
	t.Helper()
	f := newFixture(t)
	w := f.work
	write(t, filepath.Join(w, "a.go"), "package a\nfunc Alpha() {}\n// TODO: more\n")
	write(t, filepath.Join(w, "docs", "guide.md"), "# Guide\nalpha and ALPHA\n")
	write(t, filepath.Join(w, "src", "b.go"), "package b\nfunc Beta() { Alpha() }\n")
	write(t, filepath.Join(w, ".github", "ci.yml"), "alpha: hidden but searched\n")
	write(t, filepath.Join(w, ".git", "config"), "alpha in .git\n")
	write(t, filepath.Join(w, "vendor", "lib", ".git", "config"), "alpha in a nested .git\n")
	write(t, filepath.Join(w, "vendor", "lib", "lib.go"), "package lib\n")
	write(t, filepath.Join(w, "dash.txt"), "-x marks the spot\n")
	write(t, filepath.Join(w, "long.txt"), "alpha"+strings.Repeat("é", 1000)+"\n")
	if err := os.WriteFile(filepath.Join(w, "bin.dat"), []byte("alpha\x00\x01binary"), 0o644); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(f.data, "d.txt"), "alpha in data\n")
	write(t, filepath.Join(f.base, "outside", "o.txt"), "alpha outside\n")
	if err := os.Symlink(filepath.Join(f.base, "outside"), filepath.Join(w, "out-link")); err != nil {
		t.Fatal(err)
	}
	return f
}

// sortedLines sorts the result lines before a closing line: grep's order
// is not fixed.
func sortedLines(out string) string {
	lines := strings.Split(out, "\n")
	n := len(lines)
	if strings.HasPrefix(lines[n-1], "[") {
		n--
	}
	slices.Sort(lines[:n])
	return strings.Join(lines, "\n")
}

func grepTools(t *testing.T, f *fixture) map[string]*shell.Grep {
	tools := map[string]*shell.Grep{}
	if shell.Ripgrep() != "" {
		tools["rg"] = shell.NewGrep(f.roots, f.policy, time.Minute)
	}
	g := shell.NewGrep(f.roots, f.policy, time.Minute)
	g.RG = ""
	tools["grep"] = g
	return tools
}

func TestGrepFormat(t *testing.T) {
	t.Parallel()
	f := grepTree(t)
	long := "long.txt:1:alpha" + strings.Repeat("é", 400-len("long.txt:1:alpha"))
	tests := []struct {
		args map[string]any
		want string
	}{
		{map[string]any{"pattern": "Alpha"}, "a.go:2:func Alpha() {}\nsrc/b.go:2:func Beta() { Alpha() }"},
		{map[string]any{"pattern": "alpha", "ignore_case": true, "glob": "*.md"}, "docs/guide.md:2:alpha and ALPHA"},
		{map[string]any{"pattern": "al+pha|TODO", "glob": "*.go"}, "a.go:3:// TODO: more"},
		{map[string]any{"pattern": "Beta", "path": "src"}, "src/b.go:2:func Beta() { Alpha() }"},
		{map[string]any{"pattern": "Beta", "path": "src/b.go"}, "src/b.go:2:func Beta() { Alpha() }"},
		{map[string]any{"pattern": "Beta", "path": filepath.Join(f.work, "src")}, "src/b.go:2:func Beta() { Alpha() }"},
		{map[string]any{"pattern": "alpha", "path": f.data}, filepath.Join(f.data, "d.txt") + ":1:alpha in data"},
		{map[string]any{"pattern": "hidden"}, ".github/ci.yml:1:alpha: hidden but searched"},
		{map[string]any{"pattern": "-x marks"}, "dash.txt:1:-x marks the spot"},
		{map[string]any{"pattern": "alphaé"}, long},
		{map[string]any{"pattern": "nothing-matches-this"}, `No matches for "nothing-matches-this" in the workdir.`},
		{map[string]any{"pattern": "in \\.git"}, `No matches for "in \\.git" in the workdir.`},
		{map[string]any{"pattern": "nested"}, `No matches for "nested" in the workdir.`},
		{map[string]any{"pattern": "nested", "path": "vendor"}, `No matches for "nested" in vendor.`},
		{map[string]any{"pattern": "package", "path": "vendor"}, "vendor/lib/lib.go:1:package lib"},
		{map[string]any{"pattern": "outside"}, `No matches for "outside" in the workdir.`},
		{map[string]any{"pattern": "binary"}, `No matches for "binary" in the workdir.`},
	}
	for name, tool := range grepTools(t, f) {
		for _, tt := range tests {
			t.Run(fmt.Sprint(name, tt.args), func(t *testing.T) {
				t.Parallel()
				if name == "grep" && strings.Contains(tt.want, "é") {
					t.Skip("grep -E counts columns the same way, but its UTF-8 support depends on the locale")
				}
				res := run(t, tool, tt.args)
				res.Output = sortedLines(res.Output)
				wantText(t, res, tt.want)
			})
		}
	}
}

func TestGrepLimits(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	var b strings.Builder
	for i := range 1200 {
		fmt.Fprintf(&b, "hit %d\n", i)
	}
	write(t, filepath.Join(f.work, "many.txt"), b.String())
	for name, tool := range grepTools(t, f) {
		for _, tt := range []struct {
			args  map[string]any
			wantN int
		}{
			{map[string]any{"pattern": "hit"}, sandbox.GrepDefaultResults},
			{map[string]any{"pattern": "hit", "max_results": 5}, 5},
			{map[string]any{"pattern": "hit", "max_results": 100000}, sandbox.GrepMaxResults},
		} {
			t.Run(fmt.Sprint(name, tt.args), func(t *testing.T) {
				t.Parallel()
				res := run(t, tool, tt.args)
				lines := strings.Split(res.Output, "\n")
				want := fmt.Sprintf("[results cut at %d lines: narrow the pattern, the path or the glob, or raise max_results (at most 1000)]", tt.wantN)
				if res.IsError || len(lines) != tt.wantN+1 || lines[tt.wantN] != want {
					t.Fatalf("got %d lines ending %q, want %d then %q", len(lines), lines[len(lines)-1], tt.wantN, want)
				}
				if !strings.HasPrefix(lines[0], "many.txt:1:hit 0") {
					t.Fatalf("first line %q, want many.txt:1:hit 0", lines[0])
				}
			})
		}
	}
}

func TestGrepErrors(t *testing.T) {
	t.Parallel()
	f := grepTree(t)
	for name, tool := range grepTools(t, f) {
		for _, tt := range []struct {
			args map[string]any
			want string
		}{
			{map[string]any{}, `grep: argument "pattern" is required`},
			{map[string]any{"pattern": "(unclosed"}, "grep: "},
			{map[string]any{"pattern": "x", "max_results": 0}, `grep: argument "max_results" must be 1 or more, not 0`},
			{map[string]any{"pattern": "x", "path": "nope"}, "grep: nope does not exist"},
			{map[string]any{"pattern": "x", "path": "out-link"}, "outside the agent's data"},
			{map[string]any{"pattern": "x", "path": "../outside"}, "outside the agent's data"},
			{map[string]any{"pattern": "x", "path": "/proc/self/root" + f.base}, "outside the agent's data"},
			{map[string]any{"pattern": "x", "path": "/proc/self/environ"}, "outside the agent's data"},
			{map[string]any{"pattern": "x", "regex": true}, `unknown argument "regex"`},
		} {
			t.Run(fmt.Sprint(name, tt.args), func(t *testing.T) {
				t.Parallel()
				wantError(t, run(t, tool, tt.args), tt.want)
			})
		}
	}
	if shell.Ripgrep() != "" {
		res := run(t, shell.NewGrep(f.roots, f.policy, time.Minute), map[string]any{"pattern": "(unclosed"})
		wantError(t, res, "regex parse error")
	}
}

func TestGrepStopsAtTheTimeout(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	write(t, filepath.Join(f.work, "a.txt"), "a\n")
	// A pattern that matches nothing: a search that found a line before
	// the kill answers it with a note instead (results may be partial),
	// and a one-line file is searched fast enough to race the timeout.
	res := run(t, shell.NewGrep(f.roots, f.policy, time.Nanosecond), map[string]any{"pattern": "no such line"})
	wantError(t, res, "grep: grep stopped after the tool timeout of 1ns")
}
