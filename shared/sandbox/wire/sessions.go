package wire

import "fmt"

// A run's parent agent and its child agents share one sandbox, hence one
// sandboxd and its exec_command sessions. A tool call names the agent that
// makes it, so that a session remembers who started it; when a child is
// stopped, the runner closes that child's sessions and no one else's:
//
//	POST ToolPath(name)    AgentHeader: AGENT (optional)  → as any tool call;
//	                       → 400 a bad AgentHeader (CheckAgent)
//	POST SessionsClosePath {"agent": AGENT}               → 200 SessionsClosed
//
// The close needs the bearer token. Errors are an ErrorBody with 400 (the
// body is not {"agent": …} or the agent is empty or malformed, named) or
// 401. Closing an agent that started nothing answers Closed 0.
//
// The agent is a label for bookkeeping, not a security boundary: every
// caller holds the same token, and any agent may drive (write_stdin) a
// session another started, since the sandbox is shared.
const (
	// AgentHeader names the agent making a tool call: a child's id such
	// as "child_01JX…"; absent or empty means the run's top-level agent.
	// A non-empty value must pass CheckAgent.
	AgentHeader = "X-Agentsfleet-Agent"
	// SessionsClosePath closes the exec_command sessions one agent started.
	SessionsClosePath = "/v1/sessions/close"

	// MaxAgent is the longest agent id, in bytes.
	MaxAgent = 100
)

// SessionsClose is the body of POST SessionsClosePath: Agent is a child's
// id (CheckAgent). The top-level agent's sessions ("") cannot be closed
// this way; they end with the sandbox.
type SessionsClose struct {
	Agent string `json:"agent"`
}

// SessionsClosed is the answer of POST SessionsClosePath: how many
// sessions were closed, their process groups killed.
type SessionsClosed struct {
	Closed int `json:"closed"`
}

// CheckAgent says what is wrong with id as an agent id, or returns nil: it
// must be 1 to MaxAgent bytes of A-Z, a-z, 0-9, _ and -. Both sides call
// it, so a malformed id is refused before it is sent. The error names the
// first bad byte rather than repeating the id.
func CheckAgent(id string) error {
	if id == "" {
		return fmt.Errorf("the agent id is empty")
	}
	if len(id) > MaxAgent {
		return fmt.Errorf("the agent id is %d bytes, more than %d", len(id), MaxAgent)
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '-') {
			return fmt.Errorf("the agent id may hold only A-Z, a-z, 0-9, _ and -; byte %d is %q", i, c)
		}
	}
	return nil
}
