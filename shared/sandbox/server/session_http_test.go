package server_test

import (
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/agentsfleet/agentsfleet/shared/sandbox/server"
)

var sessionIDLine = regexp.MustCompile(`Process running with session ID (\d+)`)

// exec_command sessions live in sandboxd, not in the HTTP connection: a
// runner that restarts reaches the same process with a new client.
func TestSessionSurvivesANewHTTPClient(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	_, first := newAPI(t, f, server.Options{})

	status, body := first.call(t, "exec_command", `{"cmd":"cat","yield_time_ms":250}`)
	out, _ := body["output"].(string)
	m := sessionIDLine.FindStringSubmatch(out)
	if status != http.StatusOK || m == nil {
		t.Fatalf("exec_command cat = %d %q, want a running session", status, out)
	}
	first.http.CloseIdleConnections()

	second := &client{base: first.base, token: first.token, http: &http.Client{Transport: &http.Transport{}}}
	defer second.http.CloseIdleConnections()
	status, body = second.call(t, "write_stdin", `{"session_id":`+m[1]+`,"chars":"ping from a new client\n","yield_time_ms":1000}`)
	out, _ = body["output"].(string)
	if status != http.StatusOK || !strings.Contains(out, "ping from a new client") {
		t.Fatalf("write_stdin through a new client = %d %q, want the echoed line", status, out)
	}

	// Ctrl-D closes cat's stdin: the same session ends with exit code 0.
	_, body = second.call(t, "write_stdin", `{"session_id":`+m[1]+`,"chars":"\u0004","yield_time_ms":2000}`)
	if out, _ = body["output"].(string); !strings.Contains(out, "Process exited with code 0") {
		t.Fatalf("after Ctrl-D: %q, want the exit code", out)
	}
}
