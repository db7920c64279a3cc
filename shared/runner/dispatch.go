package runner

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/agentsfleet/agentsfleet/shared/fleet"
	"github.com/agentsfleet/agentsfleet/shared/invoke"
	"github.com/agentsfleet/agentsfleet/shared/metrics"
	"github.com/agentsfleet/agentsfleet/shared/model"
	"github.com/agentsfleet/agentsfleet/shared/run"
	"github.com/agentsfleet/agentsfleet/shared/runner/control"
	"github.com/agentsfleet/agentsfleet/shared/sandbox/client"
	"github.com/agentsfleet/agentsfleet/shared/sandbox/launch"
	"github.com/agentsfleet/agentsfleet/shared/store"
	"github.com/agentsfleet/agentsfleet/shared/tool"
	"github.com/agentsfleet/agentsfleet/shared/toolbox"
	"github.com/agentsfleet/agentsfleet/shared/web/wire"
)

// toolset is what a run's Definition allows: the tools offered to the
// model, each with its catalog entry.
type toolset struct {
	entries map[string]toolbox.Entry
	offered []model.Tool
	// mcp are the MCP tools offered (mcp.go), by their model name.
	mcp map[string]mcpOffered
}

// newToolset is the tools names of def, those of the run's agent or a
// child's.
func newToolset(def *fleet.Definition, names []string) (*toolset, error) {
	ts := &toolset{entries: map[string]toolbox.Entry{}}
	for _, name := range names {
		if fleet.IsMCPToolName(name) {
			continue // offered once their server lists them (offerMCP)
		}
		e, ok, err := declaredEntry(def, name)
		if err != nil {
			return nil, err
		}
		if !ok {
			e, ok = toolbox.Lookup(name)
		}
		if !ok {
			return nil, fmt.Errorf("the Definition allows tool %q, which this runner does not have; its tools are %s",
				name, strings.Join(fleet.ToolNames(), ", "))
		}
		ts.entries[name] = e
		ts.offered = append(ts.offered, model.Tool{Name: name, Description: e.Spec.Description(), Schema: e.Spec.Schema()})
	}
	return ts, nil
}

// concurrent are the tools outside the runner that several calls of in
// one answer run at once: those that change nothing. (A control tool's
// implementation says whether it is: control.Concurrent.)
var concurrent = map[string]bool{
	"read": true, "grep": true, "glob": true, "list": true,
	"webfetch": true, "websearch": true, "web_fetch": true,
}

func runsConcurrently(name string) bool { return concurrent[name] || control.Concurrent(name) }

// followUp is what a call leaves to do once every call of its step has
// run: its text joins the step's screen, and once that is screened done
// applies it, in order, and returns the events that follow the call's
// tool.result.
type followUp interface {
	screen(s *screen)
	done() []store.NewEvent
}

// runTools runs calls, concurrent neighbours at once (at most
// Config.ToolConcurrency of them, each of the others starting, in the
// answer's order, as one before it returns) and every other call alone in
// its turn, and returns their results in order with each call's follow-up
// (nil for most) and the step's message.posted events.
func (x *execution) runTools(ctx context.Context, calls []model.ToolCall) ([]model.ToolResult, []followUp, []store.NewEvent) {
	results := make([]model.ToolResult, len(calls))
	after := make([]followUp, len(calls))
	slots := make(chan struct{}, x.r.cfg.ToolConcurrency)
	for i := 0; i < len(calls); {
		j := i + 1
		if runsConcurrently(calls[i].Name) {
			for j < len(calls) && runsConcurrently(calls[j].Name) {
				j++
			}
		}
		var wg sync.WaitGroup
		for k := i; k < j; k++ {
			slots <- struct{}{} // taken here, in order: the queue is the answer's
			wg.Add(1)
			go func() {
				defer func() { <-slots; wg.Done() }()
				began := time.Now()
				results[k], after[k] = x.runTool(ctx, k, calls[k])
				x.recordTool(calls[k].Name, time.Since(began), results[k].IsError)
			}()
		}
		wg.Wait()
		i = j
	}
	return results, after, x.takeMessages()
}

// runTool runs one call: checked against the allowlist and the tool's
// contract first, then sent where the tool runs. Whatever fails becomes an
// error result the model sees, so the run goes on.
func (x *execution) runTool(ctx context.Context, i int, call model.ToolCall) (model.ToolResult, followUp) {
	out := model.ToolResult{CallID: call.ID, Name: call.Name}
	set := func(r tool.Result) { out.Output, out.IsError, out.Image = r.Output, r.IsError, modelImage(r.Image) }
	if r, refused := x.approvalRefusal(call); refused {
		set(r)
		return out, nil
	}
	x.mu.Lock()
	m, isMCP := x.tools.mcp[call.Name]
	x.mu.Unlock()
	if isMCP {
		set(x.mcpCall(ctx, i, call, m))
		return out, nil
	}
	e, ok := x.tools.entries[call.Name]
	if !ok {
		if allowed := x.def.AllowedTools(); len(allowed) == 0 {
			set(tool.Errorf("there is no tool %q for this fleet: it has no tools, so answer without calling one", call.Name))
		} else {
			set(tool.Errorf("there is no tool %q for this fleet; its tools are %s", call.Name, strings.Join(allowed, ", ")))
		}
		return out, nil
	}
	if res, ok := e.Spec.Check(call.Arguments); !ok {
		set(res)
		return out, nil
	}
	var after followUp
	switch e.RunsIn {
	case fleet.InSandbox, fleet.InDisplay:
		set(x.sandboxCall(ctx, i, call))
	case fleet.InWebtools:
		set(x.webCall(ctx, call))
	case fleet.InRunner:
		set(x.controlCall(ctx, x.caller(ctx, i, &after), call))
	default:
		set(tool.Errorf("%s runs in the %s, which this runner cannot reach", call.Name, e.RunsIn))
	}
	return out, after
}

// controlCall runs a control tool in the runner, for caller.
func (x *execution) controlCall(ctx context.Context, caller control.Caller, call model.ToolCall) tool.Result {
	t, ok := control.Tool(call.Name, caller)
	if !ok {
		return tool.Errorf("%s runs in the runner, which has no such tool", call.Name)
	}
	res, err := t.Run(ctx, call.Arguments)
	if err != nil {
		res = tool.Errorf("%s failed in the runner: %v", call.Name, err)
	}
	return res
}

// caller is what the control tools act through for call i of the step;
// an accepted plan is kept on the run as the call's follow-up.
func (x *execution) caller(ctx context.Context, i int, after *followUp) control.Caller {
	return control.Caller{
		Plan:      func(a control.UpdatePlanArgs) { *after = newPlan(ctx, x, a) },
		Children:  children{x: x, call: i},
		Schedules: x.schedules(i),
		Thread:    messenger{x: x},
	}
}

// planSet is an accepted plan, the follow-up of its update_plan call:
// screened with the step, then kept on the run, shown in the thread, and
// recorded as plan.updated.
type planSet struct {
	ctx context.Context
	x   *execution
	up  *run.PlanUpdated
}

func newPlan(ctx context.Context, x *execution, p control.UpdatePlanArgs) *planSet {
	up := &run.PlanUpdated{Explanation: p.Explanation, Plan: make([]run.PlanStep, len(p.Plan))}
	for k, s := range p.Plan {
		up.Plan[k] = run.PlanStep{Step: s.Step, Status: s.Status}
	}
	return &planSet{ctx: ctx, x: x, up: up}
}

func (p *planSet) screen(s *screen) {
	s.add(&p.up.Explanation)
	for k := range p.up.Plan {
		s.add(&p.up.Plan[k].Step)
	}
}

func (p *planSet) done() []store.NewEvent {
	p.x.st.Plan = p.up
	p.x.showPlan(p.ctx, p.up)
	return []store.NewEvent{newEvent(run.EventPlanUpdated, p.up)}
}

// idempotencyKey names call i of the step about to be committed by the
// run, the agent, the step, and the call's place, tool and arguments: a retried step
// whose answer repeats the call sends the same key, and sandboxd answers it
// with its first result instead of running it again; a different call gets
// a key of its own.
func (x *execution) idempotencyKey(i int, call model.ToolCall) string {
	h := sha256.New()
	fmt.Fprintf(h, "%s\x00%s\x00%d\x00%d\x00%s\x00", x.run.ID, x.agent.id(), x.step+1, i, call.Name)
	h.Write(call.Arguments)
	return "af-" + hex.EncodeToString(h.Sum(nil)[:16])
}

// sandboxCall sends a call to the run's sandbox, starting it on first use.
func (x *execution) sandboxCall(ctx context.Context, i int, call model.ToolCall) tool.Result {
	return x.sandboxOp(ctx, call.Name, func(ctx context.Context, sb *launch.Sandbox) (tool.Result, error) {
		return x.sandboxSend(ctx, sb, i, call)
	})
}

// sandboxOp runs send against the run's sandbox, started on first use,
// with the agent and the fleet's tool timeout on its context; name starts
// its errors. A sandbox that does not answer is let go: the result is an
// error saying so, and the next call gets a new sandbox.
func (x *execution) sandboxOp(ctx context.Context, name string, send func(context.Context, *launch.Sandbox) (tool.Result, error)) tool.Result {
	sb, err := x.acquireSandbox(ctx)
	if err != nil {
		return tool.Errorf("%s: no sandbox could be started for this run: %v", name, err)
	}
	// The fleet's tool timeout goes with every call: a pooled sandbox was
	// started before the run, without it.
	cctx := client.WithToolTimeout(client.WithAgent(ctx, x.agent.id()), x.def.Limits.ToolTimeout())
	res, err := send(cctx, sb)
	if len(res.Egress) > 0 {
		x.recordSandboxEgress(ctx, name, res.Egress)
		res.Egress = nil
	}
	switch {
	case err == nil:
		if note := x.takeFolderNote(); note != "" {
			res.Output = note + res.Output
		}
		return res
	case errors.Is(err, client.ErrUnavailable) && ctx.Err() == nil:
		x.r.log.Warn("sandbox stopped answering", "run_id", x.run.ID, "sandbox", sb.ID, "error", err)
		x.dropSandbox(ctx, sb)
		if x.keepsFolders() {
			return tool.Errorf("%s: the sandbox stopped answering (%v). The next call starts a new sandbox: the fleet's folder comes back as the last run saved it (this run's changes to it are lost), running exec_command sessions are not kept", name, err)
		}
		return tool.Errorf("%s: the sandbox stopped answering (%v). The next call starts a new sandbox: the files in the workdir and /agent are kept, running exec_command sessions are not", name, err)
	}
	return tool.Errorf("%s: %v", name, err)
}

func (x *execution) acquireSandbox(ctx context.Context) (*launch.Sandbox, error) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.sandbox != nil {
		return x.sandbox, nil
	}
	sb, err := x.r.cfg.Sandboxes.Acquire(ctx, x.spec())
	if err != nil {
		return nil, err
	}
	if _, own := x.agent.(ownAgent); own { // a child shares the run's
		if x.sandboxFrom.IsZero() {
			x.sandboxFrom = time.Now()
		}
		claim := sb.Claim
		if claim == "" {
			claim = launch.ClaimCold
		}
		x.record(metrics.Dim{Name: metrics.DimClaim, Value: claim}, count(metrics.SandboxClaims, 1))
	}
	x.sandbox = sb
	x.restoreFolder(ctx, sb)
	return sb, nil
}

// dropSandbox lets go of sb when it is still the run's sandbox.
func (x *execution) dropSandbox(ctx context.Context, sb *launch.Sandbox) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.sandbox != sb {
		return
	}
	x.sandbox = nil
	if err := x.agent.releaseSandbox(ctx, x); err != nil {
		x.r.log.Warn("release a sandbox that stopped answering", "run_id", x.run.ID, "error", err)
	}
}

// releaseSandbox stops the run's sandbox: the run has ended.
func (x *execution) releaseSandbox(ctx context.Context) {
	x.mu.Lock()
	x.sandbox = nil
	x.mu.Unlock()
	if err := x.agent.releaseSandbox(context.WithoutCancel(ctx), x); err != nil {
		x.r.log.Warn("release the run's sandbox", "run_id", x.run.ID, "error", err)
	}
}

// webCall sends a call to the webtools function with the agent's host list
// and secret names (never values): the fleet's, or a child's share of them.
func (x *execution) webCall(ctx context.Context, call model.ToolCall) tool.Result {
	g := x.agent.grant(x.def)
	payload, err := json.Marshal(wire.Request{Tool: call.Name, Arguments: call.Arguments, Hosts: g.hosts,
		Secrets: g.secrets, RunID: x.run.ID, ChildID: x.agent.id(), Fleet: x.run.Fleet})
	if err != nil {
		return tool.Errorf("%s: %v", call.Name, err)
	}
	out, err := x.r.cfg.Invoker.Call(ctx, invoke.Webtools, payload)
	if err != nil {
		return tool.Errorf("%s: the web tools failed: %v", call.Name, err)
	}
	var res tool.Result
	if err := json.Unmarshal(out, &res); err != nil {
		return tool.Errorf("%s: the web tools answered something that is not a tool result", call.Name)
	}
	return res
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
