package runner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/agentsfleet/agentsfleet/shared/fault"
	"github.com/agentsfleet/agentsfleet/shared/fleet"
	"github.com/agentsfleet/agentsfleet/shared/invoke"
	"github.com/agentsfleet/agentsfleet/shared/model"
	"github.com/agentsfleet/agentsfleet/shared/run"
	"github.com/agentsfleet/agentsfleet/shared/runner/control"
	"github.com/agentsfleet/agentsfleet/shared/store"
	"github.com/agentsfleet/agentsfleet/shared/tool"
)

// Child agents are executed as runs are: each in runner invocations of its
// own (invoke.Runner with a Payload naming the child), holding a lease of
// its own, committing steps of its own with a checkpoint of its own, and
// handing itself over before an invocation's deadline. So a child goes on
// while its parent waits, hands over or is re-invoked, runs concurrently
// with its siblings in as many invocations as there are children (in AWS,
// each a Lambda invocation with its own 15 minutes and memory), and no
// committed step of it runs twice. Goroutines inside the parent's
// invocation would have tied every child to the parent's deadline, memory
// and crashes.
//
// A child's events go to the run's log, marked with its id (Event.Agent);
// its spending counts on the run's budget and on its share; it uses the
// run's sandbox, whose exec_command sessions it starts are tagged with its
// id and closed when it ends.

// childPoll is how often wait_agent and delegate_agent read the child.
const childPoll = 250 * time.Millisecond

// commitReserve is the time a wait leaves before the invocation's hand-over
// moment, for the turn to commit.
const commitReserve = 5 * time.Second

// agentID is the child this execution runs; "" for the run's own agent.
func (x *execution) agentID() string {
	if x.child == nil {
		return ""
	}
	return x.child.ID
}

// blobPrefix is where the execution's large checkpoints go.
func (x *execution) blobPrefix() string {
	if x.child == nil {
		return "checkpoints/" + x.run.ID
	}
	return "checkpoints/" + x.run.ID + "/" + x.child.ID
}

// loadChild reads a child's checkpoint, its run and the run's Definition.
// It returns nil (and no error) for a child with nothing left to do.
func (r *Runner) loadChild(ctx context.Context, run store.Run, c store.Child, holder string, unlease func()) (*execution, error) {
	x := &execution{r: r, run: run, holder: holder, unlease: unlease, child: &c}
	ckpt, err := r.cfg.Store.LoadChildCheckpoint(ctx, run.ID, c.ID)
	if err != nil {
		return nil, fmt.Errorf("runner: %w", err)
	}
	if x.st, err = r.decode(ctx, run.ID, c.ID, ckpt); err != nil {
		return nil, fmt.Errorf("runner: child %s of run %s: %w", c.ID, run.ID, err)
	}
	x.step, x.resumed = ckpt.Step, ckpt.Step > 0
	if c.Status != store.ChildRunning {
		return nil, nil
	}
	if run.Status != store.StatusRunning {
		return nil, x.end(ctx, store.StatusCancelled, "", nil)
	}
	if ok, err := x.loadDefinition(ctx, nonNil(c.Tools)); !ok {
		return nil, err
	}
	return x, nil
}

// startChild commits a child's step 1: child.started and its task as the
// first message.
func (x *execution) startChild(ctx context.Context) error {
	c := x.child
	x.st.Messages = []model.Message{{Role: model.User, Content: []model.Part{{Text: c.Task}}}}
	err := x.commit(ctx, store.Step{}, newEvent(EventChildStarted, ChildStarted{ChildID: c.ID, Status: store.ChildRunning,
		ParentID: c.ParentID, Depth: c.Depth, Task: c.Task, Tools: nonNil(c.Tools)}))
	switch {
	case errors.Is(err, store.ErrChildEnded):
		x.childGone(ctx)
		return errChildGone
	case errors.Is(err, store.ErrRunEnded):
		if err := x.end(ctx, store.StatusCancelled, "", nil); err != nil {
			return err
		}
		return errChildGone
	}
	return err
}

// errChildGone ends an execution whose child ended elsewhere (interrupted,
// its run ended): nothing more to do, no failure.
var errChildGone = errors.New("the child ended elsewhere")

// errChildStopped cancels the work of a child seen interrupted, or whose
// run ended.
var errChildStopped = errors.New("the child was interrupted or its run ended")

// childStopped reports whether the child was interrupted or its run ended.
func (x *execution) childStopped(ctx context.Context) bool {
	c, err := x.r.cfg.Store.GetChild(ctx, x.run.ID, x.child.ID)
	if err == nil && c.Status != store.ChildRunning {
		return true
	}
	run, err := x.r.cfg.Store.GetRun(ctx, x.run.ID)
	return err == nil && run.Status != store.StatusRunning
}

// childGone ends an execution whose child was ended by someone else
// (interrupt_agent, the run's end): nothing more is committed; the
// sessions it started are closed.
func (x *execution) childGone(ctx context.Context) error {
	x.r.log.Info("child ended elsewhere", "run_id", x.run.ID, "child_id", x.child.ID, "step", x.step)
	x.closeSessions(ctx, x.child.ID)
	return nil
}

// endChild ends the child: done with its answer, failed saying why, or
// interrupted (cancelled: its run ended or someone interrupted it). Its own
// children still working end interrupted first, and the exec_command
// sessions it started are closed.
func (x *execution) endChild(ctx context.Context, status store.Status, answer string, runErr *RunError, spend ...store.Budget) error {
	c := x.child
	x.interruptChildrenOf(ctx, c.ID)
	defer x.closeSessions(ctx, c.ID)
	var b store.Budget
	if len(spend) > 0 {
		b = spend[0]
	}
	ended := ChildEnded{ChildID: c.ID, ParentID: c.ParentID, Error: runErr, Usage: &Usage{}}
	*ended.Usage = x.st.Usage
	end := &store.ChildEnd{}
	switch status {
	case store.StatusSucceeded:
		ended.Status, end.Status, end.Result = store.ChildDone, store.ChildDone, answer
		ended.Answer = answer
		if len(answer) > MaxEventAnswer {
			ended.Answer, ended.AnswerTruncated = cutUTF8(answer, MaxEventAnswer), true
			end.Result = ended.Answer
		}
	case store.StatusFailed:
		ended.Status, end.Status = store.ChildFailed, store.ChildFailed
		if runErr != nil {
			end.Result = runErr.Code + ": " + runErr.Message
		}
	default:
		// Its run ended (or is cancelled) without interrupting it yet: it
		// ends itself the way the run's end would have.
		ended.Status, ended.InterruptedBy = store.ChildInterrupted, InterruptedByRunEnd
		ev := agentEvent(newEvent(EventChildEnded, ended), c.ID)
		_, seq, err := x.r.cfg.Store.FinishChild(ctx, x.run.ID, c.ID, store.ChildInterrupted, "", ev)
		if errors.Is(err, store.ErrChildEnded) {
			return nil
		}
		x.noteEvent(seq, ev)
		return err
	}
	x.childEnd = end
	err := x.commit(ctx, store.Step{Spend: b}, newEvent(EventChildEnded, ended))
	x.childEnd = nil
	switch {
	case errors.Is(err, fault.RunBudgetSpent) && b != (store.Budget{}):
		return x.budgetSpent(ctx, err)
	case errors.Is(err, store.ErrRunEnded):
		return x.end(ctx, store.StatusCancelled, "", nil)
	case errors.Is(err, store.ErrChildEnded):
		return nil
	}
	return err
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
			if _, err := x.interrupt(ctx, k, InterruptedByRunEnd, false); err != nil {
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
		by = InterruptedByAgent
	}
	ended := ChildEnded{ChildID: c.ID, Status: store.ChildInterrupted, ParentID: c.ParentID, InterruptedBy: by}
	ev := agentEvent(newEvent(EventChildEnded, ended), x.agentID())
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
		x.note(Note{Event: &Event{Seq: seq, Type: ev.Type, Time: x.r.cfg.Now().UTC().Format(time.RFC3339Nano), Agent: ev.Agent, Data: ev.Data}})
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

// agents is the child-agent tools' work for call number call of the
// execution's next step.
type agents struct {
	x    *execution
	call int
}

var _ control.Agents = agents{}

// childAnswer is what the child tools answer the model, as JSON.
type childAnswer struct {
	ChildID  string            `json:"child_id"`
	Status   store.ChildStatus `json:"status"`
	ParentID string            `json:"parent_id,omitempty"`
	Task     string            `json:"task,omitempty"`
	Tools    []string          `json:"tools,omitempty"`
	Answer   string            `json:"answer,omitempty"`
	Error    string            `json:"error,omitempty"`
	Spent    *store.Budget     `json:"spent,omitempty"`
	Recent   []string          `json:"recent,omitempty"`
	Note     string            `json:"note,omitempty"`
}

func answerOf(c store.Child) childAnswer {
	a := childAnswer{ChildID: c.ID, Status: c.Status}
	switch c.Status {
	case store.ChildDone:
		a.Answer = c.Result
	case store.ChildFailed:
		a.Error = c.Result
	}
	return a
}

func result(v any) tool.Result {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return tool.Errorf("%v", err)
	}
	return tool.Result{Output: string(b)}
}

// Spawn starts a child and answers its id at once.
func (a agents) Spawn(ctx context.Context, args control.SpawnAgentArgs) (tool.Result, error) {
	c, res, ok := a.start(ctx, control.SpawnAgentSpec.Name(), args)
	if !ok {
		return res, nil
	}
	return result(childAnswer{ChildID: c.ID, Status: c.Status, Note: "The child works while you go on: wait_agent gives its answer."}), nil
}

// Delegate starts a child and waits for it to end.
func (a agents) Delegate(ctx context.Context, args control.SpawnAgentArgs) (tool.Result, error) {
	c, res, ok := a.start(ctx, control.DelegateAgentSpec.Name(), args)
	if !ok {
		return res, nil
	}
	return a.wait(ctx, c.ID, 0)
}

// Wait waits for a child to end, up to the timeout.
func (a agents) Wait(ctx context.Context, args control.WaitAgentArgs) (tool.Result, error) {
	return a.wait(ctx, args.ChildID, time.Duration(args.TimeoutSeconds)*time.Second)
}

// wait polls the child until it ends, timeout passes (0: no timeout), the
// run is cancelled, or the invocation must commit and hand over.
func (a agents) wait(ctx context.Context, childID string, timeout time.Duration) (tool.Result, error) {
	x := a.x
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
		c, err := x.r.cfg.Store.GetChild(ctx, x.run.ID, childID)
		if errors.Is(err, fault.ChildNotFound) {
			return tool.Errorf("%v", fault.New(fault.ChildNotFound, "this run never issued child_id %q; list_agents lists its children", childID)), nil
		}
		if err != nil {
			return tool.Result{}, err
		}
		if c.Status != store.ChildRunning {
			return result(answerOf(c)), nil
		}
		if x.cancelled.Load() {
			return result(childAnswer{ChildID: c.ID, Status: c.Status, Note: "The run was cancelled while waiting."}), nil
		}
		if !until.IsZero() && !time.Now().Before(until) {
			note := fmt.Sprintf("Still working after %s: wait_agent again for its answer, inspect_agent to see its progress.", time.Since(start).Round(time.Second))
			return result(childAnswer{ChildID: c.ID, Status: c.Status, Note: note}), nil
		}
		select {
		case <-ctx.Done():
			return tool.Result{}, context.Cause(ctx)
		case <-t.C:
		}
	}
}

// start checks a spawn against what this agent holds and starts the child:
// its record (keyed by the call, so a retried step gets the same child
// back) and its first invocation.
func (a agents) start(ctx context.Context, name string, args control.SpawnAgentArgs) (store.Child, tool.Result, bool) {
	x := a.x
	fail := func(format string, v ...any) (store.Child, tool.Result, bool) {
		return store.Child{}, tool.Errorf(name+": "+format, v...), false
	}
	held := x.heldTools()
	grandchild := x.child != nil
	tools := args.Tools
	if tools == nil {
		for _, t := range held {
			if !(grandchild && control.IsAgentTool(t)) {
				tools = append(tools, t)
			}
		}
	}
	tools = slices.Compact(slices.Sorted(slices.Values(tools)))
	for _, t := range tools {
		if !slices.Contains(held, t) {
			return fail("%v", fault.New(fault.ChildToolNotHeld, "you do not hold %q, so the child cannot; you hold %s", t, strings.Join(held, ", ")))
		}
		if grandchild && control.IsAgentTool(t) {
			return fail("a child of a child is offered none of the six child-agent tools; leave %q out of tools", t)
		}
	}
	mySecrets, myHosts := x.secretNames(), x.hosts()
	secrets, hosts := mySecrets, myHosts
	if args.Secrets != nil {
		secrets = slices.Compact(slices.Sorted(slices.Values(args.Secrets)))
		for _, s := range secrets {
			if !slices.Contains(mySecrets, s) {
				return fail("you hold no secret %q, so the child cannot; your secrets are %s", s, listOrNone(mySecrets))
			}
		}
	}
	if args.Hosts != nil {
		hosts = slices.Compact(slices.Sorted(slices.Values(args.Hosts)))
		for _, h := range hosts {
			if !slices.Contains(myHosts, h) {
				return fail("%q is not an entry of your host list, so the child cannot reach it; your entries are %s", h, listOrNone(myHosts))
			}
		}
	}
	var limits store.Budget
	if args.Budget != nil {
		limits = store.Budget{Tokens: args.Budget.Tokens, ToolCalls: int64(args.Budget.ToolCalls)}
	}
	// The child uses the run's sandbox: have it before the child starts,
	// so that the two never start one each.
	for _, t := range tools {
		if e, ok := x.tools.entries[t]; ok && (e.RunsIn == fleet.InSandbox || e.RunsIn == fleet.InDisplay) {
			if _, err := x.acquireSandbox(ctx); err != nil {
				x.r.log.Warn("no sandbox for a child", "run_id", x.run.ID, "error", err)
			}
			break
		}
	}
	call := model.ToolCall{Name: name, Arguments: mustJSON(args)}
	c, created, err := x.r.cfg.Store.StartChild(ctx, store.NewChild{RunID: x.run.ID, ParentID: x.agentID(), Task: args.Task,
		Tools: tools, Secrets: secrets, Hosts: hosts, Limits: limits, Key: x.idempotencyKey(a.call, call)})
	var fe *fault.Error
	switch {
	case errors.As(err, &fe):
		return fail("%v", fe)
	case errors.Is(err, store.ErrRunEnded), errors.Is(err, store.ErrChildEnded):
		return fail("the run (or the agent starting the child) is no longer working: %v", err)
	case err != nil:
		return fail("the child could not be recorded: %v", err)
	}
	x.spawned.Store(true)
	// A retried step finds its child; start it again if its first
	// invocation never took it (a second one finds the lease held).
	if created || (c.Status == store.ChildRunning && c.CheckpointStep == 0 && c.LeaseHolder == "") {
		payload, _ := json.Marshal(Payload{RunID: x.run.ID, ChildID: c.ID})
		if err := x.r.cfg.Invoker.Start(context.WithoutCancel(ctx), invoke.Runner, payload); err != nil {
			ended := ChildEnded{ChildID: c.ID, Status: store.ChildFailed, ParentID: c.ParentID,
				Error: &RunError{Code: run.CodeInternal, Message: "its runner could not be invoked: " + err.Error()}}
			ev := agentEvent(newEvent(EventChildEnded, ended), x.agentID())
			if _, seq, ferr := x.r.cfg.Store.FinishChild(context.WithoutCancel(ctx), x.run.ID, c.ID, store.ChildFailed,
				ended.Error.Code+": "+ended.Error.Message, ev); ferr == nil {
				x.noteEvent(seq, ev)
			}
			return fail("the child %s could not be started: %v", c.ID, err)
		}
		x.r.log.Info("started a child", "run_id", x.run.ID, "child_id", c.ID, "parent_id", c.ParentID, "tools", tools)
	}
	return c, tool.Result{}, true
}

func listOrNone(s []string) string {
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, ", ")
}

// heldTools are the tools this agent holds, sorted.
func (x *execution) heldTools() []string {
	out := make([]string, 0, len(x.tools.entries))
	for name := range x.tools.entries {
		out = append(out, name)
	}
	slices.Sort(out)
	return out
}

// secretNames are the names of the secrets this agent's web tools may use.
func (x *execution) secretNames() []string {
	if x.child != nil {
		return nonNil(x.child.Secrets)
	}
	out := make([]string, 0, len(x.def.Secrets))
	for name := range x.def.Secrets {
		out = append(out, name)
	}
	slices.Sort(out)
	return out
}

// hosts are the host list entries this agent's web tools may reach.
func (x *execution) hosts() []string {
	if x.child != nil {
		return nonNil(x.child.Hosts)
	}
	return nonNil(x.def.Hosts)
}

// Inspect reports a child's task, status, recent events and answer.
func (a agents) Inspect(ctx context.Context, args control.InspectAgentArgs) (tool.Result, error) {
	x := a.x
	c, err := x.r.cfg.Store.GetChild(ctx, x.run.ID, args.ChildID)
	if errors.Is(err, fault.ChildNotFound) {
		return tool.Errorf("inspect_agent: %v", fault.New(fault.ChildNotFound, "this run never issued child_id %q; list_agents lists its children", args.ChildID)), nil
	}
	if err != nil {
		return tool.Result{}, err
	}
	ans := answerOf(c)
	ans.ParentID, ans.Task, ans.Tools, ans.Spent = c.ParentID, c.Task, nonNil(c.Tools), &c.Spent
	evs, err := x.r.cfg.Store.ListAgentEvents(ctx, x.run.ID, c.ID, inspectEvents)
	if err != nil {
		return tool.Result{}, err
	}
	for _, ev := range evs {
		ans.Recent = append(ans.Recent, summarize(ev))
	}
	return result(ans), nil
}

// inspectEvents is how many of a child's latest events inspect_agent shows.
const inspectEvents = 6

// summarize is one line about a child's event.
func summarize(ev store.Event) string {
	var d struct {
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
		Output    string          `json:"output"`
		IsError   bool            `json:"is_error"`
		Status    string          `json:"status"`
	}
	json.Unmarshal(ev.Data, &d)
	switch ev.Type {
	case EventToolCall:
		return fmt.Sprintf("called %s %s", d.Name, cutUTF8(string(d.Arguments), 200))
	case EventToolResult:
		what := "result"
		if d.IsError {
			what = "error"
		}
		return fmt.Sprintf("%s %s: %s", d.Name, what, cutUTF8(strings.TrimSpace(d.Output), 200))
	case EventChildStarted, EventChildEnded:
		return ev.Type + " " + d.Status
	}
	return ev.Type
}

// List lists the run's children.
func (a agents) List(ctx context.Context, _ control.ListAgentsArgs) (tool.Result, error) {
	x := a.x
	kids, err := x.r.cfg.Store.ListChildren(ctx, x.run.ID)
	if err != nil {
		return tool.Result{}, err
	}
	out := make([]childAnswer, len(kids))
	for i, c := range kids {
		out[i] = childAnswer{ChildID: c.ID, Status: c.Status, ParentID: c.ParentID, Task: cutUTF8(c.Task, 200)}
	}
	return result(struct {
		Children []childAnswer `json:"children"`
		Working  int           `json:"working"`
		Started  int           `json:"started"`
		Limits   string        `json:"limits"`
	}{out, countRunning(kids), len(kids), fmt.Sprintf("at most %d working at once and %d in all", store.MaxChildrenRunning, store.MaxChildrenTotal)}), nil
}

func countRunning(kids []store.Child) int {
	n := 0
	for _, c := range kids {
		if c.Status == store.ChildRunning {
			n++
		}
	}
	return n
}

// Interrupt ends a working child as interrupted.
func (a agents) Interrupt(ctx context.Context, args control.InterruptAgentArgs) (tool.Result, error) {
	x := a.x
	c, err := x.r.cfg.Store.GetChild(ctx, x.run.ID, args.ChildID)
	if errors.Is(err, fault.ChildNotFound) {
		return tool.Errorf("interrupt_agent: %v", fault.New(fault.ChildNotFound, "this run never issued child_id %q; list_agents lists its children", args.ChildID)), nil
	}
	if err != nil {
		return tool.Result{}, err
	}
	if c.Status != store.ChildRunning {
		ans := answerOf(c)
		ans.Note = "It had already ended."
		return result(ans), nil
	}
	done, err := x.interrupt(ctx, c, x.agentID(), true)
	if err != nil {
		return tool.Result{}, err
	}
	if !done {
		c, err = x.r.cfg.Store.GetChild(ctx, x.run.ID, c.ID)
		if err != nil {
			return tool.Result{}, err
		}
		ans := answerOf(c)
		ans.Note = "It ended by itself just before."
		return result(ans), nil
	}
	return result(childAnswer{ChildID: c.ID, Status: store.ChildInterrupted, Note: "Interrupted: its work stopped, and its exec_command sessions are closed."}), nil
}
