package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const setupFleet = `name = "set-up"
instructions = "Look around and say what you find."
[x-agentsfleet]
tools = ["list", "read", "bash"]
[x-agentsfleet.setup]
command = "echo prepared > prepared.txt; echo dependencies installed"
`

// TestRunSetsUpFirst: `agentsfleet run` runs the setup step in its local
// sandboxd (the real binary) before the model's first call, and shows it.
func TestRunSetsUpFirst(t *testing.T) {
	t.Parallel()
	work := openDir(t)
	def := filepath.Join(t.TempDir(), "setup.toml")
	os.WriteFile(def, []byte(setupFleet), 0o644)
	var out, errOut bytes.Buffer
	if err := runCmd(context.Background(), []string{"-f", def, "--workdir", work, "--state", t.TempDir(), "go"}, &out, &errOut, runEnv(nil)); err != nil {
		t.Fatalf("run: %v\n%s\n%s", err, out.String(), errOut.String())
	}
	if b, err := os.ReadFile(filepath.Join(work, "prepared.txt")); err != nil || string(b) != "prepared\n" {
		t.Errorf("prepared.txt = %q, %v; want the setup's file", b, err)
	}
	text := out.String()
	i, j := strings.Index(text, "setup ✓"), strings.Index(text, "→ ")
	if i < 0 || j < 0 || i > j || !strings.Contains(text, "dependencies installed") {
		t.Errorf("output:\n%s\nwant the setup shown, with its last line, before the first tool call", text)
	}
}

func TestRunFailsWhenTheSetupFails(t *testing.T) {
	t.Parallel()
	work := openDir(t)
	def := filepath.Join(t.TempDir(), "setup.toml")
	os.WriteFile(def, []byte(strings.Replace(setupFleet, "echo dependencies installed", "echo no such package >&2; exit 4", 1)), 0o644)
	var out, errOut bytes.Buffer
	err := runCmd(context.Background(), []string{"-f", def, "--workdir", work, "--state", t.TempDir(), "go"}, &out, &errOut, runEnv(nil))
	if !errors.Is(err, errRunFailed) {
		t.Fatalf("run = %v, want a failed run\n%s", err, out.String())
	}
	for _, want := range []string{"setup ✗ exit code 4: no such package", "run failed: setup_failed: the setup step exited with code 4", "failed · 0 tool calls"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
}
