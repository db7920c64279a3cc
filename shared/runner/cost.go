package runner

import (
	"context"
	"time"

	"github.com/agentsfleet/agentsfleet/shared/cost"
	"github.com/agentsfleet/agentsfleet/shared/model"
	"github.com/agentsfleet/agentsfleet/shared/run"
	"github.com/agentsfleet/agentsfleet/shared/store"
)

// used notes a model call's tokens for the next commit (Step.Tokens).
func (x *execution) used(u model.Usage) {
	x.unsent.Input += u.InputTokens
	x.unsent.Output += u.OutputTokens
}

// addRunTime adds the invocation's time, and the time the run's own
// agent had its sandbox in it, to the run's (what its cost counts), once
// the invocation is over. A sandbox left while the run waits for a person
// stops on its idle timeout, unpriced.
func (x *execution) addRunTime(ctx context.Context) {
	if err := x.r.cfg.Store.AddRunTime(context.WithoutCancel(ctx), x.run.ID, x.spent()); err != nil {
		x.r.log.Warn("the invocation's time was not added to the run's", "run_id", x.run.ID, "error", err)
	}
}

// spent is the invocation's time so far, and its sandbox's.
func (x *execution) spent() store.RunTime {
	t := store.RunTime{Runner: time.Since(x.began)}
	if !x.sandboxFrom.IsZero() {
		t.Sandbox = time.Since(x.sandboxFrom)
	}
	return t
}

// cost reckons what the run cost as its own agent ends it (Config.Prices;
// nil without them): every agent's tokens, those the last step carries
// included; the runner's time and the sandbox's, this invocation's so far
// included.
func (x *execution) cost(ctx context.Context) *run.Cost {
	if x.r.cfg.Prices == nil {
		return nil
	}
	rn, err := x.r.cfg.Store.GetRun(context.WithoutCancel(ctx), x.run.ID)
	if err != nil {
		x.r.log.Warn("the run's cost was not reckoned", "run_id", x.run.ID, "error", err)
		return nil
	}
	now := x.spent()
	size := x.spec().Size
	u := cost.Usage{
		Model:           x.modelID(),
		InputTokens:     rn.Tokens.Input + x.unsent.Input,
		OutputTokens:    rn.Tokens.Output + x.unsent.Output,
		RunnerTime:      rn.Time.Runner + now.Runner,
		RunnerMemoryMiB: x.r.cfg.MemoryMiB,
		SandboxTime:     rn.Time.Sandbox + now.Sandbox,
		SandboxCPU:      size.CPU(), SandboxMemoryMiB: size.MemoryMiB(),
	}
	c := x.r.cfg.Prices.Of(u)
	return &c
}
