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

func TestValidateExamples(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob("../../examples/*.*")
	if err != nil || len(files) == 0 {
		t.Fatalf("no examples found: %v", err)
	}
	var defs []string
	for _, f := range files {
		if strings.HasSuffix(f, ".toml") || strings.HasSuffix(f, ".json") {
			defs = append(defs, f)
		}
	}
	var out bytes.Buffer
	if err := run(context.Background(), append([]string{"validate"}, defs...), &out, &out); err != nil {
		t.Fatalf("validate examples: %v\n%s", err, out.String())
	}
	if got := strings.Count(out.String(), ": ok "); got != len(defs) {
		t.Fatalf("validate printed %d ok lines for %d files:\n%s", got, len(defs), out.String())
	}
}

func TestValidateReportsProblemsWithLines(t *testing.T) {
	t.Parallel()
	bad := filepath.Join(t.TempDir(), "bad.toml")
	if err := os.WriteFile(bad, []byte("name = \"x\"\ninstructions = \"hi\"\n\n[x-agentsfleet]\ntools = [\"raed\"]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	err := run(context.Background(), []string{"validate", bad}, &out, &out)
	if err == nil || errors.Is(err, errUsage) {
		t.Fatalf("validate of a bad Definition returned %v, want a failure that is not a usage error", err)
	}
	for _, want := range []string{"line 5", `"raed"`, "read"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output does not mention %s:\n%s", want, out.String())
		}
	}
}

func TestUsageErrors(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{nil, {"frobnicate"}, {"validate"}, {"validate", "x.yaml"}, {"table"}, {"dev", "--nope"}} {
		err := run(context.Background(), args, &bytes.Buffer{}, &bytes.Buffer{})
		if !errors.Is(err, errUsage) {
			t.Errorf("run(%q) = %v, want a usage error", args, err)
		}
	}
}
