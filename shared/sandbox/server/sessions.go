package server

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"

	"github.com/agentsfleet/agentsfleet/shared/sandbox/wire"
)

// agentSessions is a tool holding sessions that agents started
// (exec_command's): POST wire.SessionsClosePath closes one agent's
// through it.
type agentSessions interface {
	CloseAgent(agent string) int
}

// maxSessionsCloseBody bounds the body of POST wire.SessionsClosePath,
// which holds one agent id of at most wire.MaxAgent bytes.
const maxSessionsCloseBody = 4 << 10

// callAgent is the agent a tool call names in wire.AgentHeader: "" (the
// top-level agent) when absent or empty, else an id wire.CheckAgent
// accepts. The error is the 400's message.
func callAgent(r *http.Request) (string, error) {
	values := r.Header.Values(wire.AgentHeader)
	switch {
	case len(values) == 0:
		return "", nil
	case len(values) > 1:
		return "", fmt.Errorf("the %s header is given %d times: name one agent", wire.AgentHeader, len(values))
	case values[0] == "":
		return "", nil
	}
	if err := wire.CheckAgent(values[0]); err != nil {
		return "", fmt.Errorf("the %s header: %w", wire.AgentHeader, err)
	}
	return values[0], nil
}

// idemKey is the Idempotency-Key cache's key for a call by agent: each
// agent has keys of its own, so a cached answer never goes to another
// agent that happens to use the same key. An agent id holds no NUL, so
// the pair is unambiguous.
func idemKey(agent, key string) string { return agent + "\x00" + key }

// sessionsClose serves POST wire.SessionsClosePath: it closes the sessions
// the agent named in the body started, and answers how many.
func (s *Server) sessionsClose(w http.ResponseWriter, r *http.Request) {
	if !s.authorized(r) {
		w.Header().Set("WWW-Authenticate", `Bearer realm="sandboxd"`)
		writeError(w, http.StatusUnauthorized, "missing or wrong bearer token")
		return
	}
	s.begin()
	defer s.end()
	req, msg := decodeSessionsClose(w, r)
	if msg != "" {
		writeError(w, http.StatusBadRequest, msg)
		return
	}
	closed := 0
	for _, t := range s.tools {
		if c, ok := t.(agentSessions); ok {
			closed += c.CloseAgent(req.Agent)
		}
	}
	s.log.Info("closed an agent's sessions", "agent", req.Agent, "closed", closed)
	writeJSON(w, http.StatusOK, wire.SessionsClosed{Closed: closed})
}

// decodeSessionsClose reads the body of a close, or says what is wrong
// with it in words for the caller.
func decodeSessionsClose(w http.ResponseWriter, r *http.Request) (wire.SessionsClose, string) {
	const shape = `{"agent": "…"}`
	var req wire.SessionsClose
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxSessionsCloseBody))
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			return req, fmt.Sprintf("the body is larger than %d bytes; it is %s", maxSessionsCloseBody, shape)
		}
		return req, "the body could not be read"
	}
	var fields map[string]json.RawMessage
	if !wire.IsObject(body) || json.Unmarshal(body, &fields) != nil {
		return req, "the body must be a JSON object " + shape
	}
	for name := range fields {
		if name != "agent" {
			return req, fmt.Sprintf("the body has an unknown field %.40q; it is %s", name, shape)
		}
	}
	raw, ok := fields["agent"]
	if !ok {
		return req, "the body names no agent; it is " + shape
	}
	if json.Unmarshal(raw, &req.Agent) != nil {
		return req, `"agent" must be a string: the id of the agent whose sessions to close`
	}
	if req.Agent == "" {
		return req, `"agent" is empty: name a child agent; the top-level agent's sessions end with the sandbox`
	}
	if err := wire.CheckAgent(req.Agent); err != nil {
		return req, `"agent": ` + err.Error()
	}
	return req, ""
}
