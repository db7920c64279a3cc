package keeper

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/agentsfleet/agentsfleet/shared/invoke"
	"github.com/agentsfleet/agentsfleet/shared/run"
	"github.com/agentsfleet/agentsfleet/shared/run/start"
	"github.com/agentsfleet/agentsfleet/shared/store"
)

// The sweep. A run's invocation can die without handing the run over: all
// of Lambda's retries failing while the store is unreachable, a crash
// after the lease was taken, a start invocation lost. Nothing would invoke
// the run again, and it would stay running (or queued) for ever. The
// deployment's sweep schedule has the schedule function call Sweep every
// few minutes (eventbridge.SweepPayload); `agentsfleet dev` does it on a
// ticker.

// DefaultSweepGrace is how long a run or child agent may go without a
// holder before a sweep re-invokes it, unless Config.SweepGrace says
// otherwise: time for Lambda's own retries of a dead invocation (a minute,
// then two) and for a start invocation that waits in Lambda's queue.
const DefaultSweepGrace = 2 * time.Minute

// EnvSweepGrace is the schedule function's setting for Config.SweepGrace,
// in whole seconds.
const EnvSweepGrace = "AGENTSFLEET_SWEEP_GRACE_SECONDS"

// SweepFromEnv reads Config.SweepGrace from EnvSweepGrace: 0 (the default
// grace) when it is unset; a value that is not a whole number of seconds
// from 1 to 86400 is an error naming it.
func SweepFromEnv(getenv func(string) string) (time.Duration, error) {
	v := strings.TrimSpace(getenv(EnvSweepGrace))
	if v == "" {
		return 0, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > 86400 {
		return 0, fmt.Errorf("%s=%q: want whole seconds from 1 to 86400 (default %d)", EnvSweepGrace, v, int(DefaultSweepGrace.Seconds()))
	}
	return time.Duration(n) * time.Second, nil
}

// Sweep re-invokes the runner (invoke.Runner, asynchronously) on each run
// and child agent that has had no holder for grace or longer: queued and
// running runs and running children whose lease ran out unrenewed, was
// released and not taken again, or was never taken (store.ListLapsed), at
// most Config.SweepLimit of them, oldest first, and returns them. The
// runner's own lease logic does the rest: it takes the lapsed lease over
// and counts the takeover, and fails the run (or child) with
// runner_stopped after the takeovers it may have (run.CodeStopped).
//
// A run whose holder is alive is never re-invoked: a live holder renews its
// lease every third of it, so its lease never runs out. Sweep writes
// nothing itself; it is safe to run again and concurrently (an invocation
// more finds the lease taken and leaves). An invocation it could not start
// is reported in the error, after the others were started; the next sweep
// tries it again.
//
// It also expires the approvals that are due, and starts the runs that
// then wait for none (expireApprovals).
func (k *Keeper) Sweep(ctx context.Context, grace time.Duration) ([]store.Lapsed, error) {
	found, err := k.st.ListLapsed(ctx, k.now().Add(-grace), k.sweepLimit)
	if err != nil {
		return nil, fmt.Errorf("sweep: %w", err)
	}
	var errs []error
	started := found[:0]
	for _, l := range found {
		payload, _ := json.Marshal(run.Payload{RunID: l.RunID, ChildID: l.ChildID})
		if err := k.inv.Start(ctx, invoke.Runner, payload); err != nil {
			errs = append(errs, fmt.Errorf("sweep: re-invoke %s: %w", payload, err))
			continue
		}
		k.log.Warn("sweep: re-invoked a run nobody was executing", "run_id", l.RunID, "child_id", l.ChildID,
			"since", l.Since, "lapsed_holder", l.Holder)
		started = append(started, l)
	}
	if len(found) > 0 || len(errs) > 0 {
		k.log.Info("sweep", "found", len(found), "reinvoked", len(started), "grace", grace)
	}
	errs = append(errs, k.expireApprovals(ctx))
	return started, errors.Join(errs...)
}

// expireApprovals expires the approvals nobody answered in time
// ([x-agentsfleet.approval] expire_hours) and starts the runner on each
// run that no longer waits for any: its model is told the calls expired.
// A start that fails leaves the run running with nobody holding it,
// which the next sweep's ListLapsed finds.
func (k *Keeper) expireApprovals(ctx context.Context) error {
	resumed, err := k.st.ExpireApprovals(ctx, k.now(), k.sweepLimit)
	var errs []error
	if err != nil {
		errs = append(errs, fmt.Errorf("sweep: expire approvals: %w", err))
	}
	for _, id := range resumed {
		if err := start.Invoke(ctx, k.inv, id); err != nil {
			errs = append(errs, fmt.Errorf("sweep: after its approvals expired: %w", err))
			continue
		}
		k.log.Info("sweep: approvals expired; the run goes on", "run_id", id)
	}
	return errors.Join(errs...)
}
