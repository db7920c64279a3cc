package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"

	"github.com/agentsfleet/agentsfleet/shared/model"
	"github.com/agentsfleet/agentsfleet/shared/store"
)

// tool is one of the agent's tools. call returns the result's text and
// whether it is an error result; a Go error is a broken environment.
type tool interface {
	spec() model.Tool
	call(ctx context.Context, t *turn, args json.RawMessage) (string, bool, error)
}

// turn is what the tools of one turn share: the chat and the proposal
// the turn made, if it made one.
type turn struct {
	st       *store.Store
	imp      store.Improvement
	proposal *store.Proposal
}

// decodeArgs reads args into v, refusing unknown fields; the message says
// what is wrong, for the model.
func decodeArgs(args json.RawMessage, v any) string {
	if len(bytes.TrimSpace(args)) == 0 {
		args = json.RawMessage("{}")
	}
	dec := json.NewDecoder(bytes.NewReader(args))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fmt.Sprintf("the arguments are not what the tool takes: %v", err)
	}
	return ""
}

// clip cuts s to n bytes, saying so.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + fmt.Sprintf("\n[cut: %d bytes more]", len(s)-n)
}

func schema(s string) json.RawMessage { return json.RawMessage(s) }
