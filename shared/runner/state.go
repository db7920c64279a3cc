package runner

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/json"
	"fmt"

	"github.com/agentsfleet/agentsfleet/shared/model"
	"github.com/agentsfleet/agentsfleet/shared/run"
	"github.com/agentsfleet/agentsfleet/shared/store"
)

// state is a run's checkpoint: everything a runner needs to go on from the
// last committed step, in whichever invocation. It holds no secret value:
// the runner reads none but those of the fleet's setup step, which it
// hands to the sandbox and keeps nowhere (setup.go); the webtools λ reads
// the others, and screens what it returns.
//
// The conversation is not in the checkpoint's own item: each step writes
// the messages it added as a turn item of its own (store.Turn) in the
// step's transaction, and the checkpoint names the turns that make the
// conversation (Conv), so that a step writes what it adds however long the
// conversation has grown. A step that changes messages an earlier turn
// holds (a reply added to the last results, older outputs cut to fit the
// context) writes that turn again; one that replaces the conversation (a
// compaction) writes it whole as one turn and the conversation starts
// there.
type state struct {
	V int `json:"v"`
	// Messages is the conversation. A version 1 checkpoint holds it
	// inline; from version 2 it is in the agent's turns, which Conv names,
	// and the checkpoint's JSON leaves it out.
	Messages []model.Message `json:"messages,omitempty"`
	// Conv names the turns that hold Messages (version 2).
	Conv  *conversation    `json:"conv,omitempty"`
	Plan  *run.PlanUpdated `json:"plan,omitempty"`
	Usage run.Usage        `json:"usage"`
	// LastInput is the input tokens of the last model call: how full the
	// context window was.
	LastInput int64 `json:"last_input,omitempty"`
	// Compactions counts the summaries that replaced earlier turns.
	Compactions int `json:"compactions,omitempty"`
	// InboxSeen is the last inbox message (store.SendToRun) the
	// conversation holds.
	InboxSeen int64 `json:"inbox_seen,omitempty"`
	// Setup is set by the step that commits setup.ended: the fleet's setup
	// step ran (or was skipped) and is not run again.
	Setup bool `json:"setup,omitempty"`
	// SetupError is why the run is to fail when the setup step failed
	// (CodeSetupFailed), set with Setup: an invocation that finds it set
	// ends the run with it, never calling the model. Its message is
	// made of the screened output, and screened again with run.ended.
	SetupError *run.Error `json:"setup_error,omitempty"`
	// Ended is set by the step that commits run.ended; the status move
	// that follows it may still be pending when the invocation died.
	Ended *run.RunEnded `json:"ended,omitempty"`
	// MCP is what each MCP server listed for this agent (mcp.go), so that
	// a re-invocation offers the same tools without listing again.
	MCP map[string]mcpListing `json:"mcp,omitempty"`
	// Waiting is set by a step whose calls wait for a person (approval.go),
	// and cleared by the step that runs them.
	Waiting *waiting `json:"waiting,omitempty"`

	// kept is how the store holds Messages as of the last committed step;
	// next is what the step being committed will leave (committed adopts
	// it).
	kept, next turnLayout
}

// stateVersion 2 keeps the conversation in turns; decode reads version 1
// too (the whole conversation inline), so that a run checkpointed by an
// older runner goes on.
const stateVersion = 2

// conversation is where a version 2 checkpoint's conversation is: the
// agent's turns of steps From through the checkpoint's own, in order,
// which hold Turns items and Messages messages (checked when read back).
type conversation struct {
	// From is the step of the first turn: the run's first step, or the
	// last that replaced the conversation (a compaction).
	From     int64 `json:"from"`
	Turns    int   `json:"turns"`
	Messages int   `json:"messages"`
}

// turnLayout is how a conversation lies in the store's turns: from is
// Conv.From (0: nothing written yet), each turn holding the messages
// that follow the previous one's.
type turnLayout struct {
	from  int64
	turns []keptTurn
}

// keptTurn is one turn as the store holds it: the step it is keyed by, how
// many messages it holds, and the SHA-256 of their JSON, to see whether
// they have changed since.
type keptTurn struct {
	step int64
	n    int
	sum  [sha256.Size]byte
}

// covered is how many messages the layout's turns hold.
func (l turnLayout) covered() int {
	n := 0
	for _, t := range l.turns {
		n += t.n
	}
	return n
}

// turnData is what a turn item holds: its messages, or the blob they were
// written to when they are larger than an item.
type turnData struct {
	Messages json.RawMessage `json:"messages,omitempty"`
	Blob     string          `json:"blob,omitempty"`
}

// BlobStore keeps checkpoints too large for a DynamoDB item, and the
// images of tool results (S3 in AWS, moto locally). Safe for concurrent
// use.
type BlobStore interface {
	Put(ctx context.Context, key string, data []byte) error
	Get(ctx context.Context, key string) ([]byte, error)
}

// blobRef is what the checkpoint item holds when the state is in a blob.
type blobRef struct {
	Blob string `json:"blob"`
}

// maxInlineState is the largest state kept in the checkpoint item, with
// room left for the item's other attributes; maxInlineTurn the same for a
// turn.
const (
	maxInlineState = store.MaxBlobBytes - 1024
	maxInlineTurn  = maxInlineState
)

// maxTurnBytes bounds what the turns of one step write inline, well within
// a transaction's 4 MB beside the step's events: a step that would write
// more (or more turns than store.MaxTurnsPerStep) writes the conversation
// again as one turn instead.
const maxTurnBytes = 1 << 20

// encode returns the checkpoint data for s at step (its blobs, if any,
// under prefix) and the turns the step writes with it: the state itself,
// or a pointer to the blob it was written to. Once the step is committed,
// s.committed records the turns as the store's.
func (r *Runner) encode(ctx context.Context, prefix string, step int64, s *state) ([]byte, []store.Turn, error) {
	turns, err := r.layTurns(ctx, prefix, step, s)
	if err != nil {
		return nil, nil, err
	}
	c := *s
	c.V, c.Messages = stateVersion, nil
	c.Conv = &conversation{From: s.next.from, Turns: len(s.next.turns), Messages: len(s.Messages)}
	data, err := json.Marshal(&c)
	if err != nil {
		return nil, nil, fmt.Errorf("encode the checkpoint: %w", err)
	}
	if len(data) <= maxInlineState {
		return data, turns, nil
	}
	key := fmt.Sprintf("%s/%012d-%s.json", prefix, step, rand.Text())
	if err := r.putBlob(ctx, key, data, fmt.Sprintf("the checkpoint of step %d", step)); err != nil {
		return nil, nil, err
	}
	data, err = json.Marshal(blobRef{Blob: key})
	return data, turns, err
}

// committed records that the step encode encoded was committed: the store
// now holds the conversation as that step laid it out.
func (s *state) committed() {
	s.kept, s.next = s.next, turnLayout{}
}

// layTurns works out the turns step writes so that the store holds
// s.Messages: those of s.kept whose messages changed, written again, and
// a new turn of step for the messages after them; or, when the
// conversation no longer begins with s.kept's messages (a compaction) or
// that would be more than a step should write, the whole conversation as
// one turn of step, where it then starts. It leaves the layout in s.next.
func (r *Runner) layTurns(ctx context.Context, prefix string, step int64, s *state) ([]store.Turn, error) {
	type pending struct {
		kept keptTurn
		data []byte // the messages' JSON
	}
	var write []pending
	next := turnLayout{from: s.kept.from}
	start, fits := 0, s.kept.covered() <= len(s.Messages)
	for _, t := range s.kept.turns {
		if !fits {
			break
		}
		data, err := json.Marshal(s.Messages[start : start+t.n])
		if err != nil {
			return nil, fmt.Errorf("encode the conversation: %w", err)
		}
		if sum := sha256.Sum256(data); sum != t.sum {
			t.sum = sum
			write = append(write, pending{t, data})
		}
		next.turns = append(next.turns, t)
		start += t.n
	}
	if fits && start < len(s.Messages) {
		data, err := json.Marshal(s.Messages[start:])
		if err != nil {
			return nil, fmt.Errorf("encode the conversation: %w", err)
		}
		t := keptTurn{step: step, n: len(s.Messages) - start, sum: sha256.Sum256(data)}
		write = append(write, pending{t, data})
		next.turns = append(next.turns, t)
	}
	inline := 0
	for _, p := range write {
		if len(p.data) <= maxInlineTurn {
			inline += len(p.data)
		}
	}
	if !fits || len(write) > store.MaxTurnsPerStep || inline > maxTurnBytes {
		// The conversation starts again here, whole in one turn.
		write, next = nil, turnLayout{from: step}
		if len(s.Messages) > 0 {
			data, err := json.Marshal(s.Messages)
			if err != nil {
				return nil, fmt.Errorf("encode the conversation: %w", err)
			}
			t := keptTurn{step: step, n: len(s.Messages), sum: sha256.Sum256(data)}
			write, next.turns = []pending{{t, data}}, []keptTurn{t}
		}
	}
	if next.from == 0 {
		next.from = step
	}
	turns := make([]store.Turn, len(write))
	for i, p := range write {
		data, err := r.turnItem(ctx, prefix, step, p.kept.step, p.data)
		if err != nil {
			return nil, err
		}
		turns[i] = store.Turn{Step: p.kept.step, Data: data}
	}
	s.next = next
	return turns, nil
}

// turnItem is the data of the turn of step of, written by the step
// committing: the messages' JSON msgs inline, or a pointer to the blob
// they were written to when they are more than an item holds. A blob's
// name is new for each write, so that a writer that loses the step
// cannot replace what the winner's turn points to.
func (r *Runner) turnItem(ctx context.Context, prefix string, committing, of int64, msgs []byte) ([]byte, error) {
	if len(msgs) > maxInlineTurn {
		key := fmt.Sprintf("%s/turn-%012d-%012d-%s.json", prefix, of, committing, rand.Text())
		if err := r.putBlob(ctx, key, msgs, fmt.Sprintf("the turn of step %d", of)); err != nil {
			return nil, err
		}
		return json.Marshal(turnData{Blob: key})
	}
	return json.Marshal(turnData{Messages: msgs})
}

// putBlob writes data, what, to the blob store under key.
func (r *Runner) putBlob(ctx context.Context, key string, data []byte, what string) error {
	if r.cfg.Blobs == nil {
		return fmt.Errorf("%s is %d bytes, more than a DynamoDB item holds, and no checkpoint bucket is configured", what, len(data))
	}
	if err := r.cfg.Blobs.Put(ctx, key, data); err != nil {
		return fmt.Errorf("write %s to %s: %w", what, key, err)
	}
	return nil
}

// getBlob reads what putBlob wrote under key.
func (r *Runner) getBlob(ctx context.Context, key, what string) ([]byte, error) {
	if r.cfg.Blobs == nil {
		return nil, fmt.Errorf("%s is in blob %s and no checkpoint bucket is configured", what, key)
	}
	data, err := r.cfg.Blobs.Get(ctx, key)
	if err != nil {
		return nil, fmt.Errorf("read %s from %s: %w", what, key, err)
	}
	return data, nil
}

// decode reads a checkpoint of agent (a child id; "" for the run's own
// agent) in the run runID written by encode, with the conversation from
// its turns, or one of version 1, with the conversation inline; a
// checkpoint of step 0 is a new run.
func (r *Runner) decode(ctx context.Context, runID, agent string, ckpt store.Checkpoint) (*state, error) {
	s := &state{}
	data := ckpt.Data
	if len(data) == 0 {
		return s, nil
	}
	var ref blobRef
	if json.Unmarshal(data, &ref) == nil && ref.Blob != "" {
		var err error
		if data, err = r.getBlob(ctx, ref.Blob, "the checkpoint"); err != nil {
			return nil, err
		}
	}
	if err := json.Unmarshal(data, s); err != nil {
		return nil, fmt.Errorf("decode the checkpoint: %w", err)
	}
	switch {
	case s.V == 1:
		// The conversation is inline; the next step writes it as a turn.
		return s, nil
	case s.V != stateVersion || s.Conv == nil:
		return nil, fmt.Errorf("the checkpoint has version %d; this runner reads 1 and %d", s.V, stateVersion)
	}
	if err := r.readTurns(ctx, runID, agent, ckpt.Step, s); err != nil {
		return nil, fmt.Errorf("the conversation of step %d: %w", ckpt.Step, err)
	}
	return s, nil
}

// readTurns reads the conversation s.Conv names, through step, into
// s.Messages, and its layout into s.kept.
func (r *Runner) readTurns(ctx context.Context, runID, agent string, step int64, s *state) error {
	turns, err := r.cfg.Store.ListTurns(ctx, runID, agent, s.Conv.From, step)
	if err != nil {
		return err
	}
	s.kept = turnLayout{from: s.Conv.From}
	for _, t := range turns {
		var d turnData
		if err := json.Unmarshal(t.Data, &d); err != nil {
			return fmt.Errorf("decode the turn of step %d: %w", t.Step, err)
		}
		raw := []byte(d.Messages)
		if d.Blob != "" {
			if raw, err = r.getBlob(ctx, d.Blob, fmt.Sprintf("the turn of step %d", t.Step)); err != nil {
				return err
			}
		}
		var msgs []model.Message
		if err := json.Unmarshal(raw, &msgs); err != nil {
			return fmt.Errorf("decode the turn of step %d: %w", t.Step, err)
		}
		// Summed as encode will see them, whatever bytes were stored.
		again, err := json.Marshal(msgs)
		if err != nil {
			return fmt.Errorf("decode the turn of step %d: %w", t.Step, err)
		}
		s.Messages = append(s.Messages, msgs...)
		s.kept.turns = append(s.kept.turns, keptTurn{step: t.Step, n: len(msgs), sum: sha256.Sum256(again)})
	}
	if len(turns) != s.Conv.Turns || len(s.Messages) != s.Conv.Messages {
		return fmt.Errorf("the checkpoint names %d turns of %d messages from step %d; the store holds %d of %d",
			s.Conv.Turns, s.Conv.Messages, s.Conv.From, len(turns), len(s.Messages))
	}
	return nil
}
