package runner

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/agentsfleet/agentsfleet/shared/model"
	"github.com/agentsfleet/agentsfleet/shared/run"
	"github.com/agentsfleet/agentsfleet/shared/store"
)

// state is a run's checkpoint: everything a runner needs to go on from the
// last committed step, in whichever invocation. It holds no secret value:
// the runner never sees one (only the webtools λ reads secrets, and screens
// what it returns).
type state struct {
	V        int              `json:"v"`
	Messages []model.Message  `json:"messages"`
	Plan     *run.PlanUpdated `json:"plan,omitempty"`
	Usage    run.Usage        `json:"usage"`
	// LastInput is the input tokens of the last model call: how full the
	// context window was.
	LastInput int64 `json:"last_input,omitempty"`
	// Compactions counts the summaries that replaced earlier turns.
	Compactions int `json:"compactions,omitempty"`
	// InboxSeen is the last inbox message (store.SendToRun) the
	// conversation holds.
	InboxSeen int64 `json:"inbox_seen,omitempty"`
	// Ended is set by the step that commits run.ended; the status move
	// that follows it may still be pending when the invocation died.
	Ended *run.RunEnded `json:"ended,omitempty"`
}

const stateVersion = 1

// BlobStore keeps checkpoints too large for a DynamoDB item (S3 in AWS,
// moto locally). Safe for concurrent use.
type BlobStore interface {
	Put(ctx context.Context, key string, data []byte) error
	Get(ctx context.Context, key string) ([]byte, error)
}

// blobRef is what the checkpoint item holds when the state is in a blob.
type blobRef struct {
	Blob string `json:"blob"`
}

// maxInlineState is the largest state kept in the checkpoint item, with
// room left for the item's other attributes.
const maxInlineState = store.MaxBlobBytes - 1024

// encode returns the checkpoint data for s at step (its blob, if any,
// under prefix): the state itself, or
// a pointer to the blob it was written to.
func (r *Runner) encode(ctx context.Context, prefix string, step int64, s *state) ([]byte, error) {
	s.V = stateVersion
	data, err := json.Marshal(s)
	if err != nil {
		return nil, fmt.Errorf("encode the checkpoint: %w", err)
	}
	if len(data) <= maxInlineState {
		return data, nil
	}
	if r.cfg.Blobs == nil {
		return nil, fmt.Errorf("the checkpoint of step %d is %d bytes, more than a DynamoDB item holds, and no checkpoint bucket is configured", step, len(data))
	}
	key := fmt.Sprintf("%s/%012d.json", prefix, step)
	if err := r.cfg.Blobs.Put(ctx, key, data); err != nil {
		return nil, fmt.Errorf("write the checkpoint of step %d to %s: %w", step, key, err)
	}
	return json.Marshal(blobRef{Blob: key})
}

// decode reads a checkpoint written by encode; empty data is a new run.
func (r *Runner) decode(ctx context.Context, data []byte) (*state, error) {
	s := &state{}
	if len(data) == 0 {
		return s, nil
	}
	var ref blobRef
	if json.Unmarshal(data, &ref) == nil && ref.Blob != "" {
		if r.cfg.Blobs == nil {
			return nil, fmt.Errorf("the checkpoint is in blob %s and no checkpoint bucket is configured", ref.Blob)
		}
		var err error
		if data, err = r.cfg.Blobs.Get(ctx, ref.Blob); err != nil {
			return nil, fmt.Errorf("read the checkpoint from %s: %w", ref.Blob, err)
		}
	}
	if err := json.Unmarshal(data, s); err != nil {
		return nil, fmt.Errorf("decode the checkpoint: %w", err)
	}
	if s.V != stateVersion {
		return nil, fmt.Errorf("the checkpoint has version %d; this runner reads %d", s.V, stateVersion)
	}
	return s, nil
}
