// Package start starts runs: how every door (the HTTP API, webhooks,
// Slack, schedules) records a run and invokes the runner on it. It needs
// only the store and the invoker, so that the functions starting runs do
// not link the agent loop.
package start

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/agentsfleet/agentsfleet/shared/fleet"
	"github.com/agentsfleet/agentsfleet/shared/invoke"
	"github.com/agentsfleet/agentsfleet/shared/run"
	"github.com/agentsfleet/agentsfleet/shared/store"
)

// Run records a run and starts the runner on it. The run pins the fleet's
// current revision, and takes its Definition's budget unless nr sets
// Limits.
//
// With nr.Idempotency, a retry returns the first run with created false;
// one still queued (its first invocation may have been lost) gets the
// runner invoked again, which is harmless: an invocation finding the run
// leased or started goes on from where it is. The store's errors come back
// as they are (fault.FleetNotFound, fault.FleetPaused, …); an invocation
// that fails leaves the run queued and is an error.
func Run(ctx context.Context, st *store.Store, inv invoke.Invoker, nr store.NewRun) (r store.Run, created bool, err error) {
	if nr.Revision == 0 {
		rev, err := st.CurrentRevision(ctx, nr.Fleet)
		if err != nil {
			return store.Run{}, false, fmt.Errorf("start a run of %s: %w", nr.Fleet, err)
		}
		nr.Revision = rev.Number
		if nr.Limits == (store.Budget{}) {
			def, err := fleet.ParseJSON(rev.Definition)
			if err != nil {
				return store.Run{}, false, fmt.Errorf("start a run of %s: revision %d cannot be read: %w", nr.Fleet, rev.Number, err)
			}
			nr.Limits = store.Budget{Tokens: def.Limits.Budget.Tokens, ToolCalls: int64(def.Limits.Budget.ToolCalls)}
		}
	}
	r, created, err = st.CreateRun(ctx, nr)
	if err != nil {
		return store.Run{}, false, err
	}
	if created || r.Status == store.StatusQueued {
		if err := Invoke(ctx, inv, r.ID); err != nil {
			return r, created, err
		}
	}
	return r, created, nil
}

// Invoke starts the runner, asynchronously, on run id, recorded already:
// a new run, or one that a decision or a cancel left for an invocation to
// go on with or end. The invocation outlives ctx's cancellation (a request
// that asked for it may end first).
func Invoke(ctx context.Context, inv invoke.Invoker, id string) error {
	payload, _ := json.Marshal(run.Payload{RunID: id})
	if err := inv.Start(context.WithoutCancel(ctx), invoke.Runner, payload); err != nil {
		return fmt.Errorf("start the runner on run %s: %w", id, err)
	}
	return nil
}
