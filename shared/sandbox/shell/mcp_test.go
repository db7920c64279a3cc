//go:build linux

package shell_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/agentsfleet/agentsfleet/shared/mcp/mcptest"
	"github.com/agentsfleet/agentsfleet/shared/sandbox"
	"github.com/agentsfleet/agentsfleet/shared/sandbox/confine"
	"github.com/agentsfleet/agentsfleet/shared/sandbox/shell"
	"github.com/agentsfleet/agentsfleet/shared/sandbox/wire"
	"github.com/agentsfleet/agentsfleet/shared/tool"
)

// stdioFixture is a sandbox fixture with the test MCP server in its data
// root (read-only, so the confined process may execute it) and the two
// tools over one MCP.
type stdioFixture struct {
	*fixture
	mcp        *shell.MCP
	list, call tool.Tool
	program    string
}

func newStdioFixture(t *testing.T, timeout time.Duration) *stdioFixture {
	t.Helper()
	f := newFixture(t)
	prog := mcptest.BuildStdio(t, f.data)
	m := shell.NewMCP(f.roots, f.policy, timeout)
	t.Cleanup(func() { m.Close() })
	ts := m.Tools()
	return &stdioFixture{fixture: f, mcp: m, list: ts[0], call: ts[1], program: prog}
}

func (f *stdioFixture) callTool(t *testing.T, tl string, args any, command ...string) tool.Result {
	t.Helper()
	if command == nil {
		command = []string{f.program}
	}
	a := map[string]any{"server": "local", "command": command, "tool": tl}
	if args != nil {
		a["arguments"] = args
	}
	return run(t, f.call, a)
}

func (f *stdioFixture) pid(t *testing.T) int {
	t.Helper()
	res := f.callTool(t, "pid", nil)
	n, err := strconv.Atoi(res.Output)
	if err != nil || res.IsError {
		t.Fatalf("pid: %q (is_error=%v)", res.Output, res.IsError)
	}
	return n
}

func TestMCPStdioListsAndCalls(t *testing.T) {
	t.Parallel()
	f := newStdioFixture(t, time.Minute)
	res := run(t, f.list, map[string]any{"server": "local", "command": []string{f.program}})
	if res.IsError {
		t.Fatalf("list: %s", res.Output)
	}
	var tools []wire.MCPTool
	if err := json.Unmarshal([]byte(res.Output), &tools); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range tools {
		names = append(names, tl.Name)
	}
	for _, want := range []string{"echo", "fail", "read", "write", "env", "sleep", "exit", "drop"} {
		if !slices.Contains(names, want) {
			t.Errorf("listed %v, want %s among them", names, want)
		}
	}
	wantText(t, f.callTool(t, "echo", map[string]any{"text": "hello"}), "hello")
	wantError(t, f.callTool(t, "fail", nil), "the tool failed on purpose")
	wantText(t, f.callTool(t, "echo", map[string]any{"text": ""}), "[the tool answered no content]")
	// One long-lived process serves every call.
	if a, b := f.pid(t), f.pid(t); a != b {
		t.Errorf("two calls were served by processes %d and %d, want one", a, b)
	}
	// The arguments must be an object.
	wantError(t, run(t, f.call, map[string]any{"server": "local", "command": []string{f.program}, "tool": "echo", "arguments": []int{1}}), "must be a JSON object")
	wantError(t, run(t, f.call, map[string]any{"server": "local", "command": []string{}, "tool": "echo"}), "no command")
	wantError(t, run(t, f.call, map[string]any{"server": "local", "command": []string{f.program}, "tool": "echo", "extra": 1}), "not of its form")
}

// The server runs confined as bash's commands are: it reads and writes
// what bash can, in the workdir, with bash's environment.
func TestMCPStdioIsConfined(t *testing.T) {
	t.Parallel()
	f := newStdioFixture(t, time.Minute)
	wantText(t, f.callTool(t, "write", map[string]any{"path": "inside.txt", "text": "ok"}), "wrote inside.txt")
	if b, err := os.ReadFile(filepath.Join(f.work, "inside.txt")); err != nil || string(b) != "ok" {
		t.Fatalf("the write in the workdir: %q, %v", b, err)
	}
	outside := filepath.Join(f.base, "outside.txt")
	res := f.callTool(t, "write", map[string]any{"path": outside, "text": "escaped"})
	wantError(t, res, "permission denied")
	if _, err := os.Stat(outside); err == nil {
		t.Fatal("the server wrote outside the writable roots")
	}
	wantError(t, f.callTool(t, "write", map[string]any{"path": filepath.Join(f.data, "x.txt"), "text": "x"}), "denied")
	// It reads exactly what bash reads, and writes only where bash writes.
	bash := shell.NewBash(f.roots, f.policy, time.Minute)
	for _, p := range []string{f.secret, "/etc/passwd", "/root/.profile", "/proc/1/environ"} {
		viaBash := run(t, bash, map[string]any{"command": "cat " + p + " >/dev/null"})
		viaMCP := f.callTool(t, "read", map[string]any{"path": p})
		if viaBash.IsError != viaMCP.IsError {
			t.Errorf("reading %s: bash %q, the MCP server %q: want the same outcome", p, viaBash.Output, viaMCP.Output)
		}
	}
	for _, p := range []string{filepath.Join(f.base, "outside2.txt"), "/etc/agentsfleet-test", filepath.Join(f.data, "y.txt")} {
		viaBash := run(t, bash, map[string]any{"command": "echo x > " + p})
		viaMCP := f.callTool(t, "write", map[string]any{"path": p, "text": "x"})
		if !viaBash.IsError || !viaMCP.IsError {
			t.Errorf("writing %s: bash %q, the MCP server %q: want both refused", p, viaBash.Output, viaMCP.Output)
		}
	}
	env := f.callTool(t, "env", nil)
	if env.IsError {
		t.Fatal(env.Output)
	}
	var names []string
	for _, kv := range strings.Split(env.Output, "\n") {
		k, _, _ := strings.Cut(kv, "=")
		names = append(names, k)
	}
	var base []string
	for _, kv := range confine.BaseEnv() {
		k, _, _ := strings.Cut(kv, "=")
		base = append(base, k)
	}
	for _, n := range names {
		if !slices.Contains(base, n) && n != "PWD" {
			t.Errorf("the server's environment has %s, which bash's has not (%v)", n, base)
		}
	}
	if uid, _ := f.policy.Identity(); uid != os.Getuid() {
		// As root the server runs as the commands' uid, not root.
		res := f.callTool(t, "read", map[string]any{"path": "/proc/self/status"})
		if !strings.Contains(res.Output, "Uid:\t"+strconv.Itoa(uid)+"\t") {
			t.Errorf("the server's status: %s, want uid %d", res.Output, uid)
		}
	}
}

// A server that never answers initialize, and a tool that hangs: each gets
// a clear error within the tool timeout, and the hung server is stopped.
func TestMCPStdioHangs(t *testing.T) {
	t.Parallel()
	f := newStdioFixture(t, time.Second)
	start := time.Now()
	res := run(t, f.list, map[string]any{"server": "stuck", "command": []string{f.program, "-hang"}})
	wantError(t, res, "did not answer initialize within 1 second (the fleet's tool timeout)")
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("the hanging server was answered after %s", d)
	}
	pid := f.pid(t)
	start = time.Now()
	res = f.callTool(t, "sleep", map[string]any{"seconds": 30})
	wantError(t, res, "did not answer within 1 second (the fleet's tool timeout), so it was stopped; the next call starts it again")
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("the hanging tool was answered after %s", d)
	}
	eventuallyDead(t, pid)
	if again := f.pid(t); again == pid {
		t.Error("the next call was served by the stopped process")
	}
	// The call's own timeout wins, as for bash.
	ctx := sandbox.WithToolTimeout(context.Background(), 2*time.Second)
	raw, _ := json.Marshal(map[string]any{"server": "local", "command": []string{f.program}, "tool": "sleep", "arguments": map[string]any{"seconds": 1.5}})
	got, err := f.call.Run(ctx, raw)
	if err != nil || got.Output != "slept" {
		t.Errorf("a 1.5 s tool under a 2 s call timeout: %q, %v", got.Output, err)
	}
}

// A server that exits: the call says so with its exit and standard error,
// and the next call starts it again; one that dies between calls is
// started again by the next, which says so.
func TestMCPStdioExits(t *testing.T) {
	t.Parallel()
	f := newStdioFixture(t, time.Minute)
	pid := f.pid(t)
	res := f.callTool(t, "exit", map[string]any{"code": 5})
	wantError(t, res, "the MCP server local exited with code 5; its standard error ends:\nmcpstdio: exiting with code 5 on request. The next call starts it again")
	wantText(t, f.callTool(t, "echo", map[string]any{"text": "back"}), "back")
	pid2 := f.pid(t)
	if pid2 == pid {
		t.Fatal("the exited server still answers")
	}
	if err := unix.Kill(pid2, unix.SIGKILL); err != nil {
		t.Fatal(err)
	}
	eventuallyDead(t, pid2)
	time.Sleep(100 * time.Millisecond) // reaped by sandboxd
	res = f.callTool(t, "echo", map[string]any{"text": "again"})
	if res.IsError || !strings.HasSuffix(res.Output, "\nagain") || !strings.Contains(res.Output, "[the MCP server local was killed by signal 9 since the last call; it was started again for this one]") {
		t.Fatalf("after the server died: %q, want the note and the answer", res.Output)
	}
	// One that cannot start says why, with its standard error.
	res = run(t, f.list, map[string]any{"server": "broken", "command": []string{f.program, "-crash"}})
	wantError(t, res, "the MCP server broken ("+f.program+" -crash) could not be started: it exited with code 3 before it answered initialize; its standard error ends:\nmcpstdio: crashing on purpose")
	res = run(t, f.list, map[string]any{"server": "missing", "command": []string{"no-such-program-here"}})
	wantError(t, res, "could not be started")
	// Close stops every server.
	pid3 := f.pid(t)
	f.mcp.Close()
	eventuallyDead(t, pid3)
	wantError(t, f.callTool(t, "echo", map[string]any{"text": "x"}), "the sandbox is stopping")
}

// A message larger than sandboxd reads stops the server, saying why.
func TestMCPStdioLargeMessage(t *testing.T) {
	t.Parallel()
	f := newStdioFixture(t, time.Minute)
	big := filepath.Join(f.work, "big.txt")
	write(t, big, strings.Repeat("x", 9<<20))
	wantError(t, f.callTool(t, "read", map[string]any{"path": big}), "wrote a message larger than 8 MiB, the most sandboxd reads, so it was stopped")
	wantText(t, f.callTool(t, "echo", map[string]any{"text": "fine"}), "fine")
	// A result under the message bound but past the result's is cut.
	write(t, big, strings.Repeat("y", 2<<20))
	res := f.callTool(t, "read", map[string]any{"path": big})
	if res.IsError || len(res.Output) > wire.MaxMCPResult+100 || !strings.HasSuffix(res.Output, "[result cut at 1 MiB: it was longer]") {
		t.Fatalf("a 2 MiB result: %d bytes ending %q", len(res.Output), res.Output[max(0, len(res.Output)-60):])
	}
}

// A tool the server no longer has is an error the runner recognises.
func TestMCPStdioToolGone(t *testing.T) {
	t.Parallel()
	f := newStdioFixture(t, time.Minute)
	wantText(t, f.callTool(t, "drop", map[string]any{"name": "echo"}), "dropped echo")
	res := f.callTool(t, "echo", map[string]any{"text": "x"})
	if !res.IsError || !strings.HasPrefix(res.Output, wire.MCPUnknownTool) {
		t.Fatalf("a dropped tool: %q, want an error starting %q", res.Output, wire.MCPUnknownTool)
	}
	// Another command for the same server starts it anew.
	other := filepath.Join(f.data, "mcpstdio2")
	if err := os.Link(f.program, other); err != nil {
		t.Fatal(err)
	}
	wantText(t, f.callTool(t, "echo", map[string]any{"text": "new"}, other), "new")
}
