package runner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/agentsfleet/agentsfleet/shared/fault"
	"github.com/agentsfleet/agentsfleet/shared/fleet"
	"github.com/agentsfleet/agentsfleet/shared/model"
	"github.com/agentsfleet/agentsfleet/shared/run"
	"github.com/agentsfleet/agentsfleet/shared/slack/thread"
	"github.com/agentsfleet/agentsfleet/shared/store"
	"github.com/agentsfleet/agentsfleet/shared/tool"
)

// Approvals ([x-agentsfleet.approval]). When the model asks for calls of
// which some wait for a person, the step commits the model's answer, its
// tool.call events and an approval.requested event for each call that
// waits, with the run moved to waiting (store.Step.Wait), and the
// invocation ends: no call of the answer runs, and nothing runs or is
// billed while the run waits but the sandbox's idle time (it stops on its
// own idle timeout; the fleet's folder is saved first). The decision that
// leaves no approval pending moves the run back to running and starts an
// invocation (the API's, or the expiry sweep's), which goes on from the
// checkpoint: every call of the answer then runs, but a denied or expired
// one, which the model gets as an error result saying so, in one step
// with an approval.decided event for each.
//
// A child agent never waits: a call of its that needs approval is refused
// with an error result, so that spawning a child is no way around a
// person.

// waiting is the checkpoint's record of a step that waits: its approvals,
// by the id of the call each is for.
type waiting struct {
	Approvals map[string]string `json:"approvals"`
}

// needsApproval reports whether call waits for a person under the
// Definition's approval table. An http_request's host is read as the
// host list reads one (NormalizeHost); a host that cannot be read is
// taken to be on the table's hosts: asked about rather than let through.
func (x *execution) needsApproval(call model.ToolCall) bool {
	a := x.def.Approval
	if a == nil || call.Name != "http_request" {
		return a.Needs(call.Name, "", "")
	}
	var args struct {
		Method string `json:"method"`
		URL    string `json:"url"`
	}
	_ = json.Unmarshal(call.Arguments, &args)
	if args.Method == "" {
		args.Method = http.MethodGet // http_request's default
	}
	host := ""
	if u, err := url.Parse(strings.TrimSpace(args.URL)); err == nil && u.Hostname() != "" {
		host, _ = fleet.NormalizeHost(u.Hostname())
	}
	if host == "" {
		anyHost := *a
		anyHost.Hosts = nil
		return anyHost.Needs(call.Name, args.Method, "")
	}
	return a.Needs(call.Name, args.Method, host)
}

// approvalRefusal is the error result of a call the run may not make as
// it stands: one a person denied or let expire (verdicts), or one a child
// agent makes that would need approval.
func (x *execution) approvalRefusal(call model.ToolCall) (tool.Result, bool) {
	if why, ok := x.verdicts[call.ID]; ok {
		return tool.Errorf("%s", why), true
	}
	if x.agent.id() != "" && x.needsApproval(call) {
		return tool.Errorf("%s: this call needs a person's approval ([x-agentsfleet.approval]), which a child agent cannot wait for; leave it to the run's own agent", call.Name), true
	}
	return tool.Result{}, false
}

// waits returns the calls of the answer that wait for a person: none for
// a child agent (its calls are refused instead).
func (x *execution) waits(calls []model.ToolCall) []int {
	if x.agent.id() != "" || x.def.Approval == nil {
		return nil
	}
	var out []int
	for i, c := range calls {
		if x.needsApproval(c) {
			out = append(out, i)
		}
	}
	return out
}

// wait commits the step of an answer whose calls waits (indexes of tcs)
// wait for a person, moving the run to waiting, after spend.
func (x *execution) wait(ctx context.Context, tcs []run.ToolCall, spend store.Budget, waits []int) error {
	if len(waits) > store.MaxApprovalsPerStep {
		// More calls waiting than one step holds: the answer is refused as
		// a whole, and the model told to ask for fewer at once.
		return x.refuseWaits(ctx, tcs, spend, len(waits))
	}
	var sc screen
	for i := range tcs {
		sc.addJSON(&tcs[i].Arguments)
	}
	x.screen(ctx, &sc)
	now := x.r.cfg.Now().UTC()
	expires := now.Add(x.def.Approval.Expiry())
	events := make([]store.NewEvent, 0, len(tcs)+len(waits))
	for _, tc := range tcs {
		events = append(events, newEvent(run.EventToolCall, tc))
	}
	w := &waiting{Approvals: map[string]string{}}
	news := make([]store.NewApproval, len(waits))
	for k, i := range waits {
		tc := tcs[i]
		id := store.NewApprovalID(now)
		news[k] = store.NewApproval{ID: id, CallID: tc.CallID, Tool: tc.Name, Arguments: tc.Arguments, ExpiresAt: expires}
		w.Approvals[tc.CallID] = id
		events = append(events, newEvent(run.EventApprovalRequested, run.ApprovalRequested{
			ApprovalID: id, CallID: tc.CallID, Tool: tc.Name, Arguments: tc.Arguments, ExpiresAt: expires}))
	}
	events = append(events, x.saveFolder(ctx)...)
	x.st.Waiting = w
	err := x.commit(ctx, store.Step{Spend: spend, WhileRunning: true, Wait: news}, events...)
	switch {
	case errors.Is(err, store.ErrRunEnded):
		x.st.Waiting = nil
		return x.end(ctx, store.StatusCancelled, "", nil)
	case errors.Is(err, fault.RunBudgetSpent):
		x.st.Waiting = nil
		return x.budgetSpent(ctx, err)
	case err != nil:
		return err
	}
	x.r.log.Info("waiting for approval", "run_id", x.run.ID, "approvals", len(news), "expires_at", expires)
	// The thread's Approve and Deny buttons: the step is committed, so a
	// click always finds the approvals it names.
	shown := make([]thread.Approval, len(news))
	for k, a := range news {
		shown[k] = thread.Approval{ID: a.ID, Tool: a.Tool, Arguments: thread.Inert(string(a.Arguments))}
	}
	x.show(ctx, thread.Request{Op: thread.OpApproval, Approvals: shown, Expires: expires.Format("2006-01-02 15:04 UTC")})
	return nil
}

// refuseWaits answers every call of tcs with an error saying that n calls
// of one answer cannot wait at once, and commits the step.
func (x *execution) refuseWaits(ctx context.Context, tcs []run.ToolCall, spend store.Budget, n int) error {
	x.verdicts = map[string]string{}
	calls := make([]model.ToolCall, len(tcs))
	for i, tc := range tcs {
		calls[i] = model.ToolCall{ID: tc.CallID, Name: tc.Name, Arguments: tc.Arguments}
		x.verdicts[tc.CallID] = fmt.Sprintf("%s: not run: %d calls of this answer need a person's approval, and at most %d may wait at once; ask for fewer in one answer",
			tc.Name, n, store.MaxApprovalsPerStep)
	}
	defer func() { x.verdicts = nil }()
	_, err := x.perform(ctx, calls, tcs, spend, nil)
	return err
}

// resume goes on from a step that waited: every decision is in (the run
// is running again), so the answer's calls run now, a denied or expired
// one answered with an error saying so.
func (x *execution) resume(ctx context.Context) (done bool, err error) {
	last := len(x.st.Messages) - 1
	if last < 0 || x.st.Messages[last].Role != model.Assistant || len(x.st.Messages[last].ToolCalls()) == 0 {
		return true, fmt.Errorf("runner: run %s waited for approval, but its checkpoint does not end with the calls that waited", x.run.ID)
	}
	calls := x.st.Messages[last].ToolCalls()
	all, err := x.r.cfg.Store.ListApprovals(ctx, x.run.ID)
	if err != nil {
		return true, fmt.Errorf("runner: %w", err)
	}
	byID := map[string]store.Approval{}
	for _, a := range all {
		byID[a.ID] = a
	}
	x.verdicts = map[string]string{}
	defer func() { x.verdicts = nil }()
	var decided []store.NewEvent
	for _, c := range calls {
		id, ok := x.st.Waiting.Approvals[c.ID]
		if !ok {
			continue
		}
		a, ok := byID[id]
		if !ok || a.Status == run.DecisionPending {
			// Not decided, though the run runs again (moved by hand): the
			// call does not run without a person's yes.
			a.Status, a.By = run.DecisionDeny, "agentsfleet (no decision)"
		}
		decided = append(decided, newEvent(run.EventApprovalDecided, run.ApprovalDecided{ApprovalID: id, Decision: a.Status, By: a.By, Note: a.Note}))
		if why := verdict(c.Name, a, x.def.Approval); why != "" {
			x.verdicts[c.ID] = why
		}
	}
	x.st.Waiting = nil
	for _, c := range calls {
		tc := run.ToolCall{CallID: c.ID, Name: c.Name, Arguments: c.Arguments}
		x.note(Note{Calling: &tc})
	}
	return x.perform(ctx, calls, nil, store.Budget{}, decided)
}

// verdict is what the model is told of a call that a decides against, ""
// when a approves it.
func verdict(name string, a store.Approval, table *fleet.Approval) string {
	switch a.Status {
	case run.DecisionApprove:
		return ""
	case run.DecisionExpired:
		hours := 0
		if table != nil {
			hours = table.ExpireHours
		}
		return fmt.Sprintf("%s: not run: nobody approved this call within %d h, and its approval expired; the call did not happen", name, hours)
	}
	msg := fmt.Sprintf("%s: not run: %s denied this call", name, a.By)
	if a.Note != "" {
		msg += ", saying: " + a.Note
	}
	return msg + ". The call did not happen; do not make it again unless you are asked to."
}
