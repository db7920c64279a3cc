package control

import (
	"context"
	"encoding/json"

	"github.com/agentsfleet/agentsfleet/shared/run"
)

// Children is what the six child-agent tools need of the runner, for one
// call of one agent of a run (the run's own agent, or a child): the runner
// implements it over the store. An error is the environment failing, not
// a mistake the model can fix, unless a method says otherwise.
type Children interface {
	// Grant is what the calling agent holds, which a child's share is
	// taken from.
	Grant() Grant
	// Start records the child and starts its first invocation; name and
	// args are the call's, which key the record, so that a retried step
	// gets the same child back. Any error is the model's to see: its text
	// says why the child was not started.
	Start(ctx context.Context, name string, args SpawnAgentArgs, c NewChild) (Child, error)
	// Get returns a child of the run; fault.ChildNotFound for an id the
	// run never issued.
	Get(ctx context.Context, id string) (Child, error)
	// Events returns the child's n latest events.
	Events(ctx context.Context, id string, n int) ([]Event, error)
	// List returns the run's children.
	List(ctx context.Context) ([]Child, error)
	// Interrupt ends a working child as interrupted by the caller, with
	// its own children; false when it had already ended.
	Interrupt(ctx context.Context, c Child) (bool, error)
	// Cancelled reports whether the run was seen cancelled.
	Cancelled() bool
}

// Grant is what an agent holds of its fleet's.
type Grant struct {
	Tools   []string // sorted
	Secrets []string // the names of its secrets, sorted
	Hosts   []string // its host list entries
	// Depth is 0 for the run's own agent, 1 for a child: a child's
	// children (limit.ChildDepth) hold no child-agent tools.
	Depth int
}

// NewChild is a child to start: its task and its share.
type NewChild struct {
	Task    string
	Tools   []string
	Secrets []string
	Hosts   []string
	Budget  *ChildBudget // nil: no share of its own
}

// Child is a child agent of the run.
type Child struct {
	ID       string
	ParentID string // "" for a child of the run's own agent
	Task     string
	Status   run.ChildStatus
	Tools    []string
	// Result is a done child's answer, or why a failed one failed.
	Result string
	Spent  Spent
}

// Spent is what a child has spent. Its JSON is the model's as it always
// was: {"Tokens": …, "ToolCalls": …}.
type Spent struct {
	Tokens    int64
	ToolCalls int64
}

// Event is one of a child's events: its type and data, as committed.
type Event struct {
	Type string
	Data json.RawMessage
}

// IsAgentTool reports whether name is one of the six child-agent tools,
// which a grandchild is never offered.
func IsAgentTool(name string) bool {
	switch name {
	case SpawnAgentSpec.Name(), DelegateAgentSpec.Name(), WaitAgentSpec.Name(),
		InspectAgentSpec.Name(), InterruptAgentSpec.Name(), ListAgentsSpec.Name():
		return true
	}
	return false
}
