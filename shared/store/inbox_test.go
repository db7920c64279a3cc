package store_test

import (
	"errors"
	"testing"

	"github.com/agentsfleet/agentsfleet/shared/fault"
	"github.com/agentsfleet/agentsfleet/shared/store"
)

func TestInbox(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.fleet(t, "ops")
	r := e.run(t, "ops", true) // queued: already takes messages
	var seqs [5]int64
	var errs [5]error
	parallel(5, func(i int) { seqs[i], errs[i] = e.SendToRun(ctx, r.ID, "more") })
	seen := map[int64]bool{}
	for i := range seqs {
		if errs[i] != nil || seqs[i] < 1 || seqs[i] > 5 || seen[seqs[i]] {
			t.Fatalf("SendToRun = %d, %v (seen %v)", seqs[i], errs[i], seen)
		}
		seen[seqs[i]] = true
	}
	msgs, err := e.Inbox(ctx, r.ID, 2)
	if err != nil || len(msgs) != 3 || msgs[0].Seq != 3 || msgs[2].Seq != 5 || msgs[0].Text != "more" {
		t.Fatalf("Inbox(after 2) = %+v, %v", msgs, err)
	}
	if msgs, _ := e.Inbox(ctx, r.ID, 5); len(msgs) != 0 {
		t.Fatalf("Inbox(after 5) = %+v", msgs)
	}
	// An ended run takes no more; the caller starts another.
	if _, err := e.Transition(ctx, r.ID, store.StatusCancelled, ""); err != nil {
		t.Fatal(err)
	}
	if _, err := e.SendToRun(ctx, r.ID, "late"); !errors.Is(err, store.ErrRunEnded) {
		t.Fatalf("SendToRun to a cancelled run = %v, want ErrRunEnded", err)
	}
	_, err = e.SendToRun(ctx, "run_nope", "x")
	wantCode(t, err, fault.RunNotFound)
	_, err = e.SendToRun(ctx, r.ID, "")
	wantCode(t, err, fault.RequestInvalid)
}
