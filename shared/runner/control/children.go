package control

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/agentsfleet/agentsfleet/shared/fault"
	"github.com/agentsfleet/agentsfleet/shared/limit"
	"github.com/agentsfleet/agentsfleet/shared/run"
	"github.com/agentsfleet/agentsfleet/shared/tool"
)

// The child-agent tools' implementations, over Caller.Children. Each
// answers the model with JSON (childAnswer).

func init() {
	children := func(spec tool.Spec, run func(Children) tool.Tool) {
		implement(spec, implementation{unbuilt: childNotBuilt, concurrent: true, build: func(c Caller) tool.Tool {
			if c.Children == nil {
				return nil
			}
			return run(c.Children)
		}})
	}
	children(SpawnAgentSpec, func(ch Children) tool.Tool { return bind(SpawnAgentSpec, agents{ch}.spawn) })
	children(DelegateAgentSpec, func(ch Children) tool.Tool { return bind(DelegateAgentSpec, agents{ch}.delegate) })
	children(WaitAgentSpec, func(ch Children) tool.Tool { return bind(WaitAgentSpec, agents{ch}.wait) })
	children(InspectAgentSpec, func(ch Children) tool.Tool { return bind(InspectAgentSpec, agents{ch}.inspect) })
	children(ListAgentsSpec, func(ch Children) tool.Tool { return bind(ListAgentsSpec, agents{ch}.list) })
	children(InterruptAgentSpec, func(ch Children) tool.Tool { return bind(InterruptAgentSpec, agents{ch}.interrupt) })
}

// childPoll is how often wait_agent and delegate_agent read the child.
const childPoll = 250 * time.Millisecond

// commitReserve is the time a wait leaves before the invocation's hand-over
// moment, for the turn to commit.
const commitReserve = 5 * time.Second

// inspectEvents is how many of a child's latest events inspect_agent shows.
const inspectEvents = 6

// agents is the child-agent tools of one caller.
type agents struct{ ch Children }

// childAnswer is what the child tools answer the model, as JSON.
type childAnswer struct {
	ChildID  string          `json:"child_id"`
	Status   run.ChildStatus `json:"status"`
	ParentID string          `json:"parent_id,omitempty"`
	Task     string          `json:"task,omitempty"`
	Tools    []string        `json:"tools,omitempty"`
	Answer   string          `json:"answer,omitempty"`
	Error    string          `json:"error,omitempty"`
	Spent    *Spent          `json:"spent,omitempty"`
	Recent   []string        `json:"recent,omitempty"`
	Note     string          `json:"note,omitempty"`
}

func answerOf(c Child) childAnswer {
	a := childAnswer{ChildID: c.ID, Status: c.Status}
	switch c.Status {
	case run.ChildDone:
		a.Answer = c.Result
	case run.ChildFailed:
		a.Error = c.Result
	}
	return a
}

// notFound answers a child_id the run never issued.
func notFound(prefix, id string) tool.Result {
	return tool.Errorf("%s%v", prefix, fault.New(fault.ChildNotFound, "this run never issued child_id %q; list_agents lists its children", id))
}

// spawn starts a child and answers its id at once.
func (a agents) spawn(ctx context.Context, args SpawnAgentArgs) (tool.Result, error) {
	c, res, ok := a.start(ctx, SpawnAgentSpec.Name(), args)
	if !ok {
		return res, nil
	}
	return jsonResult(childAnswer{ChildID: c.ID, Status: c.Status, Note: "The child works while you go on: wait_agent gives its answer."}), nil
}

// delegate starts a child and waits for it to end.
func (a agents) delegate(ctx context.Context, args SpawnAgentArgs) (tool.Result, error) {
	c, res, ok := a.start(ctx, DelegateAgentSpec.Name(), args)
	if !ok {
		return res, nil
	}
	return a.await(ctx, c.ID, 0)
}

// wait waits for a child to end, up to the timeout.
func (a agents) wait(ctx context.Context, args WaitAgentArgs) (tool.Result, error) {
	return a.await(ctx, args.ChildID, time.Duration(args.TimeoutSeconds)*time.Second)
}

// await polls the child until it ends, timeout passes (0: no timeout), the
// run is cancelled, or the invocation must commit and hand over.
func (a agents) await(ctx context.Context, childID string, timeout time.Duration) (tool.Result, error) {
	start := time.Now()
	until := time.Time{}
	if timeout > 0 {
		until = start.Add(timeout)
	}
	if dl, ok := ctx.Deadline(); ok {
		if by := dl.Add(-commitReserve); until.IsZero() || by.Before(until) {
			until = by
		}
	}
	t := time.NewTicker(childPoll)
	defer t.Stop()
	for {
		c, err := a.ch.Get(ctx, childID)
		if errors.Is(err, fault.ChildNotFound) {
			return notFound("", childID), nil
		}
		if err != nil {
			return tool.Result{}, err
		}
		if c.Status != run.ChildRunning {
			return jsonResult(answerOf(c)), nil
		}
		if a.ch.Cancelled() {
			return jsonResult(childAnswer{ChildID: c.ID, Status: c.Status, Note: "The run was cancelled while waiting."}), nil
		}
		if !until.IsZero() && !time.Now().Before(until) {
			note := fmt.Sprintf("Still working after %s: wait_agent again for its answer, inspect_agent to see its progress.", time.Since(start).Round(time.Second))
			return jsonResult(childAnswer{ChildID: c.ID, Status: c.Status, Note: note}), nil
		}
		select {
		case <-ctx.Done():
			return tool.Result{}, context.Cause(ctx)
		case <-t.C:
		}
	}
}

// start checks a spawn against what the caller holds and starts the child.
func (a agents) start(ctx context.Context, name string, args SpawnAgentArgs) (Child, tool.Result, bool) {
	nc, refused := share(a.ch.Grant(), args)
	if refused != "" {
		return Child{}, tool.Errorf("%s: %s", name, refused), false
	}
	c, err := a.ch.Start(ctx, name, args, nc)
	if err != nil {
		return Child{}, tool.Errorf("%s: %v", name, err), false
	}
	return c, tool.Result{}, true
}

// share is the child's share of g that args ask for, or why it cannot
// have it: a tool, secret or host the caller does not hold, or a
// child-agent tool for a child's child.
func share(g Grant, args SpawnAgentArgs) (NewChild, string) {
	nc := NewChild{Task: args.Task, Tools: args.Tools, Secrets: g.Secrets, Hosts: g.Hosts, Budget: args.Budget}
	leaf := g.Depth+1 >= limit.ChildDepth
	if nc.Tools == nil {
		for _, t := range g.Tools {
			if !(leaf && IsAgentTool(t)) {
				nc.Tools = append(nc.Tools, t)
			}
		}
	}
	nc.Tools = sorted(nc.Tools)
	for _, t := range nc.Tools {
		if !holds(g.Tools, t) {
			return nc, fault.New(fault.ChildToolNotHeld, "you do not hold %q, so the child cannot; you hold %s", t, strings.Join(g.Tools, ", ")).Error()
		}
		if leaf && IsAgentTool(t) {
			return nc, fmt.Sprintf("a child of a child is offered none of the six child-agent tools; leave %q out of tools", t)
		}
	}
	if args.Secrets != nil {
		nc.Secrets = sorted(args.Secrets)
		for _, s := range nc.Secrets {
			if !slices.Contains(g.Secrets, s) {
				return nc, fmt.Sprintf("you hold no secret %q, so the child cannot; your secrets are %s", s, listOrNone(g.Secrets))
			}
		}
	}
	if args.Hosts != nil {
		nc.Hosts = sorted(args.Hosts)
		for _, h := range nc.Hosts {
			if !slices.Contains(g.Hosts, h) {
				return nc, fmt.Sprintf("%q is not an entry of your host list, so the child cannot reach it; your entries are %s", h, listOrNone(g.Hosts))
			}
		}
	}
	return nc, ""
}

// holds reports whether the tools held admit t: by its name, or, for an
// MCP tool (mcp__<server>__<tool>), by its server's mcp__<server>__*. A
// child may be given a server's wildcard only if its parent holds it.
func holds(held []string, t string) bool {
	if slices.Contains(held, t) {
		return true
	}
	rest, ok := strings.CutPrefix(t, "mcp__")
	if !ok {
		return false
	}
	server, name, ok := strings.Cut(rest, "__")
	return ok && server != "" && name != "" && name != "*" && slices.Contains(held, "mcp__"+server+"__*")
}

func sorted(s []string) []string { return slices.Compact(slices.Sorted(slices.Values(s))) }

func listOrNone(s []string) string {
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, ", ")
}

// inspect reports a child's task, status, recent events and answer.
func (a agents) inspect(ctx context.Context, args InspectAgentArgs) (tool.Result, error) {
	c, err := a.ch.Get(ctx, args.ChildID)
	if errors.Is(err, fault.ChildNotFound) {
		return notFound("inspect_agent: ", args.ChildID), nil
	}
	if err != nil {
		return tool.Result{}, err
	}
	ans := answerOf(c)
	ans.ParentID, ans.Task, ans.Tools, ans.Spent = c.ParentID, c.Task, nonNil(c.Tools), &c.Spent
	evs, err := a.ch.Events(ctx, c.ID, inspectEvents)
	if err != nil {
		return tool.Result{}, err
	}
	for _, ev := range evs {
		ans.Recent = append(ans.Recent, summarize(ev))
	}
	return jsonResult(ans), nil
}

// summarize is one line about a child's event.
func summarize(ev Event) string {
	var d struct {
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
		Output    string          `json:"output"`
		IsError   bool            `json:"is_error"`
		Status    string          `json:"status"`
	}
	json.Unmarshal(ev.Data, &d)
	switch ev.Type {
	case run.EventToolCall:
		return fmt.Sprintf("called %s %s", d.Name, cutUTF8(string(d.Arguments), 200))
	case run.EventToolResult:
		what := "result"
		if d.IsError {
			what = "error"
		}
		return fmt.Sprintf("%s %s: %s", d.Name, what, cutUTF8(strings.TrimSpace(d.Output), 200))
	case run.EventChildStarted, run.EventChildEnded:
		return ev.Type + " " + d.Status
	}
	return ev.Type
}

// list lists the run's children.
func (a agents) list(ctx context.Context, _ ListAgentsArgs) (tool.Result, error) {
	kids, err := a.ch.List(ctx)
	if err != nil {
		return tool.Result{}, err
	}
	out := make([]childAnswer, len(kids))
	working := 0
	for i, c := range kids {
		out[i] = childAnswer{ChildID: c.ID, Status: c.Status, ParentID: c.ParentID, Task: cutUTF8(c.Task, 200)}
		if c.Status == run.ChildRunning {
			working++
		}
	}
	return jsonResult(struct {
		Children []childAnswer `json:"children"`
		Working  int           `json:"working"`
		Started  int           `json:"started"`
		Limits   string        `json:"limits"`
	}{out, working, len(kids), fmt.Sprintf("at most %d working at once and %d in all", limit.ChildrenRunning, limit.ChildrenTotal)}), nil
}

// interrupt ends a working child as interrupted.
func (a agents) interrupt(ctx context.Context, args InterruptAgentArgs) (tool.Result, error) {
	c, err := a.ch.Get(ctx, args.ChildID)
	if errors.Is(err, fault.ChildNotFound) {
		return notFound("interrupt_agent: ", args.ChildID), nil
	}
	if err != nil {
		return tool.Result{}, err
	}
	if c.Status != run.ChildRunning {
		ans := answerOf(c)
		ans.Note = "It had already ended."
		return jsonResult(ans), nil
	}
	done, err := a.ch.Interrupt(ctx, c)
	if err != nil {
		return tool.Result{}, err
	}
	if !done {
		if c, err = a.ch.Get(ctx, c.ID); err != nil {
			return tool.Result{}, err
		}
		ans := answerOf(c)
		ans.Note = "It ended by itself just before."
		return jsonResult(ans), nil
	}
	return jsonResult(childAnswer{ChildID: c.ID, Status: run.ChildInterrupted, Note: "Interrupted: its work stopped, and its exec_command sessions are closed."}), nil
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// cutUTF8 returns the first n bytes of s, not splitting a character.
func cutUTF8(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && s[n]&0xC0 == 0x80 {
		n--
	}
	return s[:n]
}
