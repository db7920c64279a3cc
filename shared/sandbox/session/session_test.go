package session

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentsfleet/agentsfleet/shared/sandbox"
	"github.com/agentsfleet/agentsfleet/shared/sandbox/confine"
	"github.com/agentsfleet/agentsfleet/shared/tool"
)

// newManager returns a Manager over a fresh workdir. When the tests run as
// root the confined children run as nobody, so the folders are opened up.
func newManager(t testing.TB, opts Options) (*Manager, string) {
	t.Helper()
	base := t.TempDir()
	for _, d := range []string{filepath.Dir(base), base} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	work := filepath.Join(base, "work")
	if err := os.Mkdir(work, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(work, 0o777); err != nil {
		t.Fatal(err)
	}
	roots, err := sandbox.New(sandbox.Dirs{Workdir: work})
	if err != nil {
		t.Fatal(err)
	}
	policy := &confine.Policy{Writable: roots.WritablePaths(), ReadOnly: roots.ReadOnlyPaths()}
	m := NewManager(policy, roots, opts)
	t.Cleanup(func() {
		if err := m.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return m, work
}

// result is a parsed exec_command / write_stdin output.
type result struct {
	raw      string
	isError  bool
	exited   bool
	code     int
	id       int
	tokens   int
	output   string
	wallSecs float64
}

var (
	headerRE = regexp.MustCompile(`^Chunk ID: [0-9a-f]{6}\nWall time: (\d+\.\d{4}) seconds\n(?:Process exited with code (-?\d+)|Process running with session ID (\d+))\nOriginal token count: (\d+)\nOutput:\n`)
)

func call(t testing.TB, tool tool.Tool, args map[string]any) result {
	t.Helper()
	raw, _ := json.Marshal(args)
	res, err := tool.Run(context.Background(), raw)
	if err != nil {
		t.Fatalf("%s(%s): error %v", tool.Name(), raw, err)
	}
	r := result{raw: res.Output, isError: res.IsError}
	if res.IsError {
		return r
	}
	m := headerRE.FindStringSubmatch(res.Output)
	if m == nil {
		t.Fatalf("%s(%s): output not in Codex's format:\n%s", tool.Name(), raw, res.Output)
	}
	r.wallSecs, _ = strconv.ParseFloat(m[1], 64)
	if m[2] != "" {
		r.exited = true
		r.code, _ = strconv.Atoi(m[2])
	} else {
		r.id, _ = strconv.Atoi(m[3])
	}
	r.tokens, _ = strconv.Atoi(m[4])
	r.output = res.Output[len(m[0]):]
	return r
}

// pollUntil polls session id until its accumulated output contains want
// (or it exits), for at most 15 s, and returns the last result and all
// output.
func pollUntil(t *testing.T, m *Manager, id int, want string) (result, string) {
	t.Helper()
	var all strings.Builder
	deadline := time.Now().Add(15 * time.Second)
	for {
		r := call(t, m.WriteStdin(), map[string]any{"session_id": id, "chars": ""})
		if r.isError {
			t.Fatalf("poll %d: %s", id, r.raw)
		}
		all.WriteString(r.output)
		if strings.Contains(all.String(), want) || r.exited {
			return r, all.String()
		}
		if time.Now().After(deadline) {
			t.Fatalf("session %d: %q not seen in %q", id, want, all.String())
		}
	}
}

func TestExecCommandExitsWithOutputAndCode(t *testing.T) {
	t.Parallel()
	m, _ := newManager(t, Options{})
	r := call(t, m.ExecCommand(), map[string]any{"cmd": "echo hello; echo oops >&2; exit 3"})
	if !r.exited || r.code != 3 {
		t.Fatalf("got exited=%v code=%d, want exit code 3:\n%s", r.exited, r.code, r.raw)
	}
	if r.output != "hello\noops\n" {
		t.Fatalf("output = %q, want stdout and stderr together", r.output)
	}
	if r.tokens != 3 { // 11 bytes
		t.Fatalf("original token count = %d, want 3", r.tokens)
	}
	if r.wallSecs > 5 {
		t.Fatalf("wall time %.2f s for a command that exits at once", r.wallSecs)
	}
	r = call(t, m.ExecCommand(), map[string]any{"cmd": "kill -TERM $$"})
	if !r.exited || r.code != 128+15 {
		t.Fatalf("killed by SIGTERM: code %d, want 143", r.code)
	}
}

func TestExecCommandEnvironmentAndWorkdir(t *testing.T) {
	t.Parallel()
	m, work := newManager(t, Options{})
	sub := filepath.Join(work, "sub")
	if err := os.Mkdir(sub, 0o777); err != nil {
		t.Fatal(err)
	}
	r := call(t, m.ExecCommand(), map[string]any{"cmd": `echo "$TERM $PAGER $GIT_PAGER $NO_COLOR"; pwd; test -t 0 || echo notty`, "workdir": "sub"})
	if want := "dumb cat cat 1\n" + sub + "\nnotty\n"; r.output != want {
		t.Fatalf("output = %q, want %q", r.output, want)
	}
	for _, bad := range []string{"/root", "../..", "missing"} {
		r := call(t, m.ExecCommand(), map[string]any{"cmd": "true", "workdir": bad})
		if !r.isError || !strings.Contains(r.raw, "workdir") {
			t.Errorf("workdir %q: %v %q, want a workdir error", bad, r.isError, r.raw)
		}
	}
	r = call(t, m.ExecCommand(), map[string]any{"cmd": "true", "shell": "no-such-shell"})
	if !r.isError || !strings.Contains(r.raw, `shell "no-such-shell" not found`) {
		t.Fatalf("unknown shell: %q", r.raw)
	}
	r = call(t, m.ExecCommand(), map[string]any{"cmd": "echo $0", "shell": "sh"})
	if !r.exited || r.output != "/bin/sh\n" && r.output != "/usr/bin/sh\n" {
		t.Fatalf("shell sh: %q", r.raw)
	}
}

func TestCatEchoesThroughWriteStdin(t *testing.T) {
	t.Parallel()
	m, _ := newManager(t, Options{})
	r := call(t, m.ExecCommand(), map[string]any{"cmd": "cat", "yield_time_ms": 250})
	if r.exited || r.id == 0 {
		t.Fatalf("cat: want a running session:\n%s", r.raw)
	}
	w := call(t, m.WriteStdin(), map[string]any{"session_id": r.id, "chars": "hello cat\n"})
	out := w.output
	if !strings.Contains(out, "hello cat") {
		_, out = pollUntil(t, m, r.id, "hello cat")
	}
	if out != "hello cat\n" {
		t.Fatalf("echo = %q, want %q", out, "hello cat\n")
	}
	// Ctrl-D closes the pipe: cat ends.
	w = call(t, m.WriteStdin(), map[string]any{"session_id": r.id, "chars": "\x04", "yield_time_ms": 5000})
	if !w.exited {
		w, _ = pollUntil(t, m, r.id, "\x00never")
	}
	if !w.exited || w.code != 0 {
		t.Fatalf("after Ctrl-D: %s", w.raw)
	}
}

func TestPythonREPLOverPTY(t *testing.T) {
	t.Parallel()
	if !isExecutable("/usr/bin/python3") {
		t.Skip("no /usr/bin/python3")
	}
	m, _ := newManager(t, Options{})
	r := call(t, m.ExecCommand(), map[string]any{"cmd": "/usr/bin/python3 -q", "tty": true, "yield_time_ms": 500})
	if r.exited {
		t.Fatalf("python exited at once:\n%s", r.raw)
	}
	if !strings.Contains(r.output, ">>> ") {
		pollUntil(t, m, r.id, ">>> ")
	}
	w := call(t, m.WriteStdin(), map[string]any{"session_id": r.id, "chars": "import os, sys; print(6*7, os.isatty(0), os.environ['TERM'])\n"})
	out := w.output
	if !strings.Contains(out, "42 True xterm-256color") {
		_, more := pollUntil(t, m, r.id, "42 True xterm-256color")
		out += more
	}
	if !strings.Contains(out, "42 True xterm-256color") {
		t.Fatalf("REPL output %q", out)
	}
	w = call(t, m.WriteStdin(), map[string]any{"session_id": r.id, "chars": "exit(5)\n", "yield_time_ms": 5000})
	if !w.exited {
		w, _ = pollUntil(t, m, r.id, "\x00never")
	}
	if w.code != 5 {
		t.Fatalf("python exit code %d, want 5:\n%s", w.code, w.raw)
	}
}

func TestLongSleepReturnsSessionThenExitCode(t *testing.T) {
	t.Parallel()
	m, _ := newManager(t, Options{})
	r := call(t, m.ExecCommand(), map[string]any{"cmd": "sleep 1.5; echo done; exit 7", "yield_time_ms": 300})
	if r.exited || r.id < 1000 || r.id > 99999 {
		t.Fatalf("want a running session with a Codex-like id:\n%s", r.raw)
	}
	if r.wallSecs < 0.29 || r.wallSecs > 3 {
		t.Fatalf("wall time %.3f s, want about the 0.3 s yield", r.wallSecs)
	}
	last, out := pollUntil(t, m, r.id, "\x00never")
	if !last.exited || last.code != 7 || out != "done\n" {
		t.Fatalf("final poll: exited=%v code=%d output %q, want code 7 and %q", last.exited, last.code, out, "done\n")
	}
	// Its exit was reported: the id is gone, and the error says why.
	gone := call(t, m.WriteStdin(), map[string]any{"session_id": r.id})
	if !gone.isError || !strings.Contains(gone.raw, fmt.Sprintf("Unknown session ID %d (its process exited with code 7", r.id)) {
		t.Fatalf("poll after exit: %q", gone.raw)
	}
}

func TestEmptyPollReturnsWhenOutputArrives(t *testing.T) {
	t.Parallel()
	m, _ := newManager(t, Options{})
	r := call(t, m.ExecCommand(), map[string]any{"cmd": "sleep 0.5; echo tick; sleep 60", "yield_time_ms": 250})
	began := time.Now()
	w := call(t, m.WriteStdin(), map[string]any{"session_id": r.id})
	if w.output != "tick\n" || w.exited {
		t.Fatalf("poll: %q", w.raw)
	}
	if took := time.Since(began); took > 3*time.Second {
		t.Fatalf("empty poll took %s: it should return once output arrived", took)
	}
	began = time.Now()
	w = call(t, m.WriteStdin(), map[string]any{"session_id": r.id, "chars": "", "yield_time_ms": 300})
	if took := time.Since(began); took < 4900*time.Millisecond || w.output != "" {
		t.Fatalf("silent empty poll returned after %s with %q; want at least 5 s and no output", took, w.output)
	}
}

func TestLeaderExitKillsItsGroup(t *testing.T) {
	t.Parallel()
	m, _ := newManager(t, Options{})
	// The background sleep holds the output pipe; the session still ends
	// with its shell, and the sleep dies with it.
	r := call(t, m.ExecCommand(), map[string]any{"cmd": "sleep 60 & echo started", "yield_time_ms": 10000})
	if !r.exited || r.code != 0 || r.output != "started\n" {
		t.Fatalf("got %s", r.raw)
	}
	if r.wallSecs > 5 {
		t.Fatalf("wall time %.2f s: the background process kept the session open", r.wallSecs)
	}
}

func TestWriteStdinErrors(t *testing.T) {
	t.Parallel()
	m, _ := newManager(t, Options{})
	live := call(t, m.ExecCommand(), map[string]any{"cmd": "sleep 30", "yield_time_ms": 250})
	unknown := call(t, m.WriteStdin(), map[string]any{"session_id": 1, "chars": "x"})
	want := fmt.Sprintf("write_stdin: Unknown session ID 1. Live sessions: %d (running: sleep 30).", live.id)
	if !unknown.isError || unknown.raw != want {
		t.Fatalf("unknown session: %q, want %q", unknown.raw, want)
	}
	// Ctrl-D closed the input; a later write is refused.
	if r := call(t, m.WriteStdin(), map[string]any{"session_id": live.id, "chars": "\x04"}); r.isError {
		t.Fatalf("Ctrl-D: %s", r.raw)
	}
	closed := call(t, m.WriteStdin(), map[string]any{"session_id": live.id, "chars": "more\n"})
	if !closed.isError || !strings.Contains(closed.raw, fmt.Sprintf("the stdin of session %d is closed", live.id)) {
		t.Fatalf("write after Ctrl-D: %q", closed.raw)
	}
	// A process that closed its own stdin.
	self := call(t, m.ExecCommand(), map[string]any{"cmd": "exec 0<&-; sleep 30", "yield_time_ms": 250})
	closed = call(t, m.WriteStdin(), map[string]any{"session_id": self.id, "chars": "hello\n"})
	if !closed.isError || !strings.Contains(closed.raw, "is closed") || !strings.Contains(closed.raw, "Live sessions: ") {
		t.Fatalf("write to a closed stdin: %q", closed.raw)
	}
	for _, bad := range []map[string]any{{}, {"session_id": "abc"}, {"session_id": live.id, "yield_time_ms": -1}, {"session_id": live.id, "nope": 1}} {
		if r := call(t, m.WriteStdin(), bad); !r.isError {
			t.Errorf("write_stdin(%v) = %q, want an error", bad, r.raw)
		}
	}
	// A string id works too (Codex keeps ids as strings internally).
	if r := call(t, m.WriteStdin(), map[string]any{"session_id": strconv.Itoa(live.id), "yield_time_ms": 5000}); r.isError || r.id != live.id {
		t.Fatalf("string session id: %q", r.raw)
	}
}

func TestOutputTruncation(t *testing.T) {
	t.Parallel()
	m, _ := newManager(t, Options{})
	r := call(t, m.ExecCommand(), map[string]any{"cmd": "printf 'START'; head -c 99990 /dev/zero | tr '\\0' a; printf 'END'", "max_output_tokens": 100})
	if !r.exited || r.tokens != 25000 {
		t.Fatalf("original token count %d, want 25000:\n%.300s", r.tokens, r.raw)
	}
	want := "START" + strings.Repeat("a", 195) + "…24900 tokens truncated…" + strings.Repeat("a", 197) + "END"
	if r.output != want {
		t.Fatalf("output = %q…, want the middle cut: %q", r.output[:min(len(r.output), 300)], want)
	}
	r = call(t, m.ExecCommand(), map[string]any{"cmd": "printf 'héllo wörld'", "max_output_tokens": 1})
	if r.output != "h…3 tokens truncated…ld" {
		t.Fatalf("multibyte cut: %q", r.output)
	}
}

func TestSessionSurvivesANewClient(t *testing.T) {
	t.Parallel()
	m, _ := newManager(t, Options{})
	// The first client starts a session and goes away (its context ends).
	ctx, cancel := context.WithCancel(context.Background())
	args, _ := json.Marshal(map[string]any{"cmd": "cat", "yield_time_ms": 250})
	res, err := m.ExecCommand().Run(ctx, args)
	cancel()
	if err != nil || res.IsError {
		t.Fatalf("exec_command: %v %q", err, res.Output)
	}
	id := headerRE.FindStringSubmatch(res.Output)[3]
	// A second client, with tools of its own, drives the same process.
	n, _ := strconv.Atoi(id)
	w := call(t, m.WriteStdin(), map[string]any{"session_id": n, "chars": "still here\n"})
	out := w.output
	if !strings.Contains(out, "still here") {
		_, more := pollUntil(t, m, n, "still here")
		out += more
	}
	if out != "still here\n" {
		t.Fatalf("second client saw %q", out)
	}
}

func TestYieldIsClamped(t *testing.T) {
	t.Parallel()
	m, _ := newManager(t, Options{})
	r := call(t, m.ExecCommand(), map[string]any{"cmd": "sleep 5", "yield_time_ms": 1})
	if r.exited || r.wallSecs < 0.25 || r.wallSecs > 2 {
		t.Fatalf("yield 1 ms: wall %.3f s, want the 250 ms minimum", r.wallSecs)
	}
	for _, bad := range []map[string]any{{"cmd": ""}, {"cmd": "true", "yield_time_ms": -5}, {"cmd": "true", "max_output_tokens": -1}, {"cmd": "true", "sandbox_permissions": "require_escalated"}} {
		if r := call(t, m.ExecCommand(), bad); !r.isError {
			t.Errorf("exec_command(%v) = %q, want an error", bad, r.raw)
		}
	}
}

// The tool timeout bounds a call's wait, whatever yield_time_ms asks; the
// call's own (sandbox.WithToolTimeout) wins over Options.ToolTimeout.
func TestToolTimeoutBoundsTheWait(t *testing.T) {
	t.Parallel()
	m, _ := newManager(t, Options{ToolTimeout: time.Second})
	r := call(t, m.ExecCommand(), map[string]any{"cmd": "sleep 30", "yield_time_ms": 20000})
	if r.exited || r.id == 0 || r.wallSecs > 10 {
		t.Fatalf("exec_command sleep 30 with a 1 s tool timeout: %q, want a running session within about 1 s", r.raw)
	}
	// An empty poll waits at least 5 s, but not past the tool timeout.
	r = call(t, m.WriteStdin(), map[string]any{"session_id": r.id, "chars": ""})
	if r.exited || r.wallSecs > 4 {
		t.Fatalf("empty poll with a 1 s tool timeout: %q, want the session running after about 1 s", r.raw)
	}
	raw, _ := json.Marshal(map[string]any{"cmd": "sleep 3; echo done", "yield_time_ms": 20000})
	res, err := m.ExecCommand().Run(sandbox.WithToolTimeout(context.Background(), 10*time.Second), raw)
	if err != nil || !strings.Contains(res.Output, "Process exited with code 0") || !strings.HasSuffix(res.Output, "done\n") {
		t.Fatalf("exec_command sleep 3 with the call's tool timeout of 10 s = %q, %v; want it done", res.Output, err)
	}
}

// groupGone reports whether process group pgid has no member left.
func groupGone(pgid int) bool {
	return errors.Is(syscall.Kill(-pgid, 0), syscall.ESRCH)
}

func waitGone(t *testing.T, pgid int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !groupGone(pgid) {
		if time.Now().After(deadline) {
			t.Fatalf("process group %d still alive", pgid)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestPruning starts 64 sessions of `sleep 60` and a 65th through
// exec_command, and checks which one is pruned and that its group dies.
func TestPruning(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		// exitedAt lists sessions (by start order, 0 = oldest) whose
		// process ends at once.
		exitedAt []int
		// touch lists sessions used again (write_stdin) after all started.
		touch []int
		want  int // the index of the session pruned
	}{
		{name: "least recently used live session", want: 0},
		{name: "recently used sessions are skipped", touch: []int{0, 1}, want: 2},
		{name: "an exited session goes first", exitedAt: []int{40}, want: 40},
		{name: "but not one of the 8 most recently used", exitedAt: []int{60}, want: 0},
	}
	// One at a time: 4×65 processes of one uid would pass RLIMIT_NPROC.
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, _ := newManager(t, Options{})
			var all []*session
			for i := range sandbox.MaxSessions {
				cmd := "exec sleep 60"
				if slicesContains(tt.exitedAt, i) {
					cmd = "exit 0"
				}
				s, err := m.launch(spec{shell: "/bin/sh", args: []string{"-c", cmd}, dir: m.roots.Workdir(), tty: false, command: cmd})
				if err != nil {
					t.Fatal(err)
				}
				m.keep(s)
				m.mu.Lock()
				s.lastUsed = time.Unix(int64(1000+i), 0) // a strict order
				m.mu.Unlock()
				all = append(all, s)
			}
			for _, i := range tt.exitedAt {
				<-all[i].exited
			}
			for k, i := range tt.touch {
				m.mu.Lock()
				all[i].lastUsed = time.Unix(int64(5000+k), 0)
				m.mu.Unlock()
			}
			r := call(t, m.ExecCommand(), map[string]any{"cmd": "exec sleep 60", "yield_time_ms": 250})
			if r.exited {
				t.Fatalf("65th session exited: %s", r.raw)
			}
			pruned := all[tt.want]
			for i, s := range all {
				_, found := m.lookup(s.id)
				if live := found == ""; live == (i == tt.want) {
					t.Fatalf("session %d (index %d) live=%v; want only index %d pruned", s.id, i, live, tt.want)
				}
			}
			if _, why := m.lookup(pruned.id); !strings.Contains(why, "to make room: at most 64 sessions are kept") {
				t.Fatalf("pruned session's error: %q", why)
			}
			waitGone(t, pruned.cmd.Process.Pid)
			if n := m.visibleCount(); n != sandbox.MaxSessions {
				t.Fatalf("%d sessions kept, want %d", n, sandbox.MaxSessions)
			}
			// Close kills every group.
			if err := m.Close(); err != nil {
				t.Fatal(err)
			}
			for _, s := range all {
				waitGone(t, s.cmd.Process.Pid)
			}
		})
	}
}

func slicesContains(s []int, v int) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

func TestCloseKillsGrandchildren(t *testing.T) {
	t.Parallel()
	m, _ := newManager(t, Options{})
	r := call(t, m.ExecCommand(), map[string]any{"cmd": "sleep 60 & sleep 60", "yield_time_ms": 250})
	s, _ := m.lookup(r.id)
	pgid := s.cmd.Process.Pid
	if groupGone(pgid) {
		t.Fatal("group not running")
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	waitGone(t, pgid)
	args, _ := json.Marshal(map[string]any{"cmd": "true"})
	if _, err := m.ExecCommand().Run(context.Background(), args); !errors.Is(err, errClosed) {
		t.Fatalf("exec_command after Close: %v, want errClosed", err)
	}
}

func TestMaxLifetimeKillsTheGroup(t *testing.T) {
	t.Parallel()
	m, _ := newManager(t, Options{MaxLifetime: 300 * time.Millisecond})
	r := call(t, m.ExecCommand(), map[string]any{"cmd": "sleep 60", "yield_time_ms": 5000})
	if !r.exited || r.code != 128+9 {
		t.Fatalf("got %s, want the group killed (code 137) after 300 ms", r.raw)
	}
}

func TestOutputBuffer(t *testing.T) {
	t.Parallel()
	b := newOutputBuffer(16)
	_, _ = b.Write([]byte("0123456789"))
	_, _ = b.Write([]byte(strings.Repeat("x", 80) + "abcdefgh"))
	out, total := b.drain()
	if want := "01234567\n[… 82 bytes dropped here: more output arrived between calls than the session keeps (16 bytes) …]\nabcdefgh"; string(out) != want || total != 98 {
		t.Fatalf("drain = %q, %d; want %q, 98", out, total, want)
	}
	// A character split across reads is held back until complete.
	_, _ = b.Write([]byte("é")[:1])
	if out, _ := b.drain(); len(out) != 0 {
		t.Fatalf("half a character drained: %q", out)
	}
	_, _ = b.Write([]byte("é")[1:])
	if out, total := b.drain(); string(out) != "é" || total != 2 {
		t.Fatalf("drain = %q, %d; want é, 2", out, total)
	}
}
