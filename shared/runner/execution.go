package runner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentsfleet/agentsfleet/shared/fault"
	"github.com/agentsfleet/agentsfleet/shared/fleet"
	"github.com/agentsfleet/agentsfleet/shared/invoke"
	"github.com/agentsfleet/agentsfleet/shared/model"
	"github.com/agentsfleet/agentsfleet/shared/run"
	"github.com/agentsfleet/agentsfleet/shared/sandbox/launch"
	"github.com/agentsfleet/agentsfleet/shared/store"
)

// execution is one invocation's work on one run.
type execution struct {
	r      *Runner
	run    store.Run
	holder string
	// unlease stops renewing the lease and releases it, once.
	unlease func()
	// cancelled is set when the run is seen cancelled between turns.
	cancelled atomic.Bool
	def       *fleet.Definition
	st        *state
	step      int64 // the last committed step
	tools     *toolset
	// allowed are the tools the agent may use: the Definition's, or a
	// child's share.
	allowed []string
	// sandbox is the run's sandbox once a tool needed it; mu guards it
	// across concurrent tool calls.
	mu      sync.Mutex
	sandbox *launch.Sandbox
	// folder is the fleet's folder in the sandbox (Config.Folders).
	folder folderState
	// resumed says an earlier invocation committed steps of the run.
	resumed bool
	// agent is the run's own agent or the child this invocation executes.
	agent agent
	// thread is the Slack thread the agent reads its inbox from and shows
	// its work in: the run's, for its own agent; none for a child.
	thread *store.Thread
	// stop cancels the invocation's work with a cause.
	stop context.CancelCauseFunc
	// messages are the step's message.posted events, guarded by mu.
	messages []store.NewEvent
	// inbox are the run.input events of messages taken into the
	// conversation since the last commit.
	inbox []store.NewEvent
	// spawned says this invocation started a child agent.
	spawned atomic.Bool
	// verdicts are the error results of the calls of the step under way
	// that a person denied or let expire, by call id (approval.go); read
	// by concurrent calls, written only between steps.
	verdicts map[string]string
	// began is when the invocation took the lease, and sandboxFrom when
	// the run's own agent first had the run's sandbox in it; unsent are
	// the model tokens used since the last commit, which the next carries
	// to the run's totals (Step.Tokens). They are what its cost is
	// reckoned from (cost.go).
	began, sandboxFrom time.Time
	unsent             store.Tokens
}

// loadDefinition reads the run's pinned Definition and the tools of the
// agent: the Definition's, or a child's (tools). A Definition that cannot
// run here ends the agent failed, saying why; ok is false then, and err
// is the end's.
func (x *execution) loadDefinition(ctx context.Context, tools []string) (ok bool, err error) {
	rev, err := x.r.cfg.Store.GetRevision(ctx, x.run.Fleet, x.run.Revision)
	if err != nil {
		return false, fmt.Errorf("runner: %w", err)
	}
	if x.def, err = fleet.ParseJSON(rev.Definition); err != nil {
		return false, x.end(ctx, store.StatusFailed, "", &run.Error{Code: run.CodeDefinition,
			Message: fmt.Sprintf("revision %d of fleet %s cannot be read: %v", x.run.Revision, x.run.Fleet, err)})
	}
	if err := x.def.CheckAvailable(fleet.AvailableTools(x.r.cfg.Display)); err != nil {
		msg := err.Error()
		if !x.r.cfg.Display && needsBrowser(x.def.Tools) {
			why := x.r.cfg.NoBrowser
			if why == "" {
				why = "this deployment's sandboxes have none"
			}
			msg += "; browser_open and screenshot need sandboxes with a browser: " + why
		}
		return false, x.end(ctx, store.StatusFailed, "", &run.Error{Code: run.CodeDefinition, Message: msg})
	}
	if tools == nil {
		tools = x.def.AllowedTools()
	}
	if x.tools, err = newToolset(x.def, tools); err != nil {
		return false, x.end(ctx, store.StatusFailed, "", &run.Error{Code: run.CodeDefinition, Message: err.Error()})
	}
	x.allowed = tools
	x.offerMCP(ctx, tools, false)
	return true, nil
}

// loop runs turns until the run ends or the deadline nears.
func (x *execution) loop(ctx context.Context) error {
	if x.step == 0 {
		if err := x.agent.start(ctx, x); err != nil {
			return err
		}
	}
	if err := x.setUp(ctx); err != nil || x.st.Ended != nil {
		return err
	}
	// The stdio MCP servers start in the sandbox, set up by now.
	x.offerMCP(ctx, x.allowed, true)
	defer x.watch(ctx)()
	if x.st.Waiting != nil {
		if done, err := x.resume(ctx); err != nil || done {
			return err
		}
	}
	x.awaitBurst(ctx)
	for {
		if ctx.Err() != nil {
			return x.interrupted(ctx, context.Cause(ctx))
		}
		if x.cancelled.Load() {
			return x.end(ctx, store.StatusCancelled, "", nil)
		}
		if x.nearDeadline(ctx) {
			return x.handOver(ctx)
		}
		done, err := x.turn(ctx)
		if err != nil || done {
			return err
		}
	}
}

// watch notices a cancellation between turns without a read on each: it
// reads the run's status every Config.Watch. (The turn's commit refuses a
// cancelled run too, so a cancel that lands between two reads stops the
// run at that commit.) It returns the function that stops it.
func (x *execution) watch(ctx context.Context) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(x.r.cfg.Watch)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				if x.agent.stopped(ctx, x) {
					return
				}
			}
		}
	}()
	return func() { cancel(); <-done }
}

// testHookCancelSeen is called once watch has seen the run cancelled, so
// tests wait for that instead of sleeping; a no-op outside them.
var testHookCancelSeen = func(runID string) {}

// turn is one step: the model's next answer, the tool calls it asks for,
// and one commit of both — the answer and the results, a tool.call and a
// tool.result event each, the tokens and the calls spent — or the run's
// end when it answers without a tool call.
//
// A turn cut short (the invocation's deadline, the process stopping)
// commits nothing: the next invocation asks the model again. Its sandbox
// calls carry keys made from the run, the step, the call's place, name and
// arguments, so that a call the new answer repeats is answered from
// sandboxd's cache instead of running twice.
func (x *execution) turn(ctx context.Context) (done bool, err error) {
	if err := x.takeInbox(ctx); err != nil {
		return true, err
	}
	if err := x.fitContext(ctx); err != nil || x.st.Ended != nil {
		return true, err
	}
	x.loadImages(ctx)
	x.note(Note{Thinking: true})
	began := time.Now()
	resp, err := x.r.cfg.Model.Converse(ctx, model.Request{
		Model:     x.modelID(),
		System:    x.system(),
		Messages:  x.st.Messages,
		Tools:     x.tools.offered,
		MaxTokens: x.r.cfg.MaxTokens,
		OnText:    func(d string) { x.note(Note{Thinking: true, Text: d}) },
	})
	x.note(Note{})
	if err != nil {
		if ctx.Err() != nil {
			return true, x.interrupted(ctx, context.Cause(ctx))
		}
		return true, x.end(ctx, store.StatusFailed, "", &run.Error{Code: run.CodeModel, Message: err.Error()})
	}
	x.recordModel(x.modelID(), resp.Usage.InputTokens, resp.Usage.OutputTokens, time.Since(began))
	x.used(resp.Usage)
	x.st.Usage.InputTokens += resp.Usage.InputTokens
	x.st.Usage.OutputTokens += resp.Usage.OutputTokens
	x.st.LastInput = resp.Usage.InputTokens
	spend := store.Budget{Tokens: resp.Usage.Total()}
	resp.Message.Role = model.Assistant
	for i := range resp.Message.Content {
		if tc := resp.Message.Content[i].ToolCall; tc != nil && len(tc.Arguments) == 0 {
			tc.Arguments = json.RawMessage("{}")
		}
	}
	calls := resp.Message.ToolCalls()
	x.st.Messages = append(x.st.Messages, resp.Message)
	if len(calls) == 0 {
		return true, x.answered(ctx, resp, spend)
	}
	if x.cancelled.Load() {
		return true, x.end(ctx, store.StatusCancelled, "", nil)
	}
	return x.act(ctx, calls, spend)
}

// answered ends the agent with the model's answer, resp, which asks for no
// tool call.
func (x *execution) answered(ctx context.Context, resp model.Response, spend store.Budget) error {
	answer := strings.TrimSpace(resp.Message.Text())
	switch {
	case answer == "":
		return x.end(ctx, store.StatusFailed, "", &run.Error{Code: run.CodeNoAnswer,
			Message: fmt.Sprintf("the model stopped (%s) without an answer or a tool call", resp.Stop)}, spend)
	case resp.Stop == model.StopMaxTokens:
		answer += "\n\n[The answer was cut at the model's output limit.]"
	}
	return x.end(ctx, store.StatusSucceeded, answer, nil, spend)
}

// act runs the calls the model asked for, after the answer's spend, and
// commits the step.
func (x *execution) act(ctx context.Context, calls []model.ToolCall, spend store.Budget) (done bool, err error) {
	spend.ToolCalls = int64(len(calls))
	if msg, ok := x.affords(spend); !ok {
		// Refused before any call runs; the commit would refuse it after.
		return true, x.end(ctx, store.StatusFailed, "", &run.Error{Code: fault.RunBudgetSpent.ID(), Message: msg})
	}
	x.st.Usage.ToolCalls += spend.ToolCalls
	tcs := make([]run.ToolCall, len(calls))
	for i, c := range calls {
		tcs[i] = run.ToolCall{CallID: c.ID, Name: c.Name, Arguments: c.Arguments}
		tc := tcs[i]
		x.note(Note{Calling: &tc})
	}
	if waits := x.waits(calls); len(waits) > 0 {
		return true, x.wait(ctx, tcs, spend, waits)
	}
	return x.perform(ctx, calls, tcs, spend, nil)
}

// perform runs calls and commits their step, after spend: lead, then a
// tool.call event for each of tcs (nil when an earlier step committed
// them: a step that waited for approval), then the results.
func (x *execution) perform(ctx context.Context, calls []model.ToolCall, tcs []run.ToolCall, spend store.Budget, lead []store.NewEvent) (done bool, err error) {
	results, after, messages := x.runTools(ctx, calls)
	if ctx.Err() != nil {
		return true, x.interrupted(ctx, context.Cause(ctx))
	}
	// The conversation keeps the results whole, as the model got them,
	// and their images by reference.
	x.keepImages(ctx, results)
	parts := make([]model.Part, len(results))
	for i := range results {
		parts[i] = model.Part{ToolResult: &results[i]}
	}
	x.st.Messages = append(x.st.Messages, model.Message{Role: model.User, Content: parts})
	// What the step stores and sends is screened first, in one call.
	trs := make([]run.ToolResult, len(results))
	var sc screen
	for i := range tcs {
		sc.addJSON(&tcs[i].Arguments)
	}
	for i, res := range results {
		trs[i] = run.ToolResult{CallID: res.CallID, Name: res.Name, Output: res.Output, IsError: res.IsError, Image: imageRef(res.Image)}
		sc.addCut(&trs[i].Output, &trs[i].Truncated, run.MaxEventOutput)
	}
	for _, f := range after {
		if f != nil {
			f.screen(&sc)
		}
	}
	x.screen(ctx, &sc) // what could not be screened is withheld
	events := make([]store.NewEvent, 0, len(lead)+2*len(calls)+len(messages))
	events = append(events, lead...)
	for _, tc := range tcs {
		events = append(events, newEvent(run.EventToolCall, tc))
	}
	for i := range trs {
		events = append(events, newEvent(run.EventToolResult, trs[i]))
		if after[i] != nil {
			events = append(events, after[i].done()...)
		}
	}
	err = x.commit(ctx, store.Step{Spend: spend, WhileRunning: true}, append(events, messages...)...)
	switch {
	case errors.Is(err, store.ErrRunEnded):
		return true, x.end(ctx, store.StatusCancelled, "", nil)
	case errors.Is(err, store.ErrChildEnded):
		return true, x.gone(ctx)
	case errors.Is(err, fault.RunBudgetSpent):
		return true, x.budgetSpent(ctx, err)
	}
	return false, err
}

// affords reports whether the run's budget, as this invocation knows it,
// still holds spend; if not, it says which figure runs out. The commit
// checks again atomically: children spending the same budget at once may
// still make it refuse.
func (x *execution) affords(spend store.Budget) (string, bool) {
	if msg, ok := x.agent.share(spend); !ok {
		return msg, false
	}
	lim, used := x.run.Limits, x.run.Spent
	switch {
	case lim.ToolCalls > 0 && used.ToolCalls+spend.ToolCalls > lim.ToolCalls:
		return fmt.Sprintf("run %s has %d of %d tool calls left and the model asked for %d", x.run.ID, lim.ToolCalls-used.ToolCalls, lim.ToolCalls, spend.ToolCalls), false
	case lim.Tokens > 0 && used.Tokens+spend.Tokens > lim.Tokens:
		return fmt.Sprintf("run %s has %d of %d tokens left and the last model call used %d", x.run.ID, max(lim.Tokens-used.Tokens, 0), lim.Tokens, spend.Tokens), false
	}
	return "", true
}

// commit commits the next step: the state as it is now, with st's spend
// and condition, and events.
func (x *execution) commit(ctx context.Context, st store.Step, events ...store.NewEvent) error {
	next := x.step + 1
	events = append(x.inbox, events...)
	data, turns, err := x.r.encode(ctx, x.blobPrefix(), next, x.st)
	if err != nil {
		return fmt.Errorf("runner: run %s: %w", x.run.ID, err)
	}
	st.Holder, st.Number, st.Checkpoint, st.Turns, st.Events = x.holder, next, data, turns, events
	st.Tokens = x.unsent
	first, err := x.agent.commit(ctx, x, st)
	if err != nil {
		return fmt.Errorf("runner: %w", err)
	}
	x.unsent = store.Tokens{}
	x.st.committed()
	x.step, x.inbox = next, nil
	x.run.Spent.Tokens += st.Spend.Tokens
	x.run.Spent.ToolCalls += st.Spend.ToolCalls
	if x.r.cfg.Observer != nil {
		at := x.r.cfg.Now().UTC().Format(time.RFC3339Nano)
		for i, ev := range events {
			x.note(Note{Event: &run.Event{Seq: first + int64(i), Type: ev.Type, Time: at, Agent: x.agent.id(), Data: ev.Data}})
		}
	}
	return nil
}

// end ends the agent: its last step, then (for the run's own agent) the
// run's status. answer is the final answer (succeeded); runErr says why it
// did not succeed (nil for succeeded and cancelled).
//
// spend is the last model call's tokens, when that call is what ended the
// agent: a budget that call itself spent ends it failed, saying so.
func (x *execution) end(ctx context.Context, status store.Status, answer string, runErr *run.Error, spend ...store.Budget) error {
	var b store.Budget
	if len(spend) > 0 {
		b = spend[0]
	}
	return x.agent.end(ctx, x, status, answer, runErr, b)
}

// budgetSpent ends the run failed with the budget's code and which figure.
func (x *execution) budgetSpent(ctx context.Context, err error) error {
	var fe *fault.Error
	msg := fault.RunBudgetSpent.Error()
	if errors.As(err, &fe) {
		msg = fe.Msg
	}
	x.st.Ended = nil
	return x.end(ctx, store.StatusFailed, "", &run.Error{Code: fault.RunBudgetSpent.ID(), Message: msg})
}

// interrupted is the invocation stopping short (its context done, or the
// store failing): nothing more is committed; the run goes on from its last
// step in the next invocation.
//
// Only the invocation's deadline hands the run over at once; any other
// stop (the lease lost, the process stopping, the store failing) leaves it
// to whoever starts the run again, or to the one that took the lease.
func (x *execution) interrupted(ctx context.Context, cause error) error {
	if errors.Is(cause, context.DeadlineExceeded) {
		return x.handOver(ctx)
	}
	if errors.Is(cause, errChildStopped) {
		if err := x.end(context.WithoutCancel(ctx), store.StatusCancelled, "", nil); err != nil {
			return err
		}
		return errChildGone
	}
	return fmt.Errorf("runner: run %s stopped after step %d: %w", x.run.ID, x.step, cause)
}

// handOver starts a new invocation for the run, which takes over once this
// one has released the lease.
//
// The lease goes first: the new invocation may start at once, and one that
// found the lease still held would take it for a duplicate and stop.
func (x *execution) handOver(ctx context.Context) error {
	x.unlease()
	payload, _ := json.Marshal(run.Payload{RunID: x.run.ID, ChildID: x.agent.id()})
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	if err := x.r.cfg.Invoker.Start(sctx, invoke.Runner, payload); err != nil {
		return fmt.Errorf("runner: hand run %s over to a new invocation: %w", x.run.ID, err)
	}
	x.r.log.Info("handed over before the deadline", "run_id", x.run.ID, "child_id", x.agent.id(), "step", x.step)
	return errHandedOver
}

// handOverReserve is the time kept before an invocation's deadline for
// handing the run over when a turn runs into it.
const handOverReserve = 15 * time.Second

// errHandedOver ends an invocation that handed its run to a new one: no
// failure, and nothing more to do here.
var errHandedOver = errors.New("the run was handed over to a new invocation")

// nearDeadline reports whether the invocation's deadline is closer than
// the margin a step may need.
func (x *execution) nearDeadline(ctx context.Context) bool {
	dl, ok := ctx.Deadline()
	if !ok {
		return false
	}
	margin := x.r.cfg.Margin
	if margin <= 0 {
		margin = x.def.Limits.ToolTimeout() + time.Minute
	}
	return dl.Sub(x.r.cfg.Now()) < margin
}

func (x *execution) modelID() string {
	if x.def.Model != "" {
		return x.def.Model
	}
	return x.r.cfg.DefaultModel
}

// system is the system prompt: the fleet's instructions, then what the run
// is and how tools work here.
func (x *execution) system() string {
	var b strings.Builder
	who, answer := x.agent.prompt(x)
	b.WriteString(strings.TrimSpace(x.def.Instructions))
	b.WriteString("\n\n" + who)
	places := launch.Places{Workdir: x.def.Workdir, Agent: launch.DefaultAgent}
	x.mu.Lock()
	sb := x.sandbox
	x.mu.Unlock()
	switch p, ok := x.r.cfg.Sandboxes.(launch.Placer); {
	case sb != nil && sb.Places != (launch.Places{}):
		// A sandbox whose folders are known once it is had (a warm local
		// one): from the turn after, the prompt names them.
		places = sb.Places
	case ok:
		places = p.Places(x.spec())
	}
	fmt.Fprintf(&b, " Your working directory is %s", places.Workdir)
	if places.Agent != "" {
		fmt.Fprintf(&b, "; the fleet's folder %s keeps files from one run to the next", places.Agent)
	}
	b.WriteString(". " + answer)
	b.WriteString(x.mcpNote())
	return b.String()
}

func (x *execution) note(n Note) {
	if x.r.cfg.Observer != nil {
		n.RunID, n.Agent = x.run.ID, x.agent.id()
		x.r.cfg.Observer(n)
	}
}

// spec is what the run asks of its sandbox: one with a browser when the
// Definition allows a display tool, for the run and its children alike
// (they share it).
func (x *execution) spec() launch.Spec {
	return launch.Spec{RunID: x.run.ID, Fleet: x.run.Fleet, Workdir: x.def.Workdir,
		Size: x.def.Sandbox.Size, ToolTimeout: x.def.Limits.ToolTimeout(), Browser: needsBrowser(x.def.Tools)}
}

// needsBrowser says tools include a display tool, which runs in the
// sandbox's browser.
func needsBrowser(tools []string) bool {
	for _, name := range tools {
		if t, ok := fleet.LookupTool(name); ok && t.RunsIn == fleet.InDisplay {
			return true
		}
	}
	return false
}

// blobPrefix is where the agent's checkpoints too large for an item go:
// checkpoints/<run>, and checkpoints/<run>/<child> for a child's.
func (x *execution) blobPrefix() string { return path.Join("checkpoints", x.run.ID, x.agent.id()) }
