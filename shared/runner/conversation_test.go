//go:build linux

package runner_test

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/agentsfleet/agentsfleet/shared/awstest"
	"github.com/agentsfleet/agentsfleet/shared/invoke"
	"github.com/agentsfleet/agentsfleet/shared/model"
	"github.com/agentsfleet/agentsfleet/shared/runner"
	"github.com/agentsfleet/agentsfleet/shared/store"
)

// The conversation lives in turn items beside the checkpoint (state.go):
// these tests check that whatever reads it back — a new invocation, one
// that takes a lapsed lease over, a child's, a Slack follow-up — gets the
// very conversation the agent had, across large turns, replies joined to
// earlier turns and compactions, and that an older runner's checkpoint
// (version 1: the conversation inline) still loads.

// s3Blobs is a checkpoint bucket of the test's own on the emulator.
func s3Blobs(t *testing.T) runner.S3Blobs {
	t.Helper()
	s3c := s3.NewFromConfig(awstest.Config(t), func(o *s3.Options) { o.UsePathStyle = true })
	bucket := strings.ToLower(awstest.UniqueName(t, "ckpt"))
	if _, err := s3c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(bucket)}); err != nil {
		t.Fatal(err)
	}
	return runner.S3Blobs{Client: s3c, Bucket: bucket}
}

// keptBlobs is a BlobStore that keeps the keys written to it.
type keptBlobs struct {
	runner.BlobStore
	mu   sync.Mutex
	keys []string
}

func (b *keptBlobs) Put(ctx context.Context, key string, data []byte) error {
	b.mu.Lock()
	b.keys = append(b.keys, key)
	b.mu.Unlock()
	return b.BlobStore.Put(ctx, key, data)
}

// written returns the keys written under prefix.
func (b *keptBlobs) written(prefix string) []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []string
	for _, k := range b.keys {
		if strings.HasPrefix(k, prefix) {
			out = append(out, k)
		}
	}
	return out
}

// asJSON is msgs as the model's SDK would be sent them, to compare.
func asJSON(t *testing.T, msgs []model.Message) string {
	t.Helper()
	b, err := json.Marshal(msgs)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// byTurn returns, for each turn (the number of assistant messages the
// request holds), the conversation of the last request of that turn the
// recorder saw from call from on: a call cut short and asked again counts
// once, as asked again.
func (r *recorder) byTurn(t *testing.T, from int) map[int]string {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	out := map[int]string{}
	for _, msgs := range r.seen[from:] {
		n := 0
		for _, m := range msgs {
			if m.Role == model.Assistant {
				n++
			}
		}
		out[n] = asJSON(t, msgs)
	}
	return out
}

func (r *recorder) calls() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.seen)
}

func (r *recorder) call(n int) []model.Message {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.seen[n-1]
}

// fiveReads reads a.txt, big.txt (more than an item holds), c.txt, d.txt
// and e.txt, a turn each, then answers.
const fiveReads = `
[[turn]]
[[turn.tool_call]]
name = "read"
arguments = { path = "a.txt" }
[[turn]]
[[turn.tool_call]]
name = "read"
arguments = { path = "big.txt", limit = 2000 }
[[turn]]
[[turn.tool_call]]
name = "read"
arguments = { path = "c.txt" }
[[turn]]
[[turn.tool_call]]
name = "read"
arguments = { path = "d.txt" }
[[turn]]
[[turn.tool_call]]
name = "read"
arguments = { path = "e.txt" }
[[turn]]
text = "read them all"
`

// convEnv is an env for fiveReads over a checkpoint bucket, its model
// recorded, Slack answered, on clock (nil: the wall's).
func convEnv(t *testing.T, clock *fakeClock) (*env, *recorder, *keptBlobs, string) {
	t.Helper()
	var rec *recorder
	blobs := &keptBlobs{BlobStore: s3Blobs(t)}
	e := newEnv(t, fiveReads, func(c *runner.Config) {
		rec = &recorder{Model: c.Model}
		c.Model, c.Blobs, c.Margin = rec, blobs, time.Minute
		if clock != nil {
			clock.on(c)
		}
	})
	e.local.Register(invoke.Slack, (&slackFn{}).handle)
	for _, f := range []string{"a", "c", "d", "e"} {
		e.write(f+".txt", "notes of "+f+"\n")
	}
	e.write("big.txt", strings.Repeat(strings.Repeat("y", 3000)+"\n", 150)) // 450 KB: more than an item holds
	d := e.fleet(definition("convo", "read") + noMerge)
	return e, rec, blobs, d.Name
}

// TestResumedRunsSeeTheWholeConversation: a run that one invocation
// starts, another takes over when the first dies holding the lease, and a
// third gets handed over before the second's deadline, asks the model
// with the same conversation at every turn as a run that one invocation
// runs whole (a reply in the thread joined to the results of a turn
// already committed, a turn larger than an item in the bucket); and a
// Slack follow-up of each starts from the same conversation.
func TestResumedRunsSeeTheWholeConversation(t *testing.T) {
	t.Parallel()
	const reply = "and look at d first"

	// The reference: one invocation, the reply arriving during turn 2.
	ref, refRec, _, fleet := convEnv(t, nil)
	refID := ref.slackRun(fleet, "read the files")
	refRec.onCall = func(n int) {
		if n == 2 {
			if _, err := ref.store.SendToRun(ctx, refID, reply); err != nil {
				t.Error(err)
			}
		}
	}
	if err := ref.runner.Run(ctx, refID); err != nil {
		t.Fatal(err)
	}
	if run, end := ref.ended(refID); run.Status != store.StatusSucceeded || end.Answer != "read them all" {
		t.Fatalf("the reference run %s, %q", run.Status, end.Answer)
	}

	clock := newFakeClock()
	e, rec, blobs, _ := convEnv(t, clock)
	id := e.slackRun(fleet, "read the files")
	// The first invocation is killed in turn 3: turns 1 and 2 are
	// committed.
	first, kill := context.WithCancel(ctx)
	defer kill()
	rec.onCall = func(n int) {
		if n == 3 {
			kill()
		}
	}
	if err := e.runner.Run(first, id); err == nil {
		t.Fatal("the killed invocation returned no error")
	}
	// It died holding its lease; the reply arrives meanwhile.
	if _, err := e.store.AcquireLease(ctx, id, "inv_dead", time.Millisecond); err != nil {
		t.Fatal(err)
	}
	lapse(clock, func() time.Time { r, _ := e.store.GetRun(ctx, id); return r.LeaseUntil })
	if _, err := e.store.SendToRun(ctx, id, reply); err != nil {
		t.Fatal(err)
	}
	// The second takes the lapsed lease over; its deadline comes near in
	// its second turn (turn 4), and it hands the run to a third.
	rec.onCall = func(n int) {
		if n == 5 {
			clock.Advance(time.Hour)
		}
	}
	second, cancel := context.WithDeadline(ctx, clock.Now().Add(time.Hour))
	defer cancel()
	if err := e.runner.Run(second, id); err != nil {
		t.Fatal(err)
	}
	e.local.Wait()
	run, end := e.ended(id)
	if run.Status != store.StatusSucceeded || end.Answer != "read them all" {
		t.Fatalf("run %s, %q; want it succeeded", run.Status, end.Answer)
	}
	if n := rec.calls(); n != 7 {
		t.Fatalf("%d model calls, want 7 (6 turns, one of them asked again)", n)
	}

	want, got := refRec.byTurn(t, 0), rec.byTurn(t, 0)
	if len(got) != 6 {
		t.Fatalf("%d turns asked, want 6", len(got))
	}
	for turn := range 6 {
		if got[turn] != want[turn] {
			t.Errorf("turn %d saw\n%.600s\nwant\n%.600s", turn+1, got[turn], want[turn])
		}
	}
	if !strings.Contains(got[2], reply) || !strings.Contains(got[2], strings.Repeat("y", 3000)) {
		t.Errorf("turn 3 saw no reply or no big output: %.300s", got[2])
	}
	// Turn 2's results went to the bucket, whose keys are each written once.
	keys := blobs.written("checkpoints/" + id + "/turn-")
	if len(keys) == 0 || len(keys) != len(slices.Compact(slices.Sorted(slices.Values(keys)))) {
		t.Errorf("turn blobs written: %q; want some, none twice", keys)
	}
	// The checkpoint names the conversation; it does not hold it.
	if c, err := e.store.LoadCheckpoint(ctx, id); err != nil || len(c.Data) > 1024 {
		t.Errorf("the last checkpoint is %d bytes, %v; want it small", len(c.Data), err)
	}

	// A follow-up in each thread starts from the whole conversation.
	follow := func(e *env, rec *recorder, prev string) string {
		t.Helper()
		r, _, err := e.store.CreateRun(ctx, store.NewRun{Fleet: fleet, Source: store.SourceSlack, Input: []byte("and now?"),
			Thread: &store.Thread{Channel: "C0123", ThreadTS: "1733050000.000100"}, Continues: prev})
		if err != nil {
			t.Fatal(err)
		}
		from := rec.calls()
		if err := e.runner.Run(ctx, r.ID); err != nil {
			t.Fatal(err)
		}
		if rec.calls() == from {
			t.Fatal("the follow-up asked the model nothing")
		}
		return asJSON(t, rec.call(from+1))
	}
	gotFollow, wantFollow := follow(e, rec, id), follow(ref, refRec, refID)
	if gotFollow != wantFollow {
		t.Errorf("the follow-up saw\n%.600s\nwant\n%.600s", gotFollow, wantFollow)
	}
	if !strings.Contains(gotFollow, "read them all") || !strings.Contains(gotFollow, reply) {
		t.Errorf("the follow-up's conversation lacks the first run's: %.600s", gotFollow)
	}
}

// TestCompactionAcrossInvocations: a conversation compacted into a summary
// (after older outputs were cut) is what the next invocation reads back:
// the call a killed invocation was making is made again with the very
// same conversation, summary first.
func TestCompactionAcrossInvocations(t *testing.T) {
	t.Parallel()
	m := &compactModel{calls: 8}
	killAt := 0 // the model call the first invocation is killed in
	var rec *recorder
	e := newEnv(t, "[[turn]]\ntext = \"unused\"\n", func(c *runner.Config) {
		rec = &recorder{Model: m}
		c.Model, c.ContextTokens = rec, 4000
	})
	d := e.fleet(definition("long", "bash"))
	id := e.start(d, "print a lot")
	first, kill := context.WithCancel(ctx)
	defer kill()
	// Killed in a turn two bash calls after the first summary, so that
	// turns of their own follow the summary's.
	atSummary := int32(-1)
	rec.onCall = func(n int) {
		switch {
		case killAt != 0:
		case atSummary < 0:
			if m.summaries.Load() > 0 {
				atSummary = m.bash.Load()
			}
		case m.bash.Load() >= atSummary+2 && len(rec.call(n)) > 1: // not a summary's request
			killAt = n
			kill()
		}
	}
	if err := e.runner.Run(first, id); err == nil {
		t.Fatal("the killed invocation returned no error")
	}
	if killAt == 0 {
		t.Fatal("the run ended before it was compacted")
	}
	rec.onCall = nil
	if err := e.runner.Run(ctx, id); err != nil {
		t.Fatal(err)
	}
	run, end := e.ended(id)
	if run.Status != store.StatusSucceeded || end.Answer != "the task came as a summary" {
		t.Fatalf("run %s, answer %q", run.Status, end.Answer)
	}
	cut, again := asJSON(t, rec.call(killAt)), asJSON(t, rec.call(killAt+1))
	if cut != again {
		t.Fatalf("the call made again saw\n%.800s\nthe cut one\n%.800s", again, cut)
	}
	if !strings.Contains(rec.call(killAt + 1)[0].Text(), "SUMMARY: printed a lot with bash") {
		t.Fatalf("the resumed conversation does not start with the summary: %.300s", again)
	}
}

// TestChildResumesItsConversation: a child agent's conversation is kept in
// turns of its own: the invocation that goes on after one was killed asks
// the model with the conversation the killed one had.
func TestChildResumesItsConversation(t *testing.T) {
	t.Parallel()
	var rec *recorder
	e := newEnv(t, fiveReads, func(c *runner.Config) {
		rec = &recorder{Model: c.Model}
		c.Model, c.Blobs = rec, s3Blobs(t)
	})
	for _, f := range []string{"a", "c", "d", "e"} {
		e.write(f+".txt", "notes of "+f+"\n")
	}
	e.write("big.txt", strings.Repeat(strings.Repeat("y", 3000)+"\n", 150))
	d := e.fleet(definition("kids", "read"))
	id := e.start(d, "delegate")
	if _, err := e.store.Transition(ctx, id, store.StatusRunning, ""); err != nil {
		t.Fatal(err)
	}
	kid, _, err := e.store.StartChild(ctx, store.NewChild{RunID: id, Task: "read the files", Tools: []string{"read"}})
	if err != nil {
		t.Fatal(err)
	}
	first, kill := context.WithCancel(ctx)
	defer kill()
	rec.onCall = func(n int) {
		if n == 4 {
			kill()
		}
	}
	if err := e.runner.RunChild(first, id, kid.ID); err == nil {
		t.Fatal("the killed invocation returned no error")
	}
	rec.onCall = nil
	if err := e.runner.RunChild(ctx, id, kid.ID); err != nil {
		t.Fatal(err)
	}
	c, err := e.store.GetChild(ctx, id, kid.ID)
	if err != nil || c.Status != store.ChildDone || c.Result != "read them all" {
		t.Fatalf("child %s %q, %v", c.Status, c.Result, err)
	}
	if cut, again := asJSON(t, rec.call(4)), asJSON(t, rec.call(5)); cut != again {
		t.Fatalf("the call made again saw\n%.600s\nthe cut one\n%.600s", again, cut)
	}
	// The run's own agent has no turns of the child's.
	if turns, err := e.store.ListTurns(ctx, id, "", 1, 100); err != nil || len(turns) != 0 {
		t.Fatalf("the run's turns: %d, %v; want none", len(turns), err)
	}
}

// TestVersion1CheckpointLoads: a run checkpointed by a runner that kept
// the conversation inline (version 1) goes on from that conversation, and
// a follow-up reads it back from the turns the new runner wrote.
func TestVersion1CheckpointLoads(t *testing.T) {
	t.Parallel()
	var rec *recorder
	e := newEnv(t, fiveReads, func(c *runner.Config) { rec = &recorder{Model: c.Model}; c.Model = rec })
	e.local.Register(invoke.Slack, (&slackFn{}).handle)
	e.write("big.txt", "small after all\n")
	d := e.fleet(definition("old", "read") + noMerge)
	id := e.slackRun(d.Name, "read the files")
	old := []model.Message{
		{Role: model.User, Content: []model.Part{{Text: "read the files"}}},
		{Role: model.Assistant, Content: []model.Part{{ToolCall: &model.ToolCall{ID: "call_1_1", Name: "read", Arguments: json.RawMessage(`{"path":"a.txt"}`)}}}},
		{Role: model.User, Content: []model.Part{{ToolResult: &model.ToolResult{CallID: "call_1_1", Name: "read", Output: "1\tnotes of a (as the old runner read them)"}}}},
	}
	v1, err := json.Marshal(map[string]any{"v": 1, "messages": old, "usage": map[string]int{"input_tokens": 10, "output_tokens": 5, "tool_calls": 1}})
	if err != nil {
		t.Fatal(err)
	}
	// The old runner committed run.started and turn 1, and was replaced.
	if _, err := e.store.AcquireLease(ctx, id, "old_runner", time.Minute); err != nil {
		t.Fatal(err)
	}
	if _, err := e.store.Transition(ctx, id, store.StatusRunning, ""); err != nil {
		t.Fatal(err)
	}
	for n, ckpt := range [][]byte{nil, v1} {
		if _, err := e.store.CommitStep(ctx, id, store.Step{Holder: "old_runner", Number: int64(n + 1), Checkpoint: ckpt,
			Events: []store.NewEvent{{Type: "old"}}}); err != nil {
			t.Fatal(err)
		}
	}
	if err := e.store.ReleaseLease(ctx, id, "old_runner"); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"c", "d", "e"} {
		e.write(f+".txt", "notes of "+f+"\n")
	}
	if err := e.runner.Run(ctx, id); err != nil {
		t.Fatal(err)
	}
	if run, end := e.ended(id); run.Status != store.StatusSucceeded || end.Answer != "read them all" || end.Usage.ToolCalls != 5 {
		t.Fatalf("run %s, %+v; want it succeeded, counting the old runner's call", run.Status, end)
	}
	if got, want := asJSON(t, rec.call(1)), asJSON(t, old); got != want {
		t.Fatalf("the first call after the upgrade saw\n%s\nwant the old checkpoint's\n%s", got, want)
	}
	last := rec.call(rec.calls())
	r, _, err := e.store.CreateRun(ctx, store.NewRun{Fleet: d.Name, Source: store.SourceSlack, Input: []byte("and now?"),
		Thread: &store.Thread{Channel: "C0123", ThreadTS: "1733050000.000100"}, Continues: id})
	if err != nil {
		t.Fatal(err)
	}
	from := rec.calls()
	if err := e.runner.Run(ctx, r.ID); err != nil {
		t.Fatal(err)
	}
	got := rec.call(from + 1)
	if len(got) != len(last)+2 || asJSON(t, got[:len(last)]) != asJSON(t, last) || got[len(last)].Text() != "read them all" {
		t.Fatalf("the follow-up saw %d messages:\n%.800s\nwant the %d of the last call, the answer and its input", len(got), asJSON(t, got), len(last))
	}
}
