//go:build linux

package runner_test

import (
	"testing"

	"github.com/agentsfleet/agentsfleet/shared/run/start"
	"github.com/agentsfleet/agentsfleet/shared/store"
)

// TestStartPinsTheRevisionAndItsBudget: start.Run records the run on
// the fleet's current revision with its Definition's budget, starts the
// runner on it, and a retry with the same key starts nothing new.
func TestStartPinsTheRevisionAndItsBudget(t *testing.T) {
	t.Parallel()
	e := newEnv(t, "[[turn]]\ntext = \"started\"\n")
	d := e.fleet(definition("starter", "read") + "[x-agentsfleet.limits.budget]\ntokens = 5000\ntool_calls = 7\n")
	key := &store.IdempotencyKey{Scope: "test", Key: "once"}
	run, created, err := start.Run(ctx, e.store, e.local, store.NewRun{Fleet: d.Name, Source: store.SourceAPI, Input: []byte("go"), Idempotency: key})
	if err != nil || !created {
		t.Fatalf("Start = %v, %v", created, err)
	}
	if run.Revision != 1 || run.Limits != (store.Budget{Tokens: 5000, ToolCalls: 7}) {
		t.Fatalf("run pins revision %d with limits %+v; want 1 with the Definition's budget", run.Revision, run.Limits)
	}
	again, created, err := start.Run(ctx, e.store, e.local, store.NewRun{Fleet: d.Name, Source: store.SourceAPI, Input: []byte("go"), Idempotency: key})
	if err != nil || created || again.ID != run.ID {
		t.Fatalf("retry = %s, %v, %v; want %s again", again.ID, created, err, run.ID)
	}
	e.local.Wait()
	if got, end := e.ended(run.ID); got.Status != store.StatusSucceeded || end.Answer != "started" {
		t.Fatalf("run %s, answer %q", got.Status, end.Answer)
	}
}
