package session

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentsfleet/agentsfleet/shared/tool"
)

// as is a tool called by agent, as sandboxd calls it for a request with
// that agent's header.
type as struct {
	tool.Tool
	agent string
}

func (a as) Run(ctx context.Context, args json.RawMessage) (tool.Result, error) {
	return a.Tool.Run(WithAgent(ctx, a.agent), args)
}

// startAs starts cmd as agent's session and returns its id and the pid of
// its group's leader.
func startAs(t *testing.T, m *Manager, agent, cmd string) (id, pgid int) {
	t.Helper()
	r := call(t, as{m.ExecCommand(), agent}, map[string]any{"cmd": cmd, "yield_time_ms": 250})
	if r.exited || r.id == 0 {
		t.Fatalf("%s: %q: want a running session:\n%s", agent, cmd, r.raw)
	}
	s, why := m.lookup(r.id)
	if s == nil {
		t.Fatalf("session %d: %s", r.id, why)
	}
	return r.id, s.cmd.Process.Pid
}

// echoes checks that session id, written to by agent, is alive: cat
// echoes the line back.
func echoes(t *testing.T, m *Manager, agent string, id int, line string) {
	t.Helper()
	if err := echo(m, agent, id, line); err != nil {
		t.Fatal(err)
	}
}

// echo is echoes for any goroutine: it returns what went wrong.
func echo(m *Manager, agent string, id int, line string) error {
	run := func(tl tool.Tool, args map[string]any) (string, error) {
		raw, _ := json.Marshal(args)
		res, err := as{tl, agent}.Run(context.Background(), raw)
		if err != nil || res.IsError {
			return "", fmt.Errorf("%s %d as %q: %v %s", tl.Name(), id, agent, err, res.Output)
		}
		return res.Output, nil
	}
	out, err := run(m.WriteStdin(), map[string]any{"session_id": id, "chars": line + "\n"})
	for deadline := time.Now().Add(15 * time.Second); err == nil && !strings.Contains(out, line); {
		if time.Now().After(deadline) {
			return fmt.Errorf("session %d did not echo %q: %q", id, line, out)
		}
		var more string
		more, err = run(m.WriteStdin(), map[string]any{"session_id": id})
		out += more
	}
	return err
}

func TestCloseAgentClosesOnlyThatAgentsSessions(t *testing.T) {
	t.Parallel()
	m, _ := newManager(t, Options{})
	const a, b = "child_01JXAAAA", "child_01JXBBBB"
	a1, a1pg := startAs(t, m, a, "sleep 60")
	a2, a2pg := startAs(t, m, a, "sleep 60 & sleep 60") // a grandchild too
	b1, b1pg := startAs(t, m, b, "cat")
	top, toppg := startAs(t, m, "", "cat")

	if got := m.CloseAgent(a); got != 2 {
		t.Fatalf("CloseAgent(%s) = %d, want 2", a, got)
	}
	// CloseAgent waited for the leaders to be reaped: a lone process is
	// gone when it returns. The background sleep is reaped by whoever
	// inherited it, a moment later.
	if !groupGone(a1pg) {
		t.Errorf("process group %d of agent %s still alive after CloseAgent", a1pg, a)
	}
	waitGone(t, a2pg)
	for _, pg := range []int{b1pg, toppg} {
		if groupGone(pg) {
			t.Fatalf("process group %d of another agent died", pg)
		}
	}
	echoes(t, m, b, b1, "b still here")
	echoes(t, m, "", top, "top still here")

	// The closed ids explain themselves, to any agent.
	for _, caller := range []string{a, b, ""} {
		for _, id := range []int{a1, a2} {
			r := call(t, as{m.WriteStdin(), caller}, map[string]any{"session_id": id, "chars": "x"})
			want := fmt.Sprintf("write_stdin: Unknown session ID %d (it was closed, and its process group killed, because its agent %s was stopped). Live sessions: ", id, a)
			if !r.isError || !strings.HasPrefix(r.raw, want) {
				t.Fatalf("write_stdin %d as %q = %q, want %q…", id, caller, r.raw, want)
			}
			if strings.Contains(r.raw, fmt.Sprint(id)+" (running") {
				t.Fatalf("closed session %d is still listed as live: %q", id, r.raw)
			}
		}
	}

	// Nothing is left to close; unknown and top-level agents close nothing.
	for _, agent := range []string{a, "child_nobody", ""} {
		if got := m.CloseAgent(agent); got != 0 {
			t.Errorf("CloseAgent(%q) = %d, want 0", agent, got)
		}
	}
	echoes(t, m, "", top, "top survives CloseAgent(\"\")")

	// The agent may start sessions again (a restarted child), and they
	// are closed by the next CloseAgent.
	again, againpg := startAs(t, m, a, "cat")
	if got := m.CloseAgent(a); got != 1 {
		t.Fatalf("second CloseAgent(%s) = %d, want 1", a, got)
	}
	waitGone(t, againpg)
	if _, why := m.lookup(again); !strings.Contains(why, "because its agent "+a+" was stopped") {
		t.Fatalf("lookup %d: %q", again, why)
	}
	echoes(t, m, b, b1, "b survives twice")
}

// Another agent may drive a session: the sandbox is shared, and closing
// the agent that wrote to it leaves it alone.
func TestWriteStdinAcrossAgents(t *testing.T) {
	t.Parallel()
	m, _ := newManager(t, Options{})
	id, _ := startAs(t, m, "child_owner", "cat")
	echoes(t, m, "child_other", id, "from another child")
	echoes(t, m, "", id, "from the parent")
	if got := m.CloseAgent("child_other"); got != 0 {
		t.Fatalf("CloseAgent of an agent that only wrote = %d, want 0", got)
	}
	echoes(t, m, "child_owner", id, "still the owner's")
	if got := m.CloseAgent("child_owner"); got != 1 {
		t.Fatalf("CloseAgent(child_owner) = %d, want 1", got)
	}
}

// An agent stopped while its exec_command is still in its first yield:
// the session is killed, the call reports the kill, and the session never
// becomes visible afterwards.
func TestCloseAgentDuringFirstYield(t *testing.T) {
	t.Parallel()
	m, _ := newManager(t, Options{})
	const agent = "child_slow"
	got := make(chan result, 1)
	go func() {
		args, _ := json.Marshal(map[string]any{"cmd": "sleep 60", "yield_time_ms": 20000})
		res, err := m.ExecCommand().Run(WithAgent(context.Background(), agent), args)
		if err != nil {
			t.Errorf("exec_command: %v", err)
		}
		got <- result{raw: res.Output, isError: res.IsError}
	}()
	deadline := time.Now().Add(10 * time.Second)
	for m.agentSessions(agent) == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the session never started")
		}
		time.Sleep(5 * time.Millisecond)
	}
	began := time.Now()
	if n := m.CloseAgent(agent); n != 1 {
		t.Fatalf("CloseAgent = %d, want 1", n)
	}
	select {
	case r := <-got:
		if r.isError || !strings.Contains(r.raw, "Process exited with code 137") {
			t.Fatalf("exec_command of a closed agent = %q, want the kill's exit code", r.raw)
		}
		if took := time.Since(began); took > 5*time.Second {
			t.Fatalf("exec_command returned %s after the close, want at once", took)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("exec_command did not return after its agent was closed")
	}
	if n := m.visibleCount() + m.agentSessions(agent); n != 0 {
		t.Fatalf("%d sessions left after the close, want none", n)
	}
}

// Agents start and close sessions at once (go test -race).
func TestCloseAgentConcurrently(t *testing.T) {
	t.Parallel()
	m, _ := newManager(t, Options{})
	agents := []string{"child_1", "child_2", "child_3", "child_4"}
	ids := make([][]int, len(agents))
	var wg sync.WaitGroup
	for i, agent := range agents {
		wg.Add(1)
		go func() {
			defer wg.Done()
			args, _ := json.Marshal(map[string]any{"cmd": "cat", "yield_time_ms": 250})
			for range 3 {
				res, err := as{m.ExecCommand(), agent}.Run(context.Background(), args)
				sub := headerRE.FindStringSubmatch(res.Output)
				if err != nil || sub == nil || sub[3] == "" {
					t.Errorf("%s: cat: %v %q, want a running session", agent, err, res.Output)
					return
				}
				id, _ := strconv.Atoi(sub[3])
				ids[i] = append(ids[i], id)
			}
		}()
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	closed := make([]int, len(agents))
	for i, agent := range agents[:2] {
		wg.Add(1)
		go func() {
			defer wg.Done()
			closed[i] = m.CloseAgent(agent)
		}()
	}
	// The others keep working while the first two are closed.
	for i, agent := range agents[2:] {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := echo(m, agent, ids[2+i][0], "busy "+agent); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if closed[0] != 3 || closed[1] != 3 {
		t.Fatalf("closed %v, want 3 each for the first two agents", closed[:2])
	}
	if got := m.visibleCount(); got != 6 {
		t.Fatalf("%d sessions left, want the other two agents' 6", got)
	}
	for i, agent := range agents {
		for _, id := range ids[i] {
			_, why := m.lookup(id)
			if gone := why != ""; gone != (i < 2) {
				t.Errorf("%s's session %d: gone=%v (%q)", agent, id, gone, why)
			}
		}
	}
}

// agentSessions counts the sessions agent started that the manager still
// holds, visible or not.
func (m *Manager) agentSessions(agent string) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := 0
	for _, s := range m.sessions {
		if s.agent == agent {
			n++
		}
	}
	return n
}
