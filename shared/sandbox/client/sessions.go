package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"time"

	"github.com/agentsfleet/agentsfleet/shared/sandbox/wire"
)

// CloseSessionsTimeout bounds CloseSessions: sandboxd waits up to 5 s for
// the killed processes to be reaped before it answers.
const CloseSessionsTimeout = 5*time.Second + CallMargin

var errCloseTimeout = errors.New("the close timeout passed")

// agentKey is the context key of WithAgent.
type agentKey struct{}

// WithAgent returns ctx saying that agent makes the calls made with it:
// Call sends agent in wire.AgentHeader, so that the exec_command sessions
// it starts belong to agent and CloseSessions(agent) closes them. agent is
// a child's id (wire.CheckAgent; Call refuses a bad one with ErrBadRequest
// before sending); "" is the run's top-level agent, as without WithAgent.
func WithAgent(ctx context.Context, agent string) context.Context {
	return context.WithValue(ctx, agentKey{}, agent)
}

// agentFrom is the agent WithAgent put in ctx, or "".
func agentFrom(ctx context.Context) string {
	agent, _ := ctx.Value(agentKey{}).(string)
	return agent
}

var closeKinds = map[int]error{
	http.StatusBadRequest:   ErrBadRequest,
	http.StatusUnauthorized: ErrUnauthorized,
}

// CloseSessions makes sandboxd close the exec_command sessions that agent
// started (calls made with WithAgent(ctx, agent)), killing their process
// groups, as when that agent is stopped; other agents' sessions and the
// top-level agent's are left running. It returns how many were closed (0
// when agent started none or they have ended). agent must be a child's id
// (wire.CheckAgent): an empty or malformed one is ErrBadRequest, refused
// before anything is sent. Every error is a *Error, as Call's, matching
// ErrBadRequest, ErrUnauthorized or ErrUnavailable, or ctx's error. It is
// safe to call again: a second close finds nothing left.
func (c *Client) CloseSessions(ctx context.Context, agent string) (int, error) {
	op := op{c: c, name: "close the sessions of agent " + agent}
	if err := wire.CheckAgent(agent); err != nil {
		op.name = "close an agent's sessions"
		return 0, op.notSent(ErrBadRequest, err.Error())
	}
	b, err := json.Marshal(wire.SessionsClose{Agent: agent})
	if err != nil {
		return 0, op.notSent(ErrBadRequest, "the request could not be made")
	}
	ctx, cancel := context.WithTimeoutCause(ctx, CloseSessionsTimeout, errCloseTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.base+wire.SessionsClosePath, bytes.NewReader(b))
	if err != nil {
		return 0, op.notSent(ErrBadRequest, "the request could not be made")
	}
	req.Header.Set(wire.AuthorizationHeader, c.auth)
	req.Header.Set("Content-Type", wire.ContentType)
	req.Header.Set("Accept", wire.ContentType)
	status, ctype, answer, err := c.do(req)
	if err != nil {
		return 0, op.noAnswer(ctx, status, err, CloseSessionsTimeout, errCloseTimeout)
	}
	if status == http.StatusOK {
		var res struct {
			Closed *int `json:"closed"`
		}
		if json.Unmarshal(answer, &res) != nil || res.Closed == nil || *res.Closed < 0 {
			return 0, op.foreign(status, ctype, `the body is not {"closed": N}`)
		}
		return *res.Closed, nil
	}
	kind := closeKinds[status]
	var eb struct {
		Error *string `json:"error"`
	}
	if kind == nil || json.Unmarshal(answer, &eb) != nil || eb.Error == nil {
		return 0, op.foreign(status, ctype, "")
	}
	return 0, op.refused(kind, status, *eb.Error)
}
