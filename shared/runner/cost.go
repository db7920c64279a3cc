package runner

import (
	"context"
	"time"

	"github.com/agentsfleet/agentsfleet/shared/cost"
	"github.com/agentsfleet/agentsfleet/shared/model"
	"github.com/agentsfleet/agentsfleet/shared/run"
)

// used notes a model call's tokens for the next commit (Step.Tokens).
func (x *execution) used(u model.Usage) {
	x.unsent.Input += u.InputTokens
	x.unsent.Output += u.OutputTokens
}

// addRunnerTime adds the invocation's time to the run's (what its cost
// counts), once it is over.
func (x *execution) addRunnerTime(ctx context.Context) {
	if err := x.r.cfg.Store.AddRunnerTime(context.WithoutCancel(ctx), x.run.ID, time.Since(x.began)); err != nil {
		x.r.log.Warn("the invocation's time was not added to the run's", "run_id", x.run.ID, "error", err)
	}
}

// cost reckons what the run cost as its own agent ends it (Config.Prices;
// nil without them): every agent's tokens, those the last step carries
// included; the runner's time, this invocation's so far included; and its
// sandbox's from the first claim to now.
func (x *execution) cost(ctx context.Context) *run.Cost {
	if x.r.cfg.Prices == nil {
		return nil
	}
	rn, err := x.r.cfg.Store.GetRun(context.WithoutCancel(ctx), x.run.ID)
	if err != nil {
		x.r.log.Warn("the run's cost was not reckoned", "run_id", x.run.ID, "error", err)
		return nil
	}
	now := time.Now()
	u := cost.Usage{
		Model:           x.modelID(),
		InputTokens:     rn.Tokens.Input + x.unsent.Input,
		OutputTokens:    rn.Tokens.Output + x.unsent.Output,
		RunnerTime:      rn.RunnerTime + now.Sub(x.began),
		RunnerMemoryMiB: x.r.cfg.MemoryMiB,
	}
	if since := x.st.SandboxSince; !since.IsZero() {
		size := x.spec().Size
		u.SandboxTime, u.SandboxCPU, u.SandboxMemoryMiB = max(now.Sub(since), 0), size.CPU(), size.MemoryMiB()
	}
	c := x.r.cfg.Prices.Of(u)
	return &c
}
