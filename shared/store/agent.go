package store

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/agentsfleet/agentsfleet/shared/fault"
)

// A child agent is executed like a run: by one runner invocation at a time,
// which holds the child's lease (on the child's item), commits the child's
// steps one by one with a checkpoint of its own, and spends on the run's
// budget. The child's events go to the run's log, marked with its id.

func (s *Store) childLease(runID, childID string) leased {
	return leased{key: childKey(runID, childID), name: "child " + childID + " of run " + runID,
		missing: func(ctx context.Context) error {
			_, err := s.getChild(ctx, runID, childID)
			if err == nil {
				return errRetry
			}
			return err
		}}
}

// AcquireChildLease takes the lease of a child agent for holder for d, as
// AcquireLease does a run's, and returns the child as it is after the
// write (Child.LapsedHolder naming a holder whose lease on it had lapsed).
// An id the run never issued fails with fault.ChildNotFound.
func (s *Store) AcquireChildLease(ctx context.Context, runID, childID, holder string, d time.Duration) (Child, error) {
	var r childRecord
	lapsed, err := s.acquireLease(ctx, s.childLease(runID, childID), holder, d, &r)
	if err != nil {
		return Child{}, fmt.Errorf("acquire lease on child %s of run %s for %s: %w", childID, runID, holder, err)
	}
	c := r.child()
	c.LapsedHolder = lapsed
	return c, nil
}

// RenewChildLease extends holder's lease on the child, as RenewLease.
func (s *Store) RenewChildLease(ctx context.Context, runID, childID, holder string, d time.Duration) (time.Time, error) {
	until, err := s.renewLease(ctx, s.childLease(runID, childID), holder, d)
	if err != nil {
		return time.Time{}, fmt.Errorf("renew lease on child %s of run %s for %s: %w", childID, runID, holder, err)
	}
	return until, nil
}

// ReleaseChildLease frees holder's lease on the child, as ReleaseLease.
func (s *Store) ReleaseChildLease(ctx context.Context, runID, childID, holder string) error {
	if err := s.releaseLease(ctx, s.childLease(runID, childID), holder); err != nil {
		return fmt.Errorf("release lease on child %s of run %s for %s: %w", childID, runID, holder, err)
	}
	return nil
}

func childCheckpointKey(runID, childID string) map[string]types.AttributeValue {
	return key(prefixRun+runID, skCheckpoint+"#"+childID)
}

// LoadChildCheckpoint returns the child's latest checkpoint; Step is 0 when
// none was committed. An id the run never issued fails with
// fault.ChildNotFound.
func (s *Store) LoadChildCheckpoint(ctx context.Context, runID, childID string) (Checkpoint, error) {
	var c checkpointRecord
	found, err := s.getRecord(ctx, childCheckpointKey(runID, childID), &c)
	if err == nil && !found {
		_, err = s.getChild(ctx, runID, childID)
	}
	if err != nil {
		return Checkpoint{}, fmt.Errorf("load checkpoint of child %s of run %s: %w", childID, runID, err)
	}
	return Checkpoint{Step: c.Step, Data: c.Data, SavedAt: c.SavedAt}, nil
}

// ChildStep is what one step of a child agent commits at once.
type ChildStep struct {
	// Step as a run's: Holder holds the child's lease, Number is the
	// child's own step, Events go to the run's log (their Agent set to the
	// child), and Spend counts on the run's budget, on the child's share
	// and, for a grandchild, on its parent's share. WhileRunning is
	// implied: a child commits only while it and the run are running.
	Step
	// End, when set, ends the child with this step.
	End *ChildEnd
}

// ChildEnd is how a child ends: done with its answer, or failed saying why.
type ChildEnd struct {
	Status ChildStatus
	Result string
}

// CommitChildStep commits one step of a child agent in one transaction: its
// checkpoint, its turns (under the child's id), its events, its spending
// and, with st.End, its end (the run then counts one child fewer working).
//
// It fails with fault.RunLeaseHeld unless st.Holder holds the child's
// lease, ErrStepCommitted unless st.Number exceeds the child's last step,
// ErrChildEnded when the child has ended (interrupted meanwhile),
// ErrRunEnded when the run is not running, and fault.RunBudgetSpent when
// the spending would exceed the run's budget or a share; nothing is
// written then. It returns the sequence number of the first event.
func (s *Store) CommitChildStep(ctx context.Context, runID, childID string, st ChildStep) (firstSeq int64, err error) {
	firstSeq, err = s.commitChildStep(ctx, runID, childID, st)
	if err != nil {
		return 0, fmt.Errorf("commit step %d of child %s of run %s: %w", st.Number, childID, runID, err)
	}
	return firstSeq, nil
}

func (s *Store) commitChildStep(ctx context.Context, runID, childID string, st ChildStep) (int64, error) {
	if err := st.check(); err != nil {
		return 0, err
	}
	events := slices.Clone(st.Events)
	for i := range events {
		events[i].Agent = childID
	}
	// A grandchild spends its parent's share too.
	parentID, err := s.parentOf(ctx, runID, childID)
	if err != nil {
		return 0, err
	}
	var firstSeq int64
	err = s.retry(ctx, func() error {
		last, err := s.lastSeq(ctx, runID, len(events))
		if err != nil {
			return err
		}
		t, err := s.childStepTxn(ctx, runID, childID, parentID, st, events, last)
		if err != nil {
			return err
		}
		if err := s.commit(ctx, t); err != nil {
			return err
		}
		firstSeq = s.appended(runID, last, len(events))
		return nil
	})
	return firstSeq, err
}

// check refuses what Step.check refuses, and an end that is not final or
// whose result is too large.
func (st ChildStep) check() error {
	if err := st.Step.check(); err != nil {
		return err
	}
	if st.End != nil && (!st.End.Status.Final() || len(st.End.Result) > MaxBlobBytes) {
		return fault.New(fault.RequestInvalid, "a child ends done, failed or interrupted, with a result of at most %d bytes", MaxBlobBytes)
	}
	return nil
}

// childStepTxn is the transaction of one child step, events numbered from
// last+1: the child (lease, step, status, share, end), the run (running,
// events, budget, children working), the child's checkpoint, a
// grandchild's parent's share, and the events.
func (s *Store) childStepTxn(ctx context.Context, runID, childID, parentID string, st ChildStep, events []NewEvent, last int64) (*txn, error) {
	now := s.now().UTC()
	spends := st.Spend != (Budget{})
	t := s.newTxn()
	cw := stepWrite(st.Step)
	cw.is("status", cw.s(string(ChildRunning)))
	if spends {
		cw.spend(st.Spend)
	}
	if st.End != nil {
		cw.endChild(st.End.Status, st.End.Result, now)
	}
	t.update("child item", childKey(runID, childID), cw, s.childStepFailed(ctx, runID, childID, st))
	rw := newWrite().exists()
	rw.is("status", rw.s(string(StatusRunning))).advanceSeq(last, len(events))
	if spends {
		rw.spend(st.Spend)
	}
	rw.tokens(st.Tokens)
	if st.End != nil {
		rw.incr("kidsRun", -1).above("kidsRun", 0)
	}
	t.update("run item", runKey(runID), rw, s.runOfChildFailed(ctx, runID, st.Spend))
	ckpt, err := marshal(checkpointRecord{PK: prefixRun + runID, SK: skCheckpoint + "#" + childID, Step: st.Number, Data: st.Checkpoint, SavedAt: now})
	if err != nil {
		return nil, err
	}
	t.put("child checkpoint", ckpt, nil, nil)
	if err := putTurns(t, runID, childID, st.Turns, now); err != nil {
		return nil, err
	}
	if spends && parentID != "" {
		t.update("parent's share", childKey(runID, parentID), newWrite().spend(st.Spend), s.shareFailed(ctx, runID, parentID, st.Spend))
	}
	return t, putEvents(t, runID, last+1, events, now)
}

// endChild sets a child's end: its status, when, its result (when not
// empty), and takes it out of the sweep's index.
func (w *write) endChild(status ChildStatus, result string, at time.Time) *write {
	w.set("status", w.s(string(status))).set("endedAt", w.t(at))
	if result != "" {
		w.set("result", w.s(result))
	}
	return w.remove(AttrGSI2PK)
}

// childStepFailed says why the child item refused st: the lease is
// another's, the step is committed, the child has ended, its share is
// spent; otherwise the commit runs again.
func (s *Store) childStepFailed(ctx context.Context, runID, childID string, st ChildStep) onFail {
	return func(old map[string]types.AttributeValue) error {
		cur, err := s.childFrom(ctx, runID, childID, old)
		switch {
		case err != nil:
			return err
		case cur.Holder != st.Holder:
			return s.childLease(runID, childID).held(leaseFields{Holder: cur.Holder, LeaseUntil: cur.LeaseUntil})
		case cur.CkptStep >= st.Number:
			return fmt.Errorf("step %d is committed: %w", cur.CkptStep, ErrStepCommitted)
		case cur.Status != ChildRunning:
			return fmt.Errorf("child %s is %s: %w", childID, cur.Status, ErrChildEnded)
		case cur.TokLeft < st.Spend.Tokens || cur.CallLeft < st.Spend.ToolCalls:
			return shareSpent(childID, cur, st.Spend)
		}
		return errRetry
	}
}

// runOfChildFailed says why the run item refused a child's step spending
// b: the run is not running, its budget is spent; otherwise the event
// counter moved and the commit runs again.
func (s *Store) runOfChildFailed(ctx context.Context, runID string, b Budget) onFail {
	return func(old map[string]types.AttributeValue) error {
		cur, err := s.runFrom(ctx, runID, old)
		switch {
		case err != nil:
			return err
		case cur.Status != StatusRunning:
			return fmt.Errorf("run %s is %s: %w", runID, cur.Status, ErrRunEnded)
		case cur.TokLeft < b.Tokens || cur.CallLeft < b.ToolCalls:
			return budgetSpent(runID, cur, b)
		}
		s.setHint(runID, cur.EvtSeq)
		return errRetry
	}
}

// shareFailed says why the share of child childID refused spending b: it
// is spent; otherwise the commit runs again.
func (s *Store) shareFailed(ctx context.Context, runID, childID string, b Budget) onFail {
	return func(old map[string]types.AttributeValue) error {
		cur, err := s.childFrom(ctx, runID, childID, old)
		if err != nil {
			return err
		}
		if cur.TokLeft < b.Tokens || cur.CallLeft < b.ToolCalls {
			return shareSpent(childID, cur, b)
		}
		return errRetry
	}
}

// parentOf returns the parent of a child agent, read once per Store: a
// child's parent never changes, and each of its steps needs it.
func (s *Store) parentOf(ctx context.Context, runID, childID string) (string, error) {
	k := runID + "#" + childID
	s.hintMu.Lock()
	p, ok := s.parents[k]
	s.hintMu.Unlock()
	if ok {
		return p, nil
	}
	c, err := s.getChild(ctx, runID, childID)
	if err != nil {
		return "", err
	}
	s.hintMu.Lock()
	defer s.hintMu.Unlock()
	if len(s.parents) >= maxHints {
		clear(s.parents)
	}
	s.parents[k] = c.ParentID
	return c.ParentID, nil
}

func shareSpent(childID string, r childRecord, b Budget) error {
	if r.TokLeft < b.Tokens {
		return fault.New(fault.RunBudgetSpent, "child %s has %d of the %d tokens of its share left and needs %d", childID, r.TokLeft, r.TokLimit, b.Tokens)
	}
	return fault.New(fault.RunBudgetSpent, "child %s has %d of the %d tool calls of its share left and needs %d", childID, r.CallLeft, r.CallLimit, b.ToolCalls)
}

// maxAgentScan bounds how many of the run's newest events ListAgentEvents
// reads to find an agent's.
const maxAgentScan = 2000

// ListAgentEvents returns the last n (at most 100) events of the run that
// agent wrote (a child id; "" for the run's own agent), oldest first. It
// looks through the run's newest maxAgentScan events only.
func (s *Store) ListAgentEvents(ctx context.Context, runID, agent string, n int) ([]Event, error) {
	n = min(max(n, 1), 100)
	var found []Event
	var start map[string]types.AttributeValue
	scanned := 0
	for len(found) < n && scanned < maxAgentScan {
		e := newExpr()
		filter := "attribute_not_exists(" + e.n("agent") + ")"
		if agent != "" {
			filter = e.n("agent") + " = " + e.s(agent)
		}
		out, err := s.db.Query(ctx, &dynamodb.QueryInput{
			TableName: &s.table,
			KeyConditionExpression: aws.String(e.n(AttrPK) + " = " + e.s(prefixRun+runID) + " AND " +
				e.n(AttrSK) + " BETWEEN " + e.s(eventSK(1)) + " AND " + e.s(prefixEvent+"9999999999999999")),
			FilterExpression:          aws.String(filter),
			ExpressionAttributeNames:  e.nameMap(),
			ExpressionAttributeValues: e.valueMap(),
			ScanIndexForward:          aws.Bool(false),
			ConsistentRead:            aws.Bool(true),
			ExclusiveStartKey:         start,
			Limit:                     aws.Int32(200),
		})
		if err != nil {
			return nil, fmt.Errorf("list events of %q in run %s: %w", agent, runID, err)
		}
		scanned += int(out.ScannedCount)
		for _, item := range out.Items {
			var r eventRecord
			if err := unmarshal(item, &r); err != nil {
				return nil, fmt.Errorf("list events of %q in run %s: %w", agent, runID, err)
			}
			if len(found) < n {
				found = append(found, r.event())
			}
		}
		if start = out.LastEvaluatedKey; len(start) == 0 {
			break
		}
	}
	slices.Reverse(found)
	if len(found) == 0 {
		if _, err := s.getRun(ctx, runID); err != nil {
			return nil, fmt.Errorf("list events of %q in run %s: %w", agent, runID, err)
		}
	}
	return found, nil
}
