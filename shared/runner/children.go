package runner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/agentsfleet/agentsfleet/shared/fault"
	"github.com/agentsfleet/agentsfleet/shared/fleet"
	"github.com/agentsfleet/agentsfleet/shared/invoke"
	"github.com/agentsfleet/agentsfleet/shared/model"
	"github.com/agentsfleet/agentsfleet/shared/run"
	"github.com/agentsfleet/agentsfleet/shared/runner/control"
	"github.com/agentsfleet/agentsfleet/shared/store"
)

// gone ends an execution whose child was ended by someone else
// (interrupt_agent, the run's end): nothing more is committed; the
// sessions it started are closed.
func (x *execution) gone(ctx context.Context) error {
	x.r.log.Info("child ended elsewhere", "run_id", x.run.ID, "child_id", x.agent.id(), "step", x.step)
	x.closeSessions(ctx, x.agent.id())
	return nil
}

func agentEvent(ev store.NewEvent, agent string) store.NewEvent {
	ev.Agent = agent
	return ev
}

// interruptAll ends every child of the run still working, as the run
// ends. Two passes: a child may have started one of its own meanwhile. A
// run that never started one (none when this invocation took it, none
// since) costs no read.
func (x *execution) interruptAll(ctx context.Context) {
	if x.run.ChildrenStarted == 0 && !x.spawned.Load() {
		return
	}
	ctx = context.WithoutCancel(ctx)
	for range 2 {
		kids, err := x.r.cfg.Store.ListChildren(ctx, x.run.ID)
		if err != nil {
			x.r.log.Warn("list the run's children", "run_id", x.run.ID, "error", err)
			return
		}
		n := 0
		for _, k := range kids {
			if k.Status != store.ChildRunning {
				continue
			}
			n++
			if _, err := x.interrupt(ctx, k, run.InterruptedByRunEnd, false); err != nil {
				x.r.log.Warn("interrupt a child", "run_id", x.run.ID, "child_id", k.ID, "error", err)
			}
		}
		if n == 0 {
			return
		}
	}
}

// interruptChildrenOf ends the children of the child parentID still
// working: a child that ends takes its own children with it.
func (x *execution) interruptChildrenOf(ctx context.Context, parentID string) {
	ctx = context.WithoutCancel(ctx)
	kids, err := x.r.cfg.Store.ListChildren(ctx, x.run.ID)
	if err != nil {
		x.r.log.Warn("list the run's children", "run_id", x.run.ID, "error", err)
		return
	}
	for _, k := range kids {
		if k.ParentID == parentID && k.Status == store.ChildRunning {
			if _, err := x.interrupt(ctx, k, parentID, true); err != nil {
				x.r.log.Warn("interrupt a child", "run_id", x.run.ID, "child_id", k.ID, "error", err)
			}
		}
	}
}

// interrupt ends child c as interrupted, with its child.ended event saying
// by whom (InterruptedByRunEnd, a child id, or "" for the run's own
// agent), and with tree its own children too. It closes c's sessions: its
// own execution closes them when it notices, but may not be running. It
// reports false when c had already ended.
func (x *execution) interrupt(ctx context.Context, c store.Child, by string, tree bool) (bool, error) {
	if by == "" {
		by = run.InterruptedByAgent
	}
	ended := run.ChildEnded{ChildID: c.ID, Status: store.ChildInterrupted, ParentID: c.ParentID, InterruptedBy: by}
	ev := agentEvent(newEvent(run.EventChildEnded, ended), x.agent.id())
	_, seq, err := x.r.cfg.Store.FinishChild(ctx, x.run.ID, c.ID, store.ChildInterrupted, "", ev)
	if errors.Is(err, store.ErrChildEnded) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	x.noteEvent(seq, ev)
	if holdsSession(c.Tools) {
		x.closeSessions(ctx, c.ID)
	}
	if tree {
		x.interruptChildrenOf(ctx, c.ID)
	}
	return true, nil
}

// noteEvent shows the Observer an event committed outside x.commit.
func (x *execution) noteEvent(seq int64, ev store.NewEvent) {
	if x.r.cfg.Observer != nil && seq > 0 {
		x.note(Note{Event: &run.Event{Seq: seq, Type: ev.Type, Time: x.r.cfg.Now().UTC().Format(time.RFC3339Nano), Agent: ev.Agent, Data: ev.Data}})
	}
}

// closeSessions closes the exec_command sessions agent started in the
// run's sandbox, if this execution holds the sandbox.
func (x *execution) closeSessions(ctx context.Context, agent string) {
	x.mu.Lock()
	sb := x.sandbox
	x.mu.Unlock()
	if sb == nil || agent == "" {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	n, err := sb.Client.CloseSessions(ctx, agent)
	if err != nil {
		x.r.log.Warn("close a child's sessions", "run_id", x.run.ID, "child_id", agent, "error", err)
		return
	}
	if n > 0 {
		x.r.log.Info("closed a child's sessions", "run_id", x.run.ID, "child_id", agent, "sessions", n)
	}
}

func holdsSession(tools []string) bool {
	return slices.Contains(tools, "exec_command") || slices.Contains(tools, "write_stdin")
}

func mustJSON(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// children is control.Children for call number call of the execution's
// next step, over the store.
type children struct {
	x    *execution
	call int
}

var _ control.Children = children{}

// Grant is what the agent holds: its tools, its secrets' names, its hosts.
func (c children) Grant() control.Grant {
	g := c.x.agent.grant(c.x.def)
	return control.Grant{Tools: c.x.heldTools(), Secrets: g.secretNames(), Hosts: nonNil(g.hosts), Depth: g.depth}
}

// Start records the child (keyed by the call) and starts its first
// invocation. The child uses the run's sandbox: it is had before the
// child starts, so that the two never start one each.
func (c children) Start(ctx context.Context, name string, args control.SpawnAgentArgs, nc control.NewChild) (control.Child, error) {
	x := c.x
	if x.usesSandboxTool(nc.Tools) {
		if _, err := x.acquireSandbox(ctx); err != nil {
			x.r.log.Warn("no sandbox for a child", "run_id", x.run.ID, "error", err)
		}
	}
	var limits store.Budget
	if nc.Budget != nil {
		limits = store.Budget{Tokens: nc.Budget.Tokens, ToolCalls: int64(nc.Budget.ToolCalls)}
	}
	call := model.ToolCall{Name: name, Arguments: mustJSON(args)}
	k, created, err := x.r.cfg.Store.StartChild(ctx, store.NewChild{RunID: x.run.ID, ParentID: x.agent.id(), Task: nc.Task,
		Tools: nc.Tools, Secrets: nc.Secrets, Hosts: nc.Hosts, Limits: limits, Key: x.idempotencyKey(c.call, call)})
	var fe *fault.Error
	switch {
	case errors.As(err, &fe):
		return control.Child{}, fe
	case errors.Is(err, store.ErrRunEnded), errors.Is(err, store.ErrChildEnded):
		return control.Child{}, fmt.Errorf("the run (or the agent starting the child) is no longer working: %w", err)
	case err != nil:
		return control.Child{}, fmt.Errorf("the child could not be recorded: %w", err)
	}
	x.spawned.Store(true)
	// A retried step finds its child; start it again if its first
	// invocation never took it (a second one finds the lease held).
	if created || (k.Status == store.ChildRunning && k.CheckpointStep == 0 && k.LeaseHolder == "") {
		if err := x.invokeChild(ctx, k); err != nil {
			return control.Child{}, fmt.Errorf("the child %s could not be started: %w", k.ID, err)
		}
	}
	return childOf(k), nil
}

// invokeChild starts the first invocation of child k; a child that cannot
// be invoked ends failed, saying why.
func (x *execution) invokeChild(ctx context.Context, k store.Child) error {
	payload, _ := json.Marshal(run.Payload{RunID: x.run.ID, ChildID: k.ID})
	err := x.r.cfg.Invoker.Start(context.WithoutCancel(ctx), invoke.Runner, payload)
	if err != nil {
		ended := run.ChildEnded{ChildID: k.ID, Status: store.ChildFailed, ParentID: k.ParentID,
			Error: &run.Error{Code: run.CodeInternal, Message: "its runner could not be invoked: " + err.Error()}}
		ev := agentEvent(newEvent(run.EventChildEnded, ended), x.agent.id())
		if _, seq, ferr := x.r.cfg.Store.FinishChild(context.WithoutCancel(ctx), x.run.ID, k.ID, store.ChildFailed,
			ended.Error.Code+": "+ended.Error.Message, ev); ferr == nil {
			x.noteEvent(seq, ev)
		}
		return err
	}
	x.r.log.Info("started a child", "run_id", x.run.ID, "child_id", k.ID, "parent_id", k.ParentID, "tools", k.Tools)
	return nil
}

func childOf(k store.Child) control.Child {
	return control.Child{ID: k.ID, ParentID: k.ParentID, Task: k.Task, Status: k.Status, Tools: k.Tools,
		Result: k.Result, Spent: control.Spent{Tokens: k.Spent.Tokens, ToolCalls: k.Spent.ToolCalls}}
}

func (c children) Get(ctx context.Context, id string) (control.Child, error) {
	k, err := c.x.r.cfg.Store.GetChild(ctx, c.x.run.ID, id)
	return childOf(k), err
}

func (c children) Events(ctx context.Context, id string, n int) ([]control.Event, error) {
	evs, err := c.x.r.cfg.Store.ListAgentEvents(ctx, c.x.run.ID, id, n)
	out := make([]control.Event, len(evs))
	for i, ev := range evs {
		out[i] = control.Event{Type: ev.Type, Data: ev.Data}
	}
	return out, err
}

func (c children) List(ctx context.Context) ([]control.Child, error) {
	kids, err := c.x.r.cfg.Store.ListChildren(ctx, c.x.run.ID)
	out := make([]control.Child, len(kids))
	for i, k := range kids {
		out[i] = childOf(k)
	}
	return out, err
}

// Interrupt ends k as interrupted by this agent, with its own children.
func (c children) Interrupt(ctx context.Context, k control.Child) (bool, error) {
	return c.x.interrupt(ctx, store.Child{ID: k.ID, ParentID: k.ParentID, Tools: k.Tools}, c.x.agent.id(), true)
}

func (c children) Cancelled() bool { return c.x.cancelled.Load() }

// heldTools are the tools this agent holds, sorted: its built-in and
// declared tools, and the MCP entries of its allowlist (a full name or a
// server's mcp__<server>__*), which a child may be given in turn.
func (x *execution) heldTools() []string {
	out := make([]string, 0, len(x.tools.entries))
	for name := range x.tools.entries {
		out = append(out, name)
	}
	for _, name := range x.allowed {
		if fleet.IsMCPToolName(name) {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// usesSandboxTool reports whether one of tools runs in the sandbox (a
// stdio MCP server's tools do).
func (x *execution) usesSandboxTool(tools []string) bool {
	for _, t := range tools {
		if server, _, ok := fleet.SplitMCPToolName(t); ok {
			if srv, ok := x.def.MCPServerByName(server); ok && srv.Stdio() {
				return true
			}
		}
		if e, ok := x.tools.entries[t]; ok && (e.RunsIn == fleet.InSandbox || e.RunsIn == fleet.InDisplay) {
			return true
		}
	}
	return false
}
