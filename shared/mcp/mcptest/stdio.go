package mcptest

import (
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
)

var stdioBuild struct {
	once sync.Once
	dir  string
	err  error
	out  []byte
}

// BuildStdio builds the stdio MCP server for tests (./mcpstdio) once per
// test binary and copies it into dir, returning its path there: a sandbox
// test puts it in a root, since a confined process executes nothing
// outside them. The program is built with the go command on PATH.
func BuildStdio(t testing.TB, dir string) string {
	t.Helper()
	stdioBuild.once.Do(func() {
		stdioBuild.dir, stdioBuild.err = os.MkdirTemp("", "mcpstdio-")
		if stdioBuild.err != nil {
			return
		}
		cmd := exec.Command("go", "build", "-o", filepath.Join(stdioBuild.dir, "mcpstdio"), "github.com/agentsfleet/agentsfleet/shared/mcp/mcptest/mcpstdio")
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		stdioBuild.out, stdioBuild.err = cmd.CombinedOutput()
	})
	if stdioBuild.err != nil {
		t.Fatalf("build mcpstdio: %v\n%s", stdioBuild.err, stdioBuild.out)
	}
	p := filepath.Join(dir, "mcpstdio")
	// A hard link, not a copy: a file this process had open for writing
	// while another test forked could not be executed (ETXTBSY).
	if err := os.Link(filepath.Join(stdioBuild.dir, "mcpstdio"), p); err != nil {
		t.Fatalf("link mcpstdio into %s: %v", dir, err)
	}
	return p
}
