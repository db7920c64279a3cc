// Package improve is the improvement chat: a conversation about one fleet
// whose built-in agent (shared/improve/agent) reads the fleet's Definition,
// revisions and runs and proposes a new revision as a Definition and a
// diff, which a person applies or discards. It holds what every door (the
// HTTP API, Slack, the CLI through the API) does to a chat: start one, post
// a message, read it, apply, discard. It needs only the store and the
// invoker, so that the functions serving those doors link neither the
// agent's loop nor the model packages: a turn runs on the runner function, started with a
// Payload, as a run is.
//
// The agent can never apply anything: nothing it can call writes a
// revision. Apply is conditional on the revision the proposal was made
// from (store.ApplyImprovement) and needs the scopes the new Definition
// needs, as PUT /v1/fleets/{name} does.
package improve

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/agentsfleet/agentsfleet/shared/api/wire"
	"github.com/agentsfleet/agentsfleet/shared/fault"
	"github.com/agentsfleet/agentsfleet/shared/fleet"
	"github.com/agentsfleet/agentsfleet/shared/invoke"
	"github.com/agentsfleet/agentsfleet/shared/scope"
	"github.com/agentsfleet/agentsfleet/shared/store"
)

// Payload is what the runner function is invoked with for a chat's turn.
type Payload struct {
	ImprovementID string `json:"improvement_id"`
	Turn          int64  `json:"turn"`
}

// Dispatch is the runner function's handler: a chat's turn (a Payload)
// goes to chats, anything else (a run's payload) to runs. The Lambda main,
// agentsfleet dev and the tests register the same value.
func Dispatch(runs, chats invoke.Handler) invoke.Handler {
	return func(ctx context.Context, payload []byte) ([]byte, error) {
		var p Payload
		if json.Unmarshal(payload, &p) == nil && p.ImprovementID != "" {
			return chats(ctx, payload)
		}
		return runs(ctx, payload)
	}
}

// MaxMessage is the longest message a person may post, in bytes.
const MaxMessage = 16 << 10

// The roles of a chat's messages.
const (
	RolePerson = "person"
	RoleAgent  = "agent"
)

// Chats starts and changes improvement chats. Safe for concurrent use.
type Chats struct {
	Store   *store.Store
	Invoker invoke.Invoker
}

// Log is a chat's conversation, decoded: what people see, and the
// agent's own memory of it (its model conversation, which the agent reads
// and writes; this package only keeps it, so that the doors starting chats
// do not link the model packages).
type Log struct {
	Messages     []wire.ImprovementMessage
	Conversation json.RawMessage
}

// Encode is l as the Store keeps it.
func (l Log) Encode() (store.ImprovementLog, error) {
	m, err := json.Marshal(l.Messages)
	if err != nil {
		return store.ImprovementLog{}, err
	}
	return store.ImprovementLog{Messages: m, Conversation: l.Conversation}, nil
}

// DecodeLog reads a Log the Store kept.
func DecodeLog(sl store.ImprovementLog) (Log, error) {
	var l Log
	if len(sl.Messages) > 0 {
		if err := json.Unmarshal(sl.Messages, &l.Messages); err != nil {
			return Log{}, fmt.Errorf("decode the chat's messages: %w", err)
		}
	}
	l.Conversation = sl.Conversation
	return l, nil
}

// add appends a person's message to l; the agent reads it into its
// conversation at its turn.
func (l *Log) add(text, by string, at time.Time) {
	l.Messages = append(l.Messages, wire.ImprovementMessage{Role: RolePerson, Text: text, By: by, Time: at})
}

func checkMessage(text string) error {
	switch {
	case strings.TrimSpace(text) == "":
		return fault.New(fault.RequestInvalid, `field "message" is required: say what should change in the fleet`)
	case len(text) > MaxMessage:
		return fault.New(fault.RequestInvalid, "the message is %d bytes; at most %d are allowed", len(text), MaxMessage)
	case !utf8.ValidString(text):
		return fault.New(fault.RequestInvalid, "the message is not valid UTF-8 text")
	}
	return nil
}

// Start opens a chat about fleetName with its first message and starts
// the agent's turn on it. o says who starts it and from where; thread is
// its Slack thread, if it started in one.
func (c *Chats) Start(ctx context.Context, fleetName, text string, o store.Origin, thread store.ChatThread) (store.Improvement, error) {
	if err := checkMessage(text); err != nil {
		return store.Improvement{}, err
	}
	var l Log
	l.add(text, o.By, c.Store.Now().UTC())
	sl, err := l.Encode()
	if err != nil {
		return store.Improvement{}, err
	}
	imp, err := c.Store.CreateImprovement(ctx, store.NewImprovement{Fleet: fleetName, Origin: o, Slack: thread, Log: sl})
	if err != nil {
		return store.Improvement{}, err
	}
	return imp, c.think(ctx, imp)
}

// Post adds a person's message to chat id and starts the agent's turn on
// it: fault.ImproveBusy while the agent is still answering,
// fault.ImproveClosed once the chat is applied or discarded.
func (c *Chats) Post(ctx context.Context, id, text, by string) (store.Improvement, error) {
	if err := checkMessage(text); err != nil {
		return store.Improvement{}, err
	}
	imp, err := c.Store.GetImprovement(ctx, id)
	if err != nil {
		return store.Improvement{}, err
	}
	sl, err := c.Store.GetImprovementLog(ctx, id)
	if err != nil {
		return store.Improvement{}, err
	}
	l, err := DecodeLog(sl)
	if err != nil {
		return store.Improvement{}, err
	}
	l.add(text, by, c.Store.Now().UTC())
	if sl, err = l.Encode(); err != nil {
		return store.Improvement{}, err
	}
	if imp, err = c.Store.BeginTurn(ctx, id, imp.Turn, sl); err != nil {
		return store.Improvement{}, err
	}
	return imp, c.think(ctx, imp)
}

// think starts the agent's turn on the runner function.
func (c *Chats) think(ctx context.Context, imp store.Improvement) error {
	payload, _ := json.Marshal(Payload{ImprovementID: imp.ID, Turn: imp.Turn})
	if err := c.Invoker.Start(ctx, invoke.Runner, payload); err != nil {
		return fmt.Errorf("start the agent of improvement %s: %w", imp.ID, err)
	}
	return nil
}

// View is chat id as GET /v1/improvements/{id} shows it. A proposal whose
// fleet has moved on since its from_revision shows as stale.
func (c *Chats) View(ctx context.Context, id string) (wire.Improvement, error) {
	imp, err := c.Store.GetImprovement(ctx, id)
	if err != nil {
		return wire.Improvement{}, err
	}
	sl, err := c.Store.GetImprovementLog(ctx, id)
	if err != nil {
		return wire.Improvement{}, err
	}
	l, err := DecodeLog(sl)
	if err != nil {
		return wire.Improvement{}, err
	}
	v := wire.Improvement{ImprovementID: imp.ID, Fleet: imp.Fleet, Status: imp.Status, Messages: l.Messages,
		Error: imp.Error, AppliedRevision: imp.Applied, CreatedAt: imp.CreatedAt, UpdatedAt: imp.UpdatedAt}
	if v.Messages == nil {
		v.Messages = []wire.ImprovementMessage{}
	}
	if p := imp.Proposal; p != nil {
		v.Proposal = &wire.Proposal{FromRevision: p.From, Definition: p.Definition, Diff: p.Diff, Summary: p.Summary,
			Scopes: NeededScopes(p.Canonical)}
		if imp.Status == store.ImproveProposed {
			if f, err := c.Store.GetFleet(ctx, imp.Fleet); err == nil && f.Revision != p.From {
				v.Status = store.ImproveStale
			}
		}
	}
	return v, nil
}

// Apply makes chat id's proposal the fleet's next revision, if granted
// holds every scope it needs (as PUT does: a *fleet.ScopeError, 403, names
// the missing ones) and the fleet is still at the proposal's
// from_revision (else fault.ImproveStale). o says who applies it.
func (c *Chats) Apply(ctx context.Context, id string, granted []string, o store.Origin) (store.Revision, error) {
	imp, err := c.Store.GetImprovement(ctx, id)
	if err != nil {
		return store.Revision{}, err
	}
	if imp.Status == store.ImproveApplied || imp.Status == store.ImproveDiscarded {
		return store.Revision{}, fault.New(fault.ImproveClosed, "the chat is %s already", imp.Status)
	}
	if imp.Proposal == nil {
		if imp.Status == store.ImproveThinking {
			return store.Revision{}, fault.New(fault.ImproveBusy, "the chat's agent is still answering; wait for its proposal")
		}
		return store.Revision{}, fault.ImproveNoProposal
	}
	def, err := fleet.ParseJSON(imp.Proposal.Canonical)
	if err != nil {
		return store.Revision{}, fmt.Errorf("apply improvement %s: its proposal cannot be read: %w", id, err)
	}
	if err := def.CheckScopes(granted); err != nil {
		return store.Revision{}, err
	}
	return c.Store.ApplyImprovement(ctx, id, imp.Proposal.Hash, o)
}

// NeededScopes are the scopes a key needs to apply the Definition
// canonical (canonical JSON): fleets:write and its tools' scopes, sorted.
func NeededScopes(canonical []byte) []string {
	out := []string{scope.FleetsWrite}
	def, err := fleet.ParseJSON(canonical)
	if err != nil {
		return out
	}
	var se *fleet.ScopeError
	if errors.As(def.CheckScopes(nil), &se) {
		for _, m := range se.Missing {
			out = append(out, m.Scope)
		}
	}
	sort.Strings(out)
	return out
}
