//go:build linux

package client_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentsfleet/agentsfleet/shared/sandbox/client"
	"github.com/agentsfleet/agentsfleet/shared/sandbox/wire"
)

var (
	sessionLine = regexp.MustCompile(`Process running with session ID (\d+)`)
	pidLine     = regexp.MustCompile(`pid=(\d+)`)
)

// startCat starts `cat` through exec_command with ctx's agent and returns
// its session id and pid.
func startCat(t *testing.T, ctx context.Context, c *client.Client) (id string, pid int) {
	t.Helper()
	res, err := c.Call(ctx, "exec_command", json.RawMessage(`{"cmd":"echo pid=$$; exec cat","yield_time_ms":500}`), "")
	m, p := sessionLine.FindStringSubmatch(res.Output), pidLine.FindStringSubmatch(res.Output)
	out := res.Output
	// A loaded machine may start the shell after the first yield: poll the
	// session (a bounded number of times) for its pid rather than failing.
	for i := 0; err == nil && !res.IsError && m != nil && p == nil && i < 10; i++ {
		more := writeTo(t, ctx, c, m[1], "")
		out += more
		p = pidLine.FindStringSubmatch(out)
	}
	if err != nil || res.IsError || m == nil || p == nil {
		t.Fatalf("exec_command cat: %v %q, want a running session that printed its pid", err, out)
	}
	pid, _ = strconv.Atoi(p[1])
	return m[1], pid
}

func writeTo(t *testing.T, ctx context.Context, c *client.Client, id, chars string) string {
	t.Helper()
	args := fmt.Sprintf(`{"session_id":%s,"chars":%q,"yield_time_ms":1000}`, id, chars)
	res, err := c.Call(ctx, "write_stdin", json.RawMessage(args), "")
	if err != nil {
		t.Fatalf("write_stdin %s: %v", id, err)
	}
	return res.Output
}

// running reports whether process pid exists and is not a zombie.
func running(pid int) bool {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	i := strings.LastIndexByte(string(stat), ')')
	return i < 0 || i+2 >= len(stat) || stat[i+2] != 'Z'
}

func TestCloseSessionsEndToEnd(t *testing.T) {
	t.Parallel()
	sd := newSandboxd(t)
	c := newClient(t, client.Config{URL: sd.url})
	bg := context.Background()
	asA, asB := client.WithAgent(bg, "child_01JXA"), client.WithAgent(bg, "child_01JXB")

	a1, a1pid := startCat(t, asA, c)
	a2, a2pid := startCat(t, asA, c)
	b1, b1pid := startCat(t, asB, c)
	top, toppid := startCat(t, client.WithAgent(bg, ""), c) // "" is the top-level agent

	n, err := c.CloseSessions(bg, "child_01JXA")
	if err != nil || n != 2 {
		t.Fatalf("CloseSessions(child_01JXA) = %d, %v; want 2", n, err)
	}
	if running(a1pid) || running(a2pid) {
		t.Fatalf("child_01JXA's cats still run after CloseSessions: %v %v", running(a1pid), running(a2pid))
	}
	if !running(b1pid) || !running(toppid) {
		t.Fatal("CloseSessions(child_01JXA) killed another agent's process")
	}
	for _, id := range []string{a1, a2} {
		out := writeTo(t, asB, c, id, "x")
		if !strings.Contains(out, "Unknown session ID "+id+" (it was closed, and its process group killed, because its agent child_01JXA was stopped)") {
			t.Fatalf("write_stdin to closed session %s: %q", id, out)
		}
	}
	if out := writeTo(t, asA, c, b1, "a writes to b\n"); !strings.Contains(out, "a writes to b") {
		t.Fatalf("B's session after A's close: %q", out)
	}
	if out := writeTo(t, bg, c, top, "top\n"); !strings.Contains(out, "top") {
		t.Fatalf("the top-level session after A's close: %q", out)
	}
	if n, err := c.CloseSessions(bg, "child_01JXA"); err != nil || n != 0 {
		t.Fatalf("second CloseSessions = %d, %v; want 0", n, err)
	}
	if n, err := c.CloseSessions(bg, "child_01JXB"); err != nil || n != 1 || running(b1pid) {
		t.Fatalf("CloseSessions(child_01JXB) = %d, %v (cat running: %v); want 1 and the cat gone", n, err, running(b1pid))
	}
	if !running(toppid) {
		t.Fatal("the top-level session died with the children's")
	}
}

// Bad agents are refused before anything is sent; a wrong token is 401.
func TestCloseSessionsRefusals(t *testing.T) {
	t.Parallel()
	sd := newSandboxd(t)
	c := newClient(t, client.Config{URL: sd.url})
	bg := context.Background()
	for _, agent := range []string{"", "child x", "child\n", strings.Repeat("c", wire.MaxAgent+1), "../x"} {
		_, err := c.CloseSessions(bg, agent)
		wantError(t, err, client.ErrBadRequest, 0, "was not called", "close an agent's sessions")
		_, err = c.Call(client.WithAgent(bg, agent), "bash", json.RawMessage(`{"command":"true"}`), "")
		if agent == "" {
			if err != nil {
				t.Fatalf("Call with the top-level agent: %v", err)
			}
			continue
		}
		wantError(t, err, client.ErrBadRequest, 0, "was not called", "WithAgent: the agent id")
	}
	if got := sd.requests.Load(); got != 1 {
		t.Fatalf("%d requests reached sandboxd, want only the good call", got)
	}
	wrong := newClient(t, client.Config{URL: sd.url, Token: token + "-wrong"})
	_, err := wrong.CloseSessions(bg, "child_a")
	wantError(t, err, client.ErrUnauthorized, http.StatusUnauthorized, "close the sessions of agent child_a", "missing or wrong bearer token")
}

// An answer that is not sandboxd's, and a sandboxd that takes too long.
func TestCloseSessionsForeignAnswers(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name   string
		status int
		body   string
	}{
		{"no count", 200, `{}`},
		{"negative count", 200, `{"closed":-1}`},
		{"not JSON", 200, `<html>`},
		{"an older sandboxd", 404, `{"error":"no such endpoint"}`},
		{"500 without a body", 500, ``},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", wire.ContentType)
				w.WriteHeader(tt.status)
				fmt.Fprint(w, tt.body)
			}))
			t.Cleanup(ts.Close)
			n, err := newClient(t, client.Config{URL: ts.URL}).CloseSessions(context.Background(), "child_a")
			wantError(t, err, client.ErrUnavailable, tt.status, "gave an answer that is not sandboxd's")
			if n != 0 {
				t.Fatalf("n = %d with an error, want 0", n)
			}
		})
	}
	release := make(chan struct{})
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-release:
		}
	}))
	t.Cleanup(ts.Close)
	t.Cleanup(func() { close(release) }) // before ts.Close: cleanups run last first
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	_, err := newClient(t, client.Config{URL: ts.URL}).CloseSessions(ctx, "child_a")
	if err == nil || !strings.Contains(err.Error(), "was not waited for") {
		t.Fatalf("a caller's deadline: %v", err)
	}
}

// Call sends the agent header exactly when ctx names an agent, and with
// the body and key untouched.
func TestCallSendsTheAgent(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var got [][]string
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		got = append(got, r.Header.Values(wire.AgentHeader))
		mu.Unlock()
		w.Header().Set("Content-Type", wire.ContentType)
		fmt.Fprint(w, `{"output":"ok","is_error":false}`)
	}))
	t.Cleanup(ts.Close)
	c := newClient(t, client.Config{URL: ts.URL})
	bg := context.Background()
	inner := client.WithAgent(client.WithAgent(bg, "child_outer"), "child_inner")
	for _, ctx := range []context.Context{bg, client.WithAgent(bg, "child_a"), client.WithAgent(bg, ""), inner} {
		if _, err := c.Call(ctx, "bash", nil, "k"); err != nil {
			t.Fatal(err)
		}
	}
	want := [][]string{nil, {"child_a"}, nil, {"child_inner"}}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("agent headers sent %q, want %q", got, want)
	}
}

// Two agents using one Idempotency-Key run two calls; each one's retry is
// a replay of its own.
func TestIdempotencyKeyPerAgent(t *testing.T) {
	t.Parallel()
	sd := newSandboxd(t)
	c := newClient(t, client.Config{URL: sd.url})
	bg := context.Background()
	args := json.RawMessage(`{"command":"echo run >> log.txt; wc -l < log.txt"}`)
	for _, tt := range []struct{ agent, want string }{{"child_a", "1"}, {"child_b", "2"}, {"child_a", "1"}, {"child_b", "2"}} {
		res, err := c.Call(client.WithAgent(bg, tt.agent), "bash", args, "same-key")
		if err != nil || res.Output != tt.want+"\n[exit code 0]" {
			t.Fatalf("%s: %q, %v; want %s", tt.agent, res.Output, err, tt.want)
		}
	}
}
