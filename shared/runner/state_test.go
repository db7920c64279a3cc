package runner

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/agentsfleet/agentsfleet/shared/model"
	"github.com/agentsfleet/agentsfleet/shared/store"
)

// memBlobs is a BlobStore in memory.
type memBlobs struct {
	mu sync.Mutex
	m  map[string][]byte
}

func (b *memBlobs) Put(_ context.Context, key string, data []byte) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.m[key] = append([]byte(nil), data...)
	return nil
}

func (b *memBlobs) Get(_ context.Context, key string) ([]byte, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	d, ok := b.m[key]
	if !ok {
		return nil, fmt.Errorf("no blob %s", key)
	}
	return d, nil
}

func text(role model.Role, s string) model.Message {
	return model.Message{Role: role, Content: []model.Part{{Text: s}}}
}

// TestLayTurns: each step writes the turns whose messages changed and one
// for the messages it added; a conversation replaced, or changed in more
// turns than a step writes, is written whole as one turn where it then
// starts; a turn larger than an item goes to the bucket, or fails without
// one.
func TestLayTurns(t *testing.T) {
	t.Parallel()
	blobs := &memBlobs{m: map[string][]byte{}}
	r := &Runner{cfg: Config{Blobs: blobs}}
	s := &state{}
	step := int64(0)
	// commit encodes the next step and returns "step:messages" for each
	// turn it writes, and the conversation's first step.
	commit := func() (string, int64) {
		t.Helper()
		step++
		_, turns, err := r.encode(context.Background(), "checkpoints/run", step, s)
		if err != nil {
			t.Fatalf("step %d: %v", step, err)
		}
		var out []string
		for _, tn := range turns {
			out = append(out, fmt.Sprintf("%d:%d", tn.Step, len(tn.Data)))
		}
		from := s.next.from
		s.committed()
		if got := s.kept.covered(); got != len(s.Messages) {
			t.Fatalf("step %d: the turns hold %d messages, the conversation %d", step, got, len(s.Messages))
		}
		return strings.Join(out, " "), from
	}
	steps := func(got string) []string {
		var out []string
		for _, f := range strings.Fields(got) {
			out = append(out, strings.SplitN(f, ":", 2)[0])
		}
		return out
	}
	want := func(what, got string, from, wantFrom int64, wantSteps ...string) {
		t.Helper()
		if g := strings.Join(steps(got), " "); g != strings.Join(wantSteps, " ") || from != wantFrom {
			t.Errorf("%s: turns of steps %q from %d; want %q from %d", what, g, from, strings.Join(wantSteps, " "), wantFrom)
		}
	}

	s.Messages = []model.Message{text(model.User, "task")}
	got, from := commit()
	want("the first step", got, from, 1, "1")
	got, from = commit()
	want("a step adding nothing", got, from, 1)
	for i := range 8 {
		s.Messages = append(s.Messages, text(model.Assistant, fmt.Sprint("call ", i)), text(model.User, fmt.Sprint("result ", i)))
		got, from = commit()
		want("a step adding a turn", got, from, 1, fmt.Sprint(step))
	}
	// A reply joined to the last results, and a new turn.
	s.Messages[len(s.Messages)-1].Content = append(s.Messages[len(s.Messages)-1].Content, model.Part{Text: "a reply"})
	s.Messages = append(s.Messages, text(model.Assistant, "call 8"))
	got, from = commit()
	want("a step changing the last turn", got, from, 1, "10", "11")
	// Older outputs cut in more turns than a step writes.
	for i := 1; i < len(s.Messages)-1; i += 2 {
		s.Messages[i+1].Content[0].Text = "cut"
	}
	got, from = commit()
	want("a step changing many turns", got, from, step, fmt.Sprint(step))
	s.Messages = append(s.Messages, text(model.User, "result 8"))
	got, from = commit()
	want("a step after it", got, from, step-1, fmt.Sprint(step))
	// A compaction.
	s.Messages = []model.Message{text(model.User, "task and summary")}
	got, from = commit()
	want("a compaction", got, from, step, fmt.Sprint(step))

	// A turn larger than an item goes to the bucket, under a new name each
	// time.
	big := strings.Repeat("y", store.MaxBlobBytes)
	s.Messages = append(s.Messages, text(model.Assistant, "read"), text(model.User, big))
	got, _ = commit()
	if f := strings.Fields(got); len(f) != 1 || len(blobs.m) != 1 {
		t.Fatalf("a large turn: %q, %d blobs; want one small item and a blob", got, len(blobs.m))
	}
	s.Messages[len(s.Messages)-1].Content = append(s.Messages[len(s.Messages)-1].Content, model.Part{Text: "a reply"})
	commit()
	if len(blobs.m) != 2 {
		t.Fatalf("%d blobs after the large turn changed; want 2", len(blobs.m))
	}
	noBucket := &Runner{}
	if _, _, err := noBucket.encode(context.Background(), "checkpoints/run", step+1, &state{Messages: s.Messages}); err == nil ||
		!strings.Contains(err.Error(), "no checkpoint bucket") {
		t.Fatalf("a large turn without a bucket = %v; want it refused, saying why", err)
	}
}
