package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/agentsfleet/agentsfleet/shared/fault"
	"github.com/agentsfleet/agentsfleet/shared/run"
)

// Approvals. A step that asks for approvals (Step.Wait) writes one item per
// call that waits, RUN#<run> / APR#<approval id>, and moves the run from
// running to waiting in the same transaction, counting the approvals still
// pending on the run item (aprPending). A waiting run sits in GSI2 under
// gsi2Wait, its sort key the earliest expiry of its approvals, so that the
// expiry sweep (ExpireApprovals) reads only the runs with one due.
//
// Decide moves one approval out of pending and counts it down on the run
// in one transaction; the decision that brings the count to zero moves the
// run back to running, once (conditional on waiting and a zero count), and
// its caller starts a runner invocation. A cancel while waiting ends the
// run; the approvals left pending can then no longer be decided.
const (
	prefixApproval = "APR#"
	gsi2Wait       = "WAIT"
	// MaxApprovalsPerStep bounds the calls of one answer that wait.
	MaxApprovalsPerStep = 8
)

// NewApproval is one call of a step that waits for a person.
type NewApproval struct {
	// ID is the approval's id (NewApprovalID), named by the step's
	// approval.requested event.
	ID     string
	CallID string
	Tool   string
	// Arguments are the call's, screened for the fleet's secret values.
	Arguments json.RawMessage
	ExpiresAt time.Time
	// Secret, Host and Method make it an approval of a secret's use (a
	// secret that says approve = true) rather than of the call: approved,
	// the secret may be filled for Host in the rest of the run
	// (Run.SecretGrants). Empty for a call's approval.
	Secret, Host, Method string
}

// Approval is a call that waits, or waited, for a person.
type Approval struct {
	ID          string
	RunID       string
	CallID      string
	Tool        string
	Arguments   json.RawMessage
	Status      run.Decision // pending until decided or expired
	By          string
	Note        string
	RequestedAt time.Time
	ExpiresAt   time.Time
	DecidedAt   time.Time // zero while pending
	// Secret, Host and Method: see NewApproval.
	Secret, Host, Method string
}

// NewApprovalID returns a new approval id, apr_ and a time-sorted suffix.
func NewApprovalID(now time.Time) string { return newID("apr_", now) }

type approvalRecord struct {
	PK          string          `dynamodbav:"pk"`
	SK          string          `dynamodbav:"sk"`
	ID          string          `dynamodbav:"id"`
	CallID      string          `dynamodbav:"callId"`
	Tool        string          `dynamodbav:"tool"`
	Arguments   json.RawMessage `dynamodbav:"args"`
	Status      run.Decision    `dynamodbav:"status"`
	By          string          `dynamodbav:"by,omitempty"`
	Note        string          `dynamodbav:"note,omitempty"`
	RequestedAt time.Time       `dynamodbav:"requestedAt"`
	ExpiresAt   int64           `dynamodbav:"expiresAt"` // Unix ms, for the condition
	DecidedAt   *time.Time      `dynamodbav:"decidedAt,omitempty"`
	Secret      string          `dynamodbav:"secret,omitempty"`
	Host        string          `dynamodbav:"host,omitempty"`
	Method      string          `dynamodbav:"method,omitempty"`
}

func (r approvalRecord) approval() Approval {
	a := Approval{ID: r.ID, RunID: strings.TrimPrefix(r.PK, prefixRun), CallID: r.CallID, Tool: r.Tool, Arguments: r.Arguments,
		Status: r.Status, By: r.By, Note: r.Note, RequestedAt: r.RequestedAt, ExpiresAt: time.UnixMilli(r.ExpiresAt).UTC(),
		Secret: r.Secret, Host: r.Host, Method: r.Method}
	if r.DecidedAt != nil {
		a.DecidedAt = *r.DecidedAt
	}
	return a
}

func approvalKey(runID, id string) map[string]types.AttributeValue {
	return key(prefixRun+runID, prefixApproval+id)
}

// checkWait refuses a step's approvals that are malformed, too many, or
// asked of a step that does not require the run to be running.
func (st Step) checkWait() error {
	if len(st.Wait) == 0 {
		return nil
	}
	if !st.WhileRunning {
		return fault.New(fault.RequestInvalid, "a step that waits for approvals must require the run to be running")
	}
	if len(st.Wait) > MaxApprovalsPerStep {
		return fault.New(fault.RequestInvalid, "%d calls wait for approval; at most %d of one answer may", len(st.Wait), MaxApprovalsPerStep)
	}
	if n := 2 + len(st.Turns) + len(st.Events) + len(st.Wait); n > 100 {
		return fmt.Errorf("a step of %d items, more than a transaction holds: %w", n, ErrTooLarge)
	}
	for _, a := range st.Wait {
		if !strings.HasPrefix(a.ID, "apr_") || a.CallID == "" || a.Tool == "" || a.ExpiresAt.IsZero() || !json.Valid(a.Arguments) {
			return fault.New(fault.RequestInvalid, "an approval needs an apr_ id, the call's id, tool and JSON arguments, and an expiry")
		}
		if a.Secret != "" && (a.Host == "" || a.Method == "" || strings.Contains(a.Secret, " ") || strings.Contains(a.Host, " ")) {
			return fault.New(fault.RequestInvalid, "an approval of a secret's use needs the secret's name, the host and the method")
		}
	}
	return nil
}

// wait adds to t the step's approvals, and to w, the run item's write,
// the move to waiting with their count and earliest expiry.
func (st Step) wait(t *txn, w *write, runID string, now time.Time) error {
	first := st.Wait[0].ExpiresAt
	for _, a := range st.Wait {
		if a.ExpiresAt.Before(first) {
			first = a.ExpiresAt
		}
		item, err := marshal(approvalRecord{PK: prefixRun + runID, SK: prefixApproval + a.ID, ID: a.ID, CallID: a.CallID,
			Tool: a.Tool, Arguments: a.Arguments, Status: run.DecisionPending, RequestedAt: now, ExpiresAt: a.ExpiresAt.UnixMilli(),
			Secret: a.Secret, Host: a.Host, Method: a.Method})
		if err != nil {
			return err
		}
		t.put("approval "+a.ID, item, newWrite().absent(), nil)
	}
	w.set("status", w.s(string(StatusWaiting))).set("statusAt", w.t(now)).set("aprPending", w.i(int64(len(st.Wait)))).
		set(AttrGSI2PK, w.s(gsi2Wait)).set(AttrGSI2SK, w.i(first.UnixMilli()))
	return nil
}

// ListApprovals returns the approvals of run runID, in the order of their
// ids (by the millisecond they were asked for, then at random).
func (s *Store) ListApprovals(ctx context.Context, runID string) ([]Approval, error) {
	e := newExpr()
	var out []Approval
	in := &dynamodb.QueryInput{
		TableName:                 &s.table,
		KeyConditionExpression:    aws.String(e.n(AttrPK) + " = " + e.s(prefixRun+runID) + " AND begins_with(" + e.n(AttrSK) + ", " + e.s(prefixApproval) + ")"),
		ExpressionAttributeNames:  e.nameMap(),
		ExpressionAttributeValues: e.valueMap(),
		ConsistentRead:            aws.Bool(true),
	}
	for {
		page, err := s.db.Query(ctx, in)
		if err != nil {
			return nil, fmt.Errorf("list the approvals of run %s: %w", runID, err)
		}
		for _, item := range page.Items {
			var r approvalRecord
			if err := unmarshal(item, &r); err != nil {
				return nil, err
			}
			out = append(out, r.approval())
		}
		if len(page.LastEvaluatedKey) == 0 {
			return out, nil
		}
		in.ExclusiveStartKey = page.LastEvaluatedKey
	}
}

// GetApproval returns approval id of run runID; fault.ApprovalNotFound
// when the run has none of that id.
func (s *Store) GetApproval(ctx context.Context, runID, id string) (Approval, error) {
	var r approvalRecord
	found, err := s.getRecord(ctx, approvalKey(runID, id), &r)
	if err == nil && !found {
		err = fault.New(fault.ApprovalNotFound, "run %s has no approval %s", runID, id)
	}
	return r.approval(), err
}

// Decide records decision (approve, deny, or expired) on approval id of run
// runID, by whom and with note (at most run.MaxApprovalNote bytes). A
// person's decision must come before the approval's expiry; an expiry
// after it. resume reports that it was the run's last pending approval and
// the run moved back to running: the caller starts a runner invocation.
//
// It fails with fault.ApprovalNotFound for an approval the run does not
// have, fault.ApprovalDecided for one decided or expired already or a run
// no longer waiting, and fault.RequestInvalid for a bad decision or note.
func (s *Store) Decide(ctx context.Context, runID, id string, decision run.Decision, by, note string) (a Approval, resume bool, err error) {
	switch {
	case decision != run.DecisionApprove && decision != run.DecisionDeny && decision != run.DecisionExpired:
		return Approval{}, false, fault.New(fault.RequestInvalid, "decision %q: want approve or deny", cut(string(decision), 40))
	case len(note) > run.MaxApprovalNote:
		return Approval{}, false, fault.New(fault.RequestInvalid, "the note is %d bytes; at most %d are allowed", len(note), run.MaxApprovalNote)
	case !utf8.ValidString(note):
		return Approval{}, false, fault.New(fault.RequestInvalid, "the note is not valid UTF-8 text")
	case by == "":
		return Approval{}, false, fault.New(fault.RequestInvalid, "a decision needs who made it")
	}
	// Read first for what the decision grants: a secret's approval names
	// the secret and host, which never change; the transaction's
	// conditions decide whether the decision lands.
	cur, err := s.GetApproval(ctx, runID, id)
	if err != nil {
		return Approval{}, false, err
	}
	now := s.now().UTC()
	t := s.newTxn()
	w := newWrite().exists()
	w.is("status", w.s(string(run.DecisionPending)))
	if decision == run.DecisionExpired {
		w.when(w.n("expiresAt") + " <= " + w.i(now.UnixMilli()))
	} else {
		w.above("expiresAt", now.UnixMilli())
	}
	w.set("status", w.s(string(decision))).set("by", w.s(by)).set("decidedAt", w.t(now))
	if note != "" {
		w.set("note", w.s(note))
	}
	t.update("approval "+id, approvalKey(runID, id), w, func(old map[string]types.AttributeValue) error {
		return s.undecidable(ctx, runID, id, old, now)
	})
	rw := newWrite().exists()
	rw.is("status", rw.s(string(StatusWaiting))).above("aprPending", 0).incr("aprPending", -1)
	if decision == run.DecisionApprove && cur.Secret != "" {
		rw.grant(cur.Secret, cur.Host)
	}
	t.update("run "+runID, runKey(runID), rw, func(old map[string]types.AttributeValue) error {
		cur, err := s.runFrom(ctx, runID, old)
		if err != nil {
			return err
		}
		return fault.New(fault.ApprovalDecided, "run %s is %s, not waiting for approval", runID, cur.Status)
	})
	if err := s.commit(ctx, t); err != nil {
		return Approval{}, false, fmt.Errorf("decide approval %s of run %s: %w", id, runID, err)
	}
	a = cur
	a.Status, a.By, a.Note, a.DecidedAt = decision, by, note, now
	resume, err = s.resumeWaiting(ctx, runID, now)
	return a, resume, err
}

// grant adds run.SecretGrant(secret, host) to the run's SecretGrants.
func (w *write) grant(secret, host string) *write {
	p := w.n("secretGrants")
	one := w.v(&types.AttributeValueMemberL{Value: []types.AttributeValue{&types.AttributeValueMemberS{Value: run.SecretGrant(secret, host)}}})
	none := w.v(&types.AttributeValueMemberL{Value: []types.AttributeValue{}})
	w.sets = append(w.sets, p+" = list_append(if_not_exists("+p+", "+none+"), "+one+")")
	return w
}

// undecidable says why approval id cannot be decided now, from the item
// its failed condition sent back.
func (s *Store) undecidable(ctx context.Context, runID, id string, old map[string]types.AttributeValue, now time.Time) error {
	item, err := s.current(ctx, approvalKey(runID, id), old)
	if err != nil {
		return err
	}
	if item == nil {
		return fault.New(fault.ApprovalNotFound, "run %s has no approval %s", runID, id)
	}
	var r approvalRecord
	if err := unmarshal(item, &r); err != nil {
		return err
	}
	a := r.approval()
	switch {
	case a.Status == run.DecisionExpired:
		return fault.New(fault.ApprovalDecided, "approval %s expired at %s", id, a.DecidedAt.Format(time.RFC3339))
	case a.Status != run.DecisionPending:
		return fault.New(fault.ApprovalDecided, "approval %s was decided already: %s by %s at %s", id, a.Status, a.By, a.DecidedAt.Format(time.RFC3339))
	case !a.ExpiresAt.After(now):
		return fault.New(fault.ApprovalDecided, "approval %s expired at %s", id, a.ExpiresAt.Format(time.RFC3339))
	}
	return fault.New(fault.ApprovalDecided, "approval %s does not expire before %s", id, a.ExpiresAt.Format(time.RFC3339))
}

// resumeWaiting moves the run from waiting back to running once no
// approval is pending: into GSI2's live items from now (as a released
// lease is), so that a lost invocation is found by the lapsed sweep. It
// reports whether this call moved it.
func (s *Store) resumeWaiting(ctx context.Context, runID string, now time.Time) (bool, error) {
	w := newWrite().exists()
	w.is("status", w.s(string(StatusWaiting))).is("aprPending", w.i(0)).
		set("status", w.s(string(StatusRunning))).set("statusAt", w.t(now)).
		set(AttrGSI2PK, w.s(gsi2Live)).set(AttrGSI2SK, w.i(now.UnixMilli()))
	_, err := s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: &s.table, Key: runKey(runID), UpdateExpression: w.update(), ConditionExpression: w.condition(),
		ExpressionAttributeNames: w.nameMap(), ExpressionAttributeValues: w.valueMap(),
	})
	if _, failed := conditionFailed(err); failed {
		return false, nil // approvals still pending, or resumed or cancelled meanwhile
	}
	if err != nil {
		return false, fmt.Errorf("resume run %s: %w", runID, err)
	}
	return true, nil
}

// ExpireApprovals expires every pending approval whose expiry is at or
// before now, of at most limit waiting runs (the earliest due first), and
// returns the runs that it moved back to running: the caller starts a
// runner invocation for each. Safe to call concurrently and again: an
// approval decided meanwhile is left as it was decided.
func (s *Store) ExpireApprovals(ctx context.Context, now time.Time, limit int) (resumed []string, err error) {
	e := newExpr()
	out, err := s.db.Query(ctx, &dynamodb.QueryInput{
		TableName: &s.table,
		IndexName: aws.String(IndexGSI2),
		KeyConditionExpression: aws.String(e.n(AttrGSI2PK) + " = " + e.s(gsi2Wait) +
			" AND " + e.n(AttrGSI2SK) + " <= " + e.i(now.UnixMilli())),
		ExpressionAttributeNames:  e.nameMap(),
		ExpressionAttributeValues: e.valueMap(),
		ScanIndexForward:          aws.Bool(true),
		Limit:                     aws.Int32(pageSize(limit, DefaultLapsedLimit, MaxLapsedLimit)),
	})
	if err != nil {
		return nil, fmt.Errorf("list runs with approvals due: %w", err)
	}
	for _, k := range out.Items {
		var keys struct {
			PK string `dynamodbav:"pk"`
		}
		if err := unmarshal(k, &keys); err != nil {
			return resumed, err
		}
		runID, ok := strings.CutPrefix(keys.PK, prefixRun)
		if !ok {
			continue
		}
		all, err := s.ListApprovals(ctx, runID)
		if err != nil {
			return resumed, err
		}
		for _, a := range all {
			if a.Status != run.DecisionPending || a.ExpiresAt.After(now) {
				continue
			}
			_, resume, err := s.Decide(ctx, runID, a.ID, run.DecisionExpired, run.DecidedByExpiry, "")
			if errors.Is(err, fault.ApprovalDecided) {
				continue // decided, or the run cancelled, meanwhile
			}
			if err != nil {
				return resumed, err
			}
			if resume {
				resumed = append(resumed, runID)
			}
		}
	}
	return resumed, nil
}
