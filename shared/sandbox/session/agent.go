package session

import (
	"context"
	"fmt"
)

// agentKey is the context key of the agent making a call.
type agentKey struct{}

// WithAgent returns ctx saying that agent makes the call: a session that
// exec_command starts under it belongs to agent, and CloseAgent(agent)
// closes it. "" is the run's top-level agent, the default. The agent is
// bookkeeping, not a boundary: write_stdin drives any agent's session.
func WithAgent(ctx context.Context, agent string) context.Context {
	return context.WithValue(ctx, agentKey{}, agent)
}

// AgentFrom is the agent WithAgent put in ctx, or "" (the top-level
// agent). Tools that hold something an agent started (the browser) use it
// to know whose it is.
func AgentFrom(ctx context.Context) string {
	agent, _ := ctx.Value(agentKey{}).(string)
	return agent
}

// CloseAgent closes every session agent started that the Manager still
// holds (running, or exited and not yet reported), as when that agent is
// stopped: it kills their process groups, forgets them (write_stdin on one
// of their ids then answers that the session was closed because its agent
// was stopped), waits up to 5 s for their processes to be reaped, and
// returns how many it closed. A session still in its first exec_command
// call is closed too; that call reports the kill's exit code. Other agents'
// sessions are untouched, and so are the top-level agent's: CloseAgent("")
// closes nothing (Close ends those). Safe for concurrent use.
func (m *Manager) CloseAgent(agent string) int {
	if agent == "" {
		return 0
	}
	why := fmt.Sprintf("it was closed, and its process group killed, because its agent %s was stopped", agent)
	var closed []*session
	m.mu.Lock()
	for _, s := range m.sessions {
		if s.agent == agent {
			closed = append(closed, s)
		}
	}
	for _, s := range closed {
		m.removeLocked(s, why)
	}
	m.mu.Unlock()
	for _, s := range closed {
		s.kill()
		s.closeFiles()
	}
	// A process that outlives the wait was still killed and is counted:
	// its session is gone either way.
	_ = reap(closed)
	return len(closed)
}
