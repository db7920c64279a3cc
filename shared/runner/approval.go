package runner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/agentsfleet/agentsfleet/shared/fault"
	"github.com/agentsfleet/agentsfleet/shared/fleet"
	"github.com/agentsfleet/agentsfleet/shared/model"
	"github.com/agentsfleet/agentsfleet/shared/run"
	"github.com/agentsfleet/agentsfleet/shared/secret"
	"github.com/agentsfleet/agentsfleet/shared/slack/thread"
	"github.com/agentsfleet/agentsfleet/shared/store"
	"github.com/agentsfleet/agentsfleet/shared/tool"
	"github.com/agentsfleet/agentsfleet/shared/web/spec"
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
// A secret that says approve = true is asked about the same way, once per
// host in a run: a call that would have the credential firewall fill it
// for a host the run holds no grant for (store.Run.SecretGrants) waits on
// an approval naming the secret, the host and the method; approved, the
// grant is the run's from then on (the webtools function fills the secret
// for that host only with it), denied or expired, the call is refused.
//
// A child agent never waits: a call of its that needs approval is refused
// with an error result, so that spawning a child is no way around a
// person.

// waiting is the checkpoint's record of a step that waits: its approvals,
// by the id of the call each is for (a call's own, then its secrets').
type waiting struct {
	Approvals map[string][]string `json:"approvals"`
}

// ask is one approval a call needs: of the call itself (secret empty), or
// of the use of secret for host and method.
type ask struct {
	call                 int // index into the answer's calls
	secret, host, method string
}

// secretAsks returns the uses of secrets that say approve = true that call
// would make for a host the run holds no grant for: http_request's
// references (in its URL, headers and body) for its URL's host, and
// pushover's two secrets for Pushover's API. A URL without a host the
// runner can read asks nothing: the webtools function, which checks the
// grant again before it fills, refuses it.
func (x *execution) secretAsks(call model.ToolCall) []ask {
	if len(x.def.ApproveSecrets) == 0 {
		return nil
	}
	var names []string
	var method, host string
	switch call.Name {
	case "http_request":
		var args struct {
			Method string `json:"method"`
			URL    string `json:"url"`
		}
		_ = json.Unmarshal(call.Arguments, &args)
		names = refsIn(call.Arguments)
		method, host = strings.ToUpper(args.Method), hostOf(args.URL)
		if method == "" {
			method = http.MethodGet // http_request's default
		}
		if host == "" {
			// No host to ask about: the webtools function refuses the
			// call, or fills nothing that asks without a grant.
			return nil
		}
	case "pushover":
		names = []string{spec.PushoverTokenSecret, spec.PushoverUserSecret}
		method, host = http.MethodPost, spec.PushoverHost
	default:
		return nil
	}
	var out []ask
	for _, name := range names {
		if !slices.Contains(x.def.ApproveSecrets, name) || slices.Contains(x.run.SecretGrants, run.SecretGrant(name, host)) ||
			slices.ContainsFunc(out, func(a ask) bool { return a.secret == name }) {
			continue
		}
		out = append(out, ask{secret: name, host: host, method: method})
	}
	return out
}

// refsIn returns the secrets referenced in the strings of raw, a call's
// JSON arguments, decoded as the tool decodes them (a reference may come
// with its characters escaped).
func refsIn(raw json.RawMessage) []string {
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return secret.Refs(string(raw))
	}
	var out []string
	var walk func(any)
	walk = func(v any) {
		switch v := v.(type) {
		case string:
			out = append(out, secret.Refs(v)...)
		case []any:
			for _, e := range v {
				walk(e)
			}
		case map[string]any:
			for _, k := range slices.Sorted(maps.Keys(v)) { // the same order every time
				out = append(out, secret.Refs(k)...)
				walk(v[k])
			}
		}
	}
	walk(v)
	return out
}

// hostOf is rawURL's host as the host list reads one, "" when it has none.
func hostOf(rawURL string) string {
	u, err := url.Parse(strings.TrimSpace(rawURL))
	if err != nil || u.Hostname() == "" {
		return ""
	}
	host, _ := fleet.NormalizeHost(u.Hostname())
	return host
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
	if x.agent.id() == "" {
		return tool.Result{}, false
	}
	if x.needsApproval(call) {
		return tool.Errorf("%s: this call needs a person's approval ([x-agentsfleet.approval]), which a child agent cannot wait for; leave it to the run's own agent", call.Name), true
	}
	if asks := x.secretAsks(call); len(asks) > 0 {
		return tool.Errorf("%s: the secret %s needs a person's approval for %s in this run, which a child agent cannot wait for; leave it to the run's own agent. Nothing was sent",
			call.Name, asks[0].secret, asks[0].host), true
	}
	return tool.Result{}, false
}

// waits returns the approvals the answer's calls wait for, a call's own
// before its secrets', each secret and host asked once: none for a child
// agent (its calls are refused instead).
func (x *execution) waits(calls []model.ToolCall) []ask {
	if x.agent.id() != "" {
		return nil
	}
	var out []ask
	for i, c := range calls {
		if x.needsApproval(c) {
			out = append(out, ask{call: i})
		}
		for _, a := range x.secretAsks(c) {
			if !slices.ContainsFunc(out, func(b ask) bool { return b.secret == a.secret && b.host == a.host }) {
				a.call = i
				out = append(out, a)
			}
		}
	}
	return out
}

// wait commits the step of an answer whose calls (tcs) wait for a person
// (waits), moving the run to waiting, after spend.
func (x *execution) wait(ctx context.Context, tcs []run.ToolCall, spend store.Budget, waits []ask) error {
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
	expires := now.Add(x.expiry())
	events := make([]store.NewEvent, 0, len(tcs)+len(waits))
	for _, tc := range tcs {
		events = append(events, newEvent(run.EventToolCall, tc))
	}
	w := &waiting{Approvals: map[string][]string{}}
	news := make([]store.NewApproval, len(waits))
	for k, a := range waits {
		tc := tcs[a.call]
		id := store.NewApprovalID(now)
		news[k] = store.NewApproval{ID: id, CallID: tc.CallID, Tool: tc.Name, Arguments: tc.Arguments, ExpiresAt: expires,
			Secret: a.secret, Host: a.host, Method: a.method}
		w.Approvals[tc.CallID] = append(w.Approvals[tc.CallID], id)
		events = append(events, newEvent(run.EventApprovalRequested, run.ApprovalRequested{
			ApprovalID: id, CallID: tc.CallID, Tool: tc.Name, Arguments: tc.Arguments, ExpiresAt: expires,
			Secret: a.secret, Host: a.host, Method: a.method}))
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
		shown[k] = thread.Approval{ID: a.ID, Tool: a.Tool, Arguments: thread.Inert(string(a.Arguments)),
			Secret: a.Secret, Host: thread.Inert(a.Host), Method: a.Method}
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
		for _, id := range x.st.Waiting.Approvals[c.ID] {
			a, ok := byID[id]
			if !ok || a.Status == run.DecisionPending {
				// Not decided, though the run runs again (moved by hand):
				// the call does not run without a person's yes.
				a.Status, a.By = run.DecisionDeny, "agentsfleet (no decision)"
			}
			decided = append(decided, newEvent(run.EventApprovalDecided, run.ApprovalDecided{ApprovalID: id, Decision: a.Status, By: a.By, Note: a.Note}))
			if _, refused := x.verdicts[c.ID]; refused {
				continue
			}
			if why := verdict(c.Name, a, x.expiry()); why != "" {
				x.verdicts[c.ID] = why
			}
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
// when a approves it; expiry is how long the approval waited.
func verdict(name string, a store.Approval, expiry time.Duration) string {
	what := "this call"
	if a.Secret != "" {
		what = fmt.Sprintf("the use of the secret %s for %s %s", a.Secret, a.Method, a.Host)
	}
	switch a.Status {
	case run.DecisionApprove:
		return ""
	case run.DecisionExpired:
		return fmt.Sprintf("%s: not run: nobody approved %s within %d h, and its approval expired; the call did not happen", name, what, int(expiry.Hours()))
	}
	msg := fmt.Sprintf("%s: not run: %s denied %s", name, a.By, what)
	if a.Note != "" {
		msg += ", saying: " + a.Note
	}
	return msg + ". The call did not happen; do not make it again unless you are asked to."
}

// expiry is how long an approval of the run waits: the approval table's
// expire_hours, or its default where the Definition has no table (a
// secret's approval).
func (x *execution) expiry() time.Duration {
	if x.def.Approval != nil {
		return x.def.Approval.Expiry()
	}
	return fleet.DefaultApprovalExpireHours * time.Hour
}
