package server_test

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentsfleet/agentsfleet/shared/sandbox/server"
	"github.com/agentsfleet/agentsfleet/shared/sandbox/wire"
	"github.com/agentsfleet/agentsfleet/shared/tool"
)

// timed is c.result, and how long it took.
func timed(t *testing.T, c *client, name, body string, header ...string) (tool.Result, time.Duration) {
	t.Helper()
	start := time.Now()
	res := c.result(t, name, body, header...)
	return res, time.Since(start)
}

// A pooled sandboxd starts before it knows the fleet, with sandboxd's
// default tool timeout (120 s); the fleet's comes with each call in
// wire.ToolTimeoutHeader and wins. Every bound on time here is far from
// both the call's timeout (1 s) and what the call would take without it.
func TestCallToolTimeoutWinsOverAShorterOne(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	fifo := filepath.Join(f.work, "never-written")
	if err := syscall.Mkfifo(fifo, 0o666); err != nil {
		t.Fatal(err)
	}
	os.Chmod(fifo, 0o666) // past the umask, for the uid commands run as
	_, c := newAPI(t, f, server.Options{Tools: server.Tools(server.Config{Roots: f.roots})})
	oneSecond := []string{wire.ToolTimeoutHeader, "1"}

	t.Run("bash", func(t *testing.T) {
		t.Parallel()
		res, took := timed(t, c, "bash", `{"command":"sleep 30"}`, oneSecond...)
		if want := "[timed out after 1 second: the command and every process it started were killed]"; res.Output != want || !res.IsError {
			t.Fatalf("bash sleep 30 = %q (is_error=%v), want %q", res.Output, res.IsError, want)
		}
		if took > 15*time.Second {
			t.Fatalf("bash sleep 30 with a 1 s tool timeout took %v", took)
		}
	})
	t.Run("grep", func(t *testing.T) {
		t.Parallel()
		// A FIFO no one writes: the search waits on it until it is killed.
		res, took := timed(t, c, "grep", `{"pattern":"x","path":"never-written"}`, oneSecond...)
		if want := "grep: grep stopped after the tool timeout of 1 second"; !strings.HasPrefix(res.Output, want) || !res.IsError {
			t.Fatalf("grep of a FIFO = %q (is_error=%v), want %q", res.Output, res.IsError, want)
		}
		if took > 15*time.Second {
			t.Fatalf("grep with a 1 s tool timeout took %v", took)
		}
	})
	t.Run("exec_command and write_stdin", func(t *testing.T) {
		t.Parallel()
		// Each call answers at the tool timeout, not at the 20 s it asks
		// to wait; the session's process goes on.
		res, took := timed(t, c, "exec_command", `{"cmd":"sleep 30","yield_time_ms":20000}`, oneSecond...)
		m := sessionIDLine.FindStringSubmatch(res.Output)
		if res.IsError || m == nil {
			t.Fatalf("exec_command sleep 30 = %q, want a running session", res.Output)
		}
		if took > 10*time.Second {
			t.Fatalf("exec_command asking to wait 20 s with a 1 s tool timeout took %v", took)
		}
		res, took = timed(t, c, "write_stdin", `{"session_id":`+m[1]+`,"chars":"x\n","yield_time_ms":20000}`, oneSecond...)
		if res.IsError || !strings.Contains(res.Output, "Process running with session ID "+m[1]) {
			t.Fatalf("write_stdin = %q, want the session still running", res.Output)
		}
		if took > 10*time.Second {
			t.Fatalf("write_stdin asking to wait 20 s with a 1 s tool timeout took %v", took)
		}
	})
}

// The call's tool timeout wins over sandboxd's own when it is longer too;
// without one, a call has sandboxd's own.
func TestCallToolTimeoutWinsOverALongerOne(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	_, c := newAPI(t, f, server.Options{Tools: server.Tools(server.Config{Roots: f.roots, Timeout: time.Second})})
	body := `{"command":"sleep 2; echo done"}`
	if res := c.result(t, "bash", body, wire.ToolTimeoutHeader, "30"); res.Output != "done\n[exit code 0]" || res.IsError {
		t.Fatalf("bash sleep 2 with a 30 s tool timeout on a 1 s sandboxd = %q, want it done", res.Output)
	}
	if res := c.result(t, "bash", body); !strings.Contains(res.Output, "[timed out after 1 second:") {
		t.Fatalf("bash sleep 2 without a tool timeout on a 1 s sandboxd = %q, want it timed out", res.Output)
	}
}

func TestCallToolTimeoutRefusals(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	_, c := newAPI(t, f, server.Options{})
	ran := `{"command":"touch ran"}`
	for _, v := range []string{"", "0", "3601", "-1", "1.5", "10s", "2m", "1, 2"} {
		status, out := c.call(t, "bash", ran, wire.ToolTimeoutHeader, v)
		msg, _ := out["error"].(string)
		if status != http.StatusBadRequest || len(out) != 1 || !strings.Contains(msg, wire.ToolTimeoutHeader) || !strings.Contains(msg, "whole seconds, 1 to 3600") {
			t.Errorf("%s: %q = %d %v, want 400 naming the header and its rule", wire.ToolTimeoutHeader, v, status, out)
		}
	}
	// Given twice.
	req, _ := http.NewRequest(http.MethodPost, c.base+wire.ToolPath("bash"), strings.NewReader(ran))
	req.Header.Set(wire.AuthorizationHeader, wire.Bearer(testToken))
	req.Header.Add(wire.ToolTimeoutHeader, "5")
	req.Header.Add(wire.ToolTimeoutHeader, "6")
	resp, err := c.http.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest {
		t.Errorf("%s given twice = %d, want 400", wire.ToolTimeoutHeader, resp.StatusCode)
	}
	if _, err := os.Stat(filepath.Join(f.work, "ran")); err == nil {
		t.Error("a call with a bad tool timeout ran its tool")
	}

	// The tool timeout is part of an idempotent call: the same key and
	// arguments with another one is another call.
	c.result(t, "bash", `{"command":"true"}`, wire.IdempotencyHeader, "k", wire.ToolTimeoutHeader, "5")
	if res := c.result(t, "bash", `{"command":"true"}`, wire.IdempotencyHeader, "k", wire.ToolTimeoutHeader, "5"); res.Output != "[exit code 0]" {
		t.Errorf("replay = %q", res.Output)
	}
	for _, other := range [][]string{{wire.ToolTimeoutHeader, "6"}, nil} {
		status, out := c.call(t, "bash", `{"command":"true"}`, append([]string{wire.IdempotencyHeader, "k"}, other...)...)
		if status != http.StatusUnprocessableEntity {
			t.Errorf("key k again with tool timeout %v = %d %v, want 422", other, status, out)
		}
	}
}
