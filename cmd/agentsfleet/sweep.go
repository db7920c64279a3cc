package main

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/agentsfleet/agentsfleet/shared/invoke"
	"github.com/agentsfleet/agentsfleet/shared/schedule/eventbridge"
	"github.com/agentsfleet/agentsfleet/shared/schedule/keeper"
)

// devSweep is how often `agentsfleet dev` sweeps: more often than the
// deployment's sweep schedule (every five minutes), a machine being where
// runners are stopped by hand.
const devSweep = time.Minute

// RunSweep sweeps every interval until the stack closes: it hands the
// schedule λ's handler (Keeper.Fire) the sweep payload, as the
// deployment's sweep schedule does, so that a run whose invocation died
// (the process stopped mid-run, a start lost) is re-invoked and finished.
// AGENTSFLEET_SWEEP_GRACE_SECONDS sets the grace, as in the schedule
// function.
func (s *stack) RunSweep(interval time.Duration, getenv func(string) string) error {
	grace, err := keeper.SweepFromEnv(getenv)
	if err != nil {
		return fmt.Errorf("%w: %v", errUsage, err)
	}
	payload := eventbridge.SweepInput()
	if grace > 0 {
		secs := int(grace / time.Second)
		payload, _ = json.Marshal(eventbridge.SweepPayload{Kind: eventbridge.KindSweep, GraceSeconds: &secs})
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				// Through the schedule function's own handler, as the
				// deployment's Sweep schedule invokes it. It logs what it
				// re-invokes; an error is the store's, and the next tick
				// tries again.
				_, _ = s.Funcs.Call(ctx, invoke.Schedule, payload)
			}
		}
	}()
	// Before the functions close: a sweep under way finishes first.
	s.closers = append(s.closers, func() { cancel(); <-done })
	return nil
}
