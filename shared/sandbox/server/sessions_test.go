package server_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentsfleet/agentsfleet/shared/sandbox/server"
	"github.com/agentsfleet/agentsfleet/shared/sandbox/wire"
	"github.com/agentsfleet/agentsfleet/shared/tool"
)

// closeSessions posts body to wire.SessionsClosePath and returns the
// status and decoded answer.
func (c *client) closeSessions(t *testing.T, body string) (int, map[string]any) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, c.base+wire.SessionsClosePath, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
		t.Fatalf("Content-Type = %q, want application/json", ct)
	}
	var out map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		t.Fatalf("decode the answer: %v", err)
	}
	return resp.StatusCode, out
}

var leaderPID = regexp.MustCompile(`pid=(\d+)`)

// startSession runs cmd through exec_command as agent ("" sends no
// header) and returns the session id and the pid cmd printed as pid=N.
func startSession(t *testing.T, c *client, agent, cmd string, header ...string) (id string, pid int) {
	t.Helper()
	if agent != "" {
		header = append(header, wire.AgentHeader, agent)
	}
	body, _ := json.Marshal(map[string]any{"cmd": "echo pid=$$; " + cmd, "yield_time_ms": 500})
	res := c.result(t, "exec_command", string(body), header...)
	m, p := sessionIDLine.FindStringSubmatch(res.Output), leaderPID.FindStringSubmatch(res.Output)
	if res.IsError || m == nil || p == nil {
		t.Fatalf("exec_command %q as %q = %q, want a running session that printed its pid", cmd, agent, res.Output)
	}
	pid, _ = strconv.Atoi(p[1])
	return m[1], pid
}

// writeStdin writes chars to session id as agent and returns the result.
func writeStdin(t *testing.T, c *client, agent, id, chars string) tool.Result {
	t.Helper()
	body := fmt.Sprintf(`{"session_id":%s,"chars":%q,"yield_time_ms":1000}`, id, chars)
	return c.result(t, "write_stdin", body, wire.AgentHeader, agent)
}

func TestSessionsCloseClosesOneAgentsSessions(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	_, c := newAPI(t, f, server.Options{})
	const a, b = "child_01JXAAAAAAAAAAAAAAAAAAAAAA", "child_01JXBBBBBBBBBBBBBBBBBBBBBB"
	a1, a1pid := startSession(t, c, a, "exec sleep 60")
	a2, a2pid := startSession(t, c, a, "exec cat")
	b1, b1pid := startSession(t, c, b, "exec cat")
	top, toppid := startSession(t, c, "", "exec cat")

	status, out := c.closeSessions(t, `{"agent":"`+a+`"}`)
	if status != http.StatusOK || out["closed"] != 2.0 || len(out) != 1 {
		t.Fatalf("close %s = %d %v, want 200 {\"closed\": 2}", a, status, out)
	}
	// The answer came after the leaders were reaped.
	for _, pid := range []int{a1pid, a2pid} {
		if alive(pid) {
			t.Errorf("process %d of agent %s still alive after the close", pid, a)
		}
	}
	for _, pid := range []int{b1pid, toppid} {
		if !alive(pid) {
			t.Fatalf("process %d of another agent died", pid)
		}
	}
	for _, id := range []string{a1, a2} {
		res := writeStdin(t, c, b, id, "x")
		want := "Unknown session ID " + id + " (it was closed, and its process group killed, because its agent " + a + " was stopped)"
		if !res.IsError || !strings.Contains(res.Output, want) {
			t.Fatalf("write_stdin to closed session %s = %q, want %q", id, res.Output, want)
		}
	}
	// B's session and the top-level one still answer, to any agent.
	for _, tt := range []struct{ caller, id string }{{b, b1}, {"", top}, {a, b1}, {b, top}} {
		res := writeStdin(t, c, tt.caller, tt.id, "hello from "+tt.caller+"\n")
		if res.IsError || !strings.Contains(res.Output, "hello from "+tt.caller) {
			t.Fatalf("write_stdin %s as %q = %q, want the echo", tt.id, tt.caller, res.Output)
		}
	}
	// Again: nothing left of A's.
	if status, out := c.closeSessions(t, `{"agent":"`+a+`"}`); status != http.StatusOK || out["closed"] != 0.0 {
		t.Fatalf("second close = %d %v, want 0 closed", status, out)
	}
}

func TestSessionsCloseRefusals(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	_, c := newAPI(t, f, server.Options{})
	// A session that no refused request may close.
	id, pid := startSession(t, c, "child_x", "exec cat")

	tests := []struct {
		name   string
		c      *client
		body   string
		status int
		errMsg string
	}{
		{"no token", &client{base: c.base, http: c.http}, `{"agent":"child_x"}`, 401, "missing or wrong bearer token"},
		{"wrong token", &client{base: c.base, token: testToken + "x", http: c.http}, `{"agent":"child_x"}`, 401, "missing or wrong bearer token"},
		{"empty body", c, ``, 400, `the body must be a JSON object {"agent": "…"}`},
		{"array", c, `["child_x"]`, 400, "the body must be a JSON object"},
		{"string", c, `"child_x"`, 400, "the body must be a JSON object"},
		{"broken JSON", c, `{"agent":"child_x"`, 400, "the body must be a JSON object"},
		{"two objects", c, `{"agent":"child_x"} {}`, 400, "the body must be a JSON object"},
		{"no agent", c, `{}`, 400, "the body names no agent"},
		{"unknown field", c, `{"agent":"child_x","all":true}`, 400, `unknown field "all"`},
		{"misspelt field", c, `{"Agent":"child_x"}`, 400, `unknown field "Agent"`},
		{"empty agent", c, `{"agent":""}`, 400, `"agent" is empty`},
		{"null agent", c, `{"agent":null}`, 400, `"agent" is empty`},
		{"number agent", c, `{"agent":1}`, 400, `"agent" must be a string`},
		{"list of agents", c, `{"agent":["child_x"]}`, 400, `"agent" must be a string`},
		{"agent with a space", c, `{"agent":"child x"}`, 400, `byte 5 is ' '`},
		{"agent with a slash", c, `{"agent":"child_x/.."}`, 400, `byte 7 is '/'`},
		{"long agent", c, `{"agent":"` + strings.Repeat("x", wire.MaxAgent+1) + `"}`, 400, "more than 100"},
		{"large body", c, `{"agent":"child_x","pad":"` + strings.Repeat("x", 8<<10) + `"}`, 400, "the body is larger than 4096 bytes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status, out := tt.c.closeSessions(t, tt.body)
			msg, _ := out["error"].(string)
			if status != tt.status || !strings.Contains(msg, tt.errMsg) || len(out) != 1 {
				t.Fatalf("got %d %v, want %d with error %q", status, out, tt.status, tt.errMsg)
			}
		})
	}
	// Only POST closes.
	if got := get(t, c.base+wire.SessionsClosePath); got != http.StatusNotFound {
		t.Fatalf("GET %s = %d, want 404", wire.SessionsClosePath, got)
	}
	if !alive(pid) {
		t.Fatal("a refused close killed the session")
	}
	if res := writeStdin(t, c, "", id, "still\n"); res.IsError || !strings.Contains(res.Output, "still") {
		t.Fatalf("session after the refusals: %q", res.Output)
	}
}

func TestToolCallAgentHeader(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	_, c := newAPI(t, f, server.Options{})
	for _, tt := range []struct {
		name   string
		header []string
		errMsg string
	}{
		{"space", []string{wire.AgentHeader, "child x"}, "the X-Agentsfleet-Agent header: the agent id may hold only"},
		{"path", []string{wire.AgentHeader, "../child"}, "byte 0 is '.'"},
		{"too long", []string{wire.AgentHeader, strings.Repeat("c", wire.MaxAgent+1)}, "more than 100"},
		{"non-ASCII", []string{wire.AgentHeader, "chïld"}, "the X-Agentsfleet-Agent header"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			status, out := c.call(t, "bash", `{"command":"echo ran >> ran.txt"}`, tt.header...)
			msg, _ := out["error"].(string)
			if status != http.StatusBadRequest || !strings.Contains(msg, tt.errMsg) {
				t.Fatalf("got %d %v, want 400 with %q", status, out, tt.errMsg)
			}
		})
	}
	// The header given twice names no one agent.
	req, _ := http.NewRequest(http.MethodPost, c.base+wire.ToolPath("bash"), strings.NewReader(`{"command":"echo ran >> ran.txt"}`))
	req.Header.Set("Authorization", "Bearer "+testToken)
	req.Header.Add(wire.AgentHeader, "child_a")
	req.Header.Add(wire.AgentHeader, "child_b")
	resp, err := c.http.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("two %s headers: %d, want 400", wire.AgentHeader, resp.StatusCode)
	}
	if _, err := os.Stat(filepath.Join(f.work, "ran.txt")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a refused call ran its command: %v", err)
	}
	// An empty header is the top-level agent.
	if res := c.result(t, "bash", `{"command":"echo ok"}`, wire.AgentHeader, ""); res.Output != "ok\n[exit code 0]" {
		t.Fatalf("empty agent header: %q", res.Output)
	}
}

// The same Idempotency-Key from two agents is two calls: neither gets the
// other's cached answer (nor its session), while each agent's retry is
// still a replay.
func TestIdempotencyKeyIsPerAgent(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	_, c := newAPI(t, f, server.Options{})
	count := `{"command":"echo run >> log.txt; wc -l < log.txt"}`
	for _, tt := range []struct{ agent, want string }{
		{"child_a", "1"},
		{"child_b", "2"},
		{"child_a", "1"}, // a replay
		{"", "3"},
		{"child_b", "2"},
		{"", "3"},
	} {
		res := c.result(t, "bash", count, wire.IdempotencyHeader, "step-1", wire.AgentHeader, tt.agent)
		if want := tt.want + "\n[exit code 0]"; res.Output != want {
			t.Fatalf("as %q: %q, want %q", tt.agent, res.Output, want)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(f.work, "log.txt")); strings.Count(string(b), "run") != 3 {
		t.Fatalf("log.txt = %q, want three runs, one per agent", b)
	}

	// A session started with a key belongs to the agent that sent it: the
	// same key and arguments from another agent start that agent's own.
	aID, aPID := startSession(t, c, "child_a", "exec cat", wire.IdempotencyHeader, "start-cat")
	bID, bPID := startSession(t, c, "child_b", "exec cat", wire.IdempotencyHeader, "start-cat")
	if aID == bID || aPID == bPID {
		t.Fatalf("child_b got child_a's session %s (pid %d)", aID, aPID)
	}
	if again, _ := startSession(t, c, "child_a", "exec cat", wire.IdempotencyHeader, "start-cat"); again != aID {
		t.Fatalf("child_a's retry got session %s, want its own %s again", again, aID)
	}
	if status, out := c.closeSessions(t, `{"agent":"child_a"}`); status != http.StatusOK || out["closed"] != 1.0 {
		t.Fatalf("close child_a = %d %v, want 1 closed", status, out)
	}
	deadline := time.Now().Add(5 * time.Second)
	for alive(aPID) && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if alive(aPID) || !alive(bPID) {
		t.Fatalf("after closing child_a: its cat alive=%v, child_b's alive=%v; want only child_b's", alive(aPID), alive(bPID))
	}
}

// A sandboxd without sessions closes none.
func TestSessionsCloseWithoutSessions(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	_, c := newAPI(t, f, server.Options{Tools: []tool.Tool{brokenTool{brokenSpec}}})
	if status, out := c.closeSessions(t, `{"agent":"child_a"}`); status != http.StatusOK || out["closed"] != 0.0 {
		t.Fatalf("close = %d %v, want 200 with 0 closed", status, out)
	}
}
