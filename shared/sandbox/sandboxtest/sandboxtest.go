// Package sandboxtest holds what the sandbox tools' tests share: roots that
// a confined uid can reach, small file helpers, and assertions on tool
// results. It is imported by tests only.
package sandboxtest

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentsfleet/agentsfleet/shared/tool"
)

// Base returns a fresh directory for a test's roots. t.TempDir and its
// parent are 0700; Base opens both to everyone, so that confined processes,
// which run as an unprivileged uid when the tests run as root, can reach it.
func Base(t testing.TB) string {
	t.Helper()
	base := t.TempDir()
	for _, d := range []string{filepath.Dir(base), base} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return base
}

// Mkdir makes dir and its parents, 0755.
func Mkdir(t testing.TB, dir string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
}

// Write writes content to name, making its folder first.
func Write(t testing.TB, name, content string) {
	t.Helper()
	Mkdir(t, filepath.Dir(name))
	if err := os.WriteFile(name, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// Link makes name a symbolic link to target.
func Link(t testing.TB, target, name string) {
	t.Helper()
	if err := os.Symlink(target, name); err != nil {
		t.Fatal(err)
	}
}

// Run calls tool with args given as a Go value and fails the test on a Go
// error: the tools answer the model's mistakes with error results.
func Run(t testing.TB, tool tool.Tool, args any) tool.Result {
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

// WantText fails unless res is a normal result with exactly want.
func WantText(t testing.TB, res tool.Result, want string) {
	t.Helper()
	if res.IsError || res.Output != want {
		t.Fatalf("got %q (is_error=%v)\nwant %q", res.Output, res.IsError, want)
	}
}

// WantError fails unless res is an error result containing substr.
func WantError(t testing.TB, res tool.Result, substr string) {
	t.Helper()
	if !res.IsError || !strings.Contains(res.Output, substr) {
		t.Fatalf("got %q (is_error=%v), want an error result containing %q", res.Output, res.IsError, substr)
	}
}
