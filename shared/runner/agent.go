package runner

import (
	"context"

	"github.com/agentsfleet/agentsfleet/shared/fleet"
	"github.com/agentsfleet/agentsfleet/shared/run"
	"github.com/agentsfleet/agentsfleet/shared/store"
)

// agent is what differs between the run's own agent (ownAgent) and a child
// agent (childAgent); the loop (execution) is the same for both. Each has
// a lease, a checkpoint and steps of its own; they differ in where those
// are kept, in how the agent starts and ends, in what stops it, and in
// what of the fleet's it may use.
type agent interface {
	leased
	// id is the child's id, "" for the run's own agent: the Agent of the
	// events it commits and the notes an Observer sees.
	id() string
	// what names the agent in messages: "run" or "child agent".
	what() string
	// load reads the agent's checkpoint and the run's Definition into x.
	// It reports false when there is nothing left to do (err is the end's,
	// when load ended the agent).
	load(ctx context.Context, x *execution) (bool, error)
	// start commits step 1.
	start(ctx context.Context, x *execution) error
	// commit commits st, whose checkpoint and events are set, as the
	// agent's next step, and returns the seq of its first event.
	commit(ctx context.Context, x *execution, st store.Step) (int64, error)
	// end commits the agent's last step: succeeded with answer, failed
	// (runErr says why) or cancelled. spend is the last model call's,
	// when that call is what ended it.
	end(ctx context.Context, x *execution, status store.Status, answer string, runErr *run.Error, spend store.Budget) error
	// stopped is the status watch's look, between turns, at whether the
	// agent must stop; true ends the watch.
	stopped(ctx context.Context, x *execution) bool
	// share reports whether spend fits the agent's own share of the run's
	// budget, saying which figure runs out if not.
	share(spend store.Budget) (string, bool)
	// prompt is the system prompt's words on who the agent is and whom
	// its answer reaches.
	prompt(x *execution) (who, answer string)
	// grant is what the agent may use of the fleet's.
	grant(def *fleet.Definition) grant
	// releaseSandbox lets the run's sandbox go, when the agent is the one
	// that holds it.
	releaseSandbox(ctx context.Context, x *execution) error
}

// grant is what an agent may use of its fleet's: all the Definition
// allows (the run's own agent), or a child's share of it.
type grant struct {
	tools   []string          // the tools it holds
	secrets map[string]string // the secrets its web tools may use: name → secret id
	hosts   []string          // the host list entries its web tools may reach
	depth   int               // 0 for the run's own agent, 1 for a child, 2 for a grandchild
}

// agentOf is the agent a payload names.
func (r *Runner) agentOf(p run.Payload) agent {
	if p.ChildID != "" {
		return &childAgent{st: r.cfg.Store, runID: p.RunID, childID: p.ChildID}
	}
	return ownAgent{st: r.cfg.Store, runID: p.RunID}
}
