package store_test

import (
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentsfleet/agentsfleet/shared/fault"
	"github.com/agentsfleet/agentsfleet/shared/run"
	"github.com/agentsfleet/agentsfleet/shared/store"
)

// waitingRun is a running run, leased to "inv", whose step 1 waits for
// approvals of the calls named, expiring after ttl.
func waitingRun(t *testing.T, e *env, ttl time.Duration, calls ...string) (store.Run, []string) {
	t.Helper()
	r := e.running(t, "ops")
	if _, err := e.AcquireLease(ctx, r.ID, "inv", time.Minute); err != nil {
		t.Fatal(err)
	}
	var wait []store.NewApproval
	var ids []string
	for _, c := range calls {
		id := store.NewApprovalID(e.clock.Now())
		ids = append(ids, id)
		wait = append(wait, store.NewApproval{ID: id, CallID: c, Tool: "http_request", Arguments: json.RawMessage(`{"url":"https://pay.example/x"}`),
			ExpiresAt: e.clock.Now().Add(ttl)})
	}
	if _, err := e.CommitStep(ctx, r.ID, store.Step{Holder: "inv", Number: 1, WhileRunning: true, Wait: wait,
		Events: []store.NewEvent{{Type: run.EventApprovalRequested}}}); err != nil {
		t.Fatal(err)
	}
	got, err := e.GetRun(ctx, r.ID)
	if err != nil || got.Status != store.StatusWaiting || got.PendingApprovals != len(calls) {
		t.Fatalf("after the waiting step: run %+v, %v; want waiting for %d approvals", got, err, len(calls))
	}
	return got, ids
}

func TestApprovalsDecideAndResume(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.fleet(t, "ops")
	r, ids := waitingRun(t, e, time.Hour, "c1", "c2")
	all, err := e.ListApprovals(ctx, r.ID)
	slices.SortFunc(all, func(a, b store.Approval) int { return strings.Compare(a.CallID, b.CallID) })
	if err != nil || len(all) != 2 || all[0].Status != run.DecisionPending || all[0].CallID != "c1" || all[1].CallID != "c2" {
		t.Fatalf("ListApprovals = %+v, %v; want c1 and c2 pending", all, err)
	}
	for _, tt := range []struct {
		id       string
		decision run.Decision
		by, note string
		want     fault.Code
	}{
		{ids[0], "maybe", "key:k1", "", fault.RequestInvalid},
		{ids[0], run.DecisionApprove, "", "", fault.RequestInvalid},
		{ids[0], run.DecisionApprove, "key:k1", string(make([]byte, run.MaxApprovalNote+1)), fault.RequestInvalid},
		{"apr_none", run.DecisionApprove, "key:k1", "", fault.ApprovalNotFound},
		{ids[0], run.DecisionExpired, run.DecidedByExpiry, "", fault.ApprovalDecided}, // not due yet
	} {
		if _, _, err := e.Decide(ctx, r.ID, tt.id, tt.decision, tt.by, tt.note); !errors.Is(err, tt.want) {
			t.Errorf("Decide(%s, %q, %q) = %v, want %v", tt.id, tt.decision, tt.by, err, tt.want)
		}
	}
	a, resume, err := e.Decide(ctx, r.ID, ids[0], run.DecisionApprove, "key:k1", "fine")
	if err != nil || resume || a.Status != run.DecisionApprove || a.By != "key:k1" || a.Note != "fine" || a.DecidedAt.IsZero() {
		t.Fatalf("the first decision: %+v, resume=%v, %v; want approved, the run still waiting", a, resume, err)
	}
	if _, _, err := e.Decide(ctx, r.ID, ids[0], run.DecisionDeny, "key:k2", ""); !errors.Is(err, fault.ApprovalDecided) {
		t.Errorf("deciding again: %v, want fault.ApprovalDecided", err)
	}
	if got, _ := e.GetRun(ctx, r.ID); got.Status != store.StatusWaiting || got.PendingApprovals != 1 {
		t.Fatalf("after one of two: %s with %d pending, want waiting with 1", got.Status, got.PendingApprovals)
	}
	if _, resume, err := e.Decide(ctx, r.ID, ids[1], run.DecisionDeny, "key:k1", "not today"); err != nil || !resume {
		t.Fatalf("the last decision: resume=%v, %v; want the run resumed", resume, err)
	}
	if got, _ := e.GetRun(ctx, r.ID); got.Status != store.StatusRunning || got.PendingApprovals != 0 {
		t.Fatalf("after both: %s with %d pending, want running with none", got.Status, got.PendingApprovals)
	}
	// Running again, the run is in the lapsed sweep's reach once nobody
	// holds it (the waiting invocation's lease ran out here).
	e.clock.Advance(2 * time.Minute)
	lapsed, err := e.ListLapsed(ctx, e.clock.Now(), 0)
	if err != nil || !slices.ContainsFunc(lapsed, func(l store.Lapsed) bool { return l.RunID == r.ID }) {
		t.Errorf("ListLapsed after the resume = %+v, %v; want the run (nobody took it yet)", lapsed, err)
	}
}

func TestApprovalsExpire(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.fleet(t, "ops")
	r, ids := waitingRun(t, e, time.Hour, "c1")
	other, _ := waitingRun(t, e, 3*time.Hour, "c9")
	if resumed, err := e.ExpireApprovals(ctx, e.clock.Now(), 0); err != nil || len(resumed) != 0 {
		t.Fatalf("ExpireApprovals before the expiry = %v, %v; want nothing", resumed, err)
	}
	e.clock.Advance(time.Hour)
	if _, _, err := e.Decide(ctx, r.ID, ids[0], run.DecisionApprove, "key:k1", ""); !errors.Is(err, fault.ApprovalDecided) {
		t.Errorf("approving at the expiry: %v, want fault.ApprovalDecided", err)
	}
	resumed, err := e.ExpireApprovals(ctx, e.clock.Now(), 0)
	if err != nil || !slices.Equal(resumed, []string{r.ID}) {
		t.Fatalf("ExpireApprovals = %v, %v; want %s alone", resumed, err, r.ID)
	}
	a, err := e.GetApproval(ctx, r.ID, ids[0])
	if err != nil || a.Status != run.DecisionExpired || a.By != run.DecidedByExpiry {
		t.Fatalf("the approval after its expiry: %+v, %v", a, err)
	}
	if again, err := e.ExpireApprovals(ctx, e.clock.Now(), 0); err != nil || len(again) != 0 {
		t.Errorf("ExpireApprovals again = %v, %v; want nothing", again, err)
	}
	if got, _ := e.GetRun(ctx, other.ID); got.Status != store.StatusWaiting {
		t.Errorf("the run whose approval is not due is %s, want waiting", got.Status)
	}
}

func TestApprovalsOfACancelledRun(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.fleet(t, "ops")
	r, ids := waitingRun(t, e, time.Hour, "c1")
	if _, err := e.Transition(ctx, r.ID, store.StatusCancelled, "cancelled"); err != nil {
		t.Fatal(err)
	}
	if _, _, err := e.Decide(ctx, r.ID, ids[0], run.DecisionApprove, "key:k1", ""); !errors.Is(err, fault.ApprovalDecided) {
		t.Errorf("approving for a cancelled run: %v, want fault.ApprovalDecided", err)
	}
	e.clock.Advance(2 * time.Hour)
	if resumed, err := e.ExpireApprovals(ctx, e.clock.Now(), 0); err != nil || len(resumed) != 0 {
		t.Errorf("ExpireApprovals for a cancelled run = %v, %v; want nothing", resumed, err)
	}
	if got, _ := e.GetRun(ctx, r.ID); got.Status != store.StatusCancelled {
		t.Errorf("the run is %s, want cancelled", got.Status)
	}
}

func TestAWaitingStepIsChecked(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.fleet(t, "ops")
	r := e.running(t, "ops")
	if _, err := e.AcquireLease(ctx, r.ID, "inv", time.Minute); err != nil {
		t.Fatal(err)
	}
	ok := store.NewApproval{ID: store.NewApprovalID(e.clock.Now()), CallID: "c", Tool: "bash", Arguments: json.RawMessage(`{}`), ExpiresAt: e.clock.Now().Add(time.Hour)}
	for name, st := range map[string]store.Step{
		"not while running": {Holder: "inv", Number: 1, Wait: []store.NewApproval{ok}},
		"too many":          {Holder: "inv", Number: 1, WhileRunning: true, Wait: slices.Repeat([]store.NewApproval{ok}, store.MaxApprovalsPerStep+1)},
		"no id":             {Holder: "inv", Number: 1, WhileRunning: true, Wait: []store.NewApproval{{CallID: "c", Tool: "bash", Arguments: json.RawMessage(`{}`), ExpiresAt: ok.ExpiresAt}}},
		"bad arguments":     {Holder: "inv", Number: 1, WhileRunning: true, Wait: []store.NewApproval{{ID: ok.ID, CallID: "c", Tool: "bash", Arguments: json.RawMessage(`{`), ExpiresAt: ok.ExpiresAt}}},
	} {
		if _, err := e.CommitStep(ctx, r.ID, st); !errors.Is(err, fault.RequestInvalid) {
			t.Errorf("%s: CommitStep = %v, want fault.RequestInvalid", name, err)
		}
	}
	if got, _ := e.GetRun(ctx, r.ID); got.Status != store.StatusRunning || got.CheckpointStep != 0 {
		t.Errorf("after refused steps: %s at step %d, want running at 0", got.Status, got.CheckpointStep)
	}
}

// An approved secret's use is granted on the run for its host; a denied
// one grants nothing; a secret's approval needs its host and method.
func TestSecretApprovalGrants(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.fleet(t, "ops")
	r := e.running(t, "ops")
	if _, err := e.AcquireLease(ctx, r.ID, "inv", time.Minute); err != nil {
		t.Fatal(err)
	}
	exp := e.clock.Now().Add(time.Hour)
	args := json.RawMessage(`{"url":"https://api.stripe.com/v1/charges"}`)
	bad := store.Step{Holder: "inv", Number: 1, WhileRunning: true,
		Wait: []store.NewApproval{{ID: store.NewApprovalID(e.clock.Now()), CallID: "c1", Tool: "http_request", Arguments: args, ExpiresAt: exp, Secret: "STRIPE"}}}
	if _, err := e.CommitStep(ctx, r.ID, bad); !errors.Is(err, fault.RequestInvalid) {
		t.Fatalf("a secret's approval without host and method: %v, want fault.RequestInvalid", err)
	}
	ids := []string{store.NewApprovalID(e.clock.Now()), store.NewApprovalID(e.clock.Now())}
	wait := []store.NewApproval{
		{ID: ids[0], CallID: "c1", Tool: "http_request", Arguments: args, ExpiresAt: exp, Secret: "STRIPE", Host: "api.stripe.com", Method: "POST"},
		{ID: ids[1], CallID: "c1", Tool: "http_request", Arguments: args, ExpiresAt: exp, Secret: "OTHER", Host: "api.stripe.com", Method: "POST"},
	}
	if _, err := e.CommitStep(ctx, r.ID, store.Step{Holder: "inv", Number: 1, WhileRunning: true, Wait: wait}); err != nil {
		t.Fatal(err)
	}
	if a, err := e.GetApproval(ctx, r.ID, ids[0]); err != nil || a.Secret != "STRIPE" || a.Host != "api.stripe.com" || a.Method != "POST" {
		t.Fatalf("GetApproval = %+v, %v; want the secret, host and method kept", a, err)
	}
	if _, _, err := e.Decide(ctx, r.ID, ids[1], run.DecisionDeny, "key:k1", ""); err != nil {
		t.Fatal(err)
	}
	if got, _ := e.GetRun(ctx, r.ID); len(got.SecretGrants) != 0 {
		t.Fatalf("a denial granted %v", got.SecretGrants)
	}
	if _, _, err := e.Decide(ctx, r.ID, ids[0], run.DecisionApprove, "key:k1", ""); err != nil {
		t.Fatal(err)
	}
	if got, _ := e.GetRun(ctx, r.ID); !slices.Equal(got.SecretGrants, []string{run.SecretGrant("STRIPE", "api.stripe.com")}) {
		t.Fatalf("after the approval the run grants %v, want STRIPE for api.stripe.com", got.SecretGrants)
	}
}
