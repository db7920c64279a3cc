package store

import (
	"context"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/agentsfleet/agentsfleet/shared/fault"
)

// Event is one entry of a run's event log.
type Event struct {
	Seq  int64 // 1, 2, 3, … without gaps
	Type string
	Data []byte // JSON, by convention; secrets already replaced by the caller
	At   time.Time
	// Agent is the child agent whose step wrote it; empty for the run's
	// own agent.
	Agent string
}

// NewEvent is an event to append.
type NewEvent struct {
	Type string
	Data []byte
	// Agent is the child agent writing it; empty for the run's own agent.
	Agent string
}

// maxEventsPerWrite keeps a transaction within DynamoDB's 100 items, with
// room for the run item and the checkpoint.
const maxEventsPerWrite = 90

type eventRecord struct {
	PK    string    `dynamodbav:"pk"`
	SK    string    `dynamodbav:"sk"`
	Seq   int64     `dynamodbav:"seq"`
	Type  string    `dynamodbav:"type"`
	Data  []byte    `dynamodbav:"data,omitempty"`
	At    time.Time `dynamodbav:"at"`
	Agent string    `dynamodbav:"agent,omitempty"`
}

func (r eventRecord) event() Event {
	return Event{Seq: r.Seq, Type: r.Type, Data: r.Data, At: r.At, Agent: r.Agent}
}

func eventSK(seq int64) string { return fmt.Sprintf("%s%016d", prefixEvent, seq) }

func checkEvents(evs []NewEvent) error {
	if len(evs) > maxEventsPerWrite {
		return fault.New(fault.RequestInvalid, "at most %d events at once", maxEventsPerWrite)
	}
	for _, ev := range evs {
		if ev.Type == "" {
			return fault.New(fault.RequestInvalid, "an event needs a type")
		}
		if len(ev.Data) > MaxBlobBytes {
			return fmt.Errorf("event %s of %d bytes: %w", ev.Type, len(ev.Data), ErrTooLarge)
		}
	}
	return nil
}

// putEvents adds to t the puts of evs, numbered from first.
func putEvents(t *txn, runID string, first int64, evs []NewEvent, at time.Time) error {
	for i, ev := range evs {
		item, err := marshal(eventRecord{PK: prefixRun + runID, SK: eventSK(first + int64(i)), Seq: first + int64(i),
			Type: ev.Type, Data: ev.Data, At: at, Agent: ev.Agent})
		if err != nil {
			return err
		}
		t.put(fmt.Sprintf("event %d", first+int64(i)), item, nil, nil)
	}
	return nil
}

// staleSeq is the failure of a run item's condition on the event counter:
// another append moved it since this Store read it, so the hint is moved
// on and the append runs again. A run that does not exist fails with
// fault.RunNotFound.
func (s *Store) staleSeq(ctx context.Context, runID string) onFail {
	return func(old map[string]types.AttributeValue) error {
		cur, err := s.runFrom(ctx, runID, old)
		if err != nil {
			return err
		}
		s.setHint(runID, cur.EvtSeq)
		return errRetry
	}
}

// hint returns the last event sequence number this Store saw for the run,
// reading the run when it saw none.
func (s *Store) hint(ctx context.Context, runID string) (int64, error) {
	s.hintMu.Lock()
	seq, ok := s.hints[runID]
	s.hintMu.Unlock()
	if ok {
		return seq, nil
	}
	r, err := s.getRun(ctx, runID)
	if err != nil {
		return 0, err
	}
	return r.EvtSeq, nil
}

// maxHints bounds the hint cache; a runner works on few runs at a time.
const maxHints = 4096

func (s *Store) setHint(runID string, seq int64) {
	s.hintMu.Lock()
	defer s.hintMu.Unlock()
	if len(s.hints) >= maxHints {
		clear(s.hints)
	}
	if seq > s.hints[runID] {
		s.hints[runID] = seq
	}
}

// AppendEvent appends one event to the run's log and returns its sequence
// number. See AppendEvents.
func (s *Store) AppendEvent(ctx context.Context, runID string, ev NewEvent) (int64, error) {
	return s.AppendEvents(ctx, runID, ev)
}

// AppendEvents appends events to the run's log and returns the sequence
// number of the first. Numbers run 1, 2, 3, … without gaps or repeats even
// with concurrent appenders: each append is one transaction that moves the
// counter on the run item from the number it read to the next and puts the
// events under those numbers; an append that read a stale counter is
// cancelled and retried. An unknown run fails with fault.RunNotFound.
func (s *Store) AppendEvents(ctx context.Context, runID string, evs ...NewEvent) (first int64, err error) {
	if err := checkEvents(evs); err != nil {
		return 0, fmt.Errorf("append events to run %s: %w", runID, err)
	}
	if len(evs) == 0 {
		return 0, nil
	}
	err = s.retry(ctx, func() error {
		last, err := s.hint(ctx, runID)
		if err != nil {
			return err
		}
		t := s.newTxn()
		t.update("run item", runKey(runID), newWrite().exists().advanceSeq(last, len(evs)), s.staleSeq(ctx, runID))
		if err := putEvents(t, runID, last+1, evs, s.now().UTC()); err != nil {
			return err
		}
		if err := s.commit(ctx, t); err != nil {
			return err
		}
		first = s.appended(runID, last, len(evs))
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("append events to run %s: %w", runID, err)
	}
	return first, nil
}

// ListEvents returns up to limit events (0 means 100, at most 1000) of the
// run with sequence numbers from from on (from ≤ 1: from the start), in
// order. next is the number to list from for the following page, or 0 when
// the log has nothing more for now. Reads are strongly consistent, so an
// event appended before the call is listed. An unknown run fails with
// fault.RunNotFound.
func (s *Store) ListEvents(ctx context.Context, runID string, from int64, limit int) (events []Event, next int64, err error) {
	from = max(from, 1)
	e := newExpr()
	out, err := s.db.Query(ctx, &dynamodb.QueryInput{
		TableName: &s.table,
		KeyConditionExpression: aws.String(e.n(AttrPK) + " = " + e.s(prefixRun+runID) + " AND " +
			e.n(AttrSK) + " BETWEEN " + e.s(eventSK(from)) + " AND " + e.s(prefixEvent+"9999999999999999")),
		ExpressionAttributeNames:  e.nameMap(),
		ExpressionAttributeValues: e.valueMap(),
		ConsistentRead:            aws.Bool(true),
		Limit:                     aws.Int32(pageSize(limit, 100, 1000)),
	})
	if err != nil {
		return nil, 0, fmt.Errorf("list events of run %s: %w", runID, err)
	}
	if len(out.Items) == 0 {
		if _, err := s.getRun(ctx, runID); err != nil {
			return nil, 0, fmt.Errorf("list events of run %s: %w", runID, err)
		}
		return nil, 0, nil
	}
	events = make([]Event, 0, len(out.Items))
	for _, item := range out.Items {
		var r eventRecord
		if err := unmarshal(item, &r); err != nil {
			return nil, 0, fmt.Errorf("list events of run %s: %w", runID, err)
		}
		events = append(events, r.event())
	}
	if len(out.LastEvaluatedKey) > 0 {
		next = events[len(events)-1].Seq + 1
	}
	return events, next, nil
}

// Step is what one step of the agent loop commits at once.
type Step struct {
	// Holder must hold the run's lease.
	Holder string
	// Number is the step; it must exceed the last committed step.
	Number int64
	// Checkpoint is the state to resume from after this step.
	Checkpoint []byte
	// Turns are written beside the checkpoint, each an item of its own
	// (see Turn): the part of the agent's conversation the step adds or
	// changes, at most MaxTurnsPerStep, of steps up to Number.
	Turns []Turn
	// Events are appended to the run's log.
	Events []NewEvent
	// Spend is added to the run's spending, checked against its limits.
	Spend Budget
	// Tokens are the model tokens the agent used since its last step, by
	// kind, added to the run's totals (Run.Tokens: what its cost is
	// reckoned from). Spend.Tokens counts them together, for the budget.
	Tokens Tokens
	// WhileRunning makes the commit also require the run to be running:
	// a run cancelled (or ended) meanwhile fails it with ErrRunEnded and
	// nothing is written.
	WhileRunning bool
	// Wait are the step's calls that wait for a person: with any, the
	// commit also writes their approvals and moves the run from running to
	// waiting (WhileRunning must be set). See Decide.
	Wait []NewApproval
}

// CommitStep commits one step of the agent loop in one transaction: the
// checkpoint, the step's turns, its events and its spending, all or
// nothing. It is the per-step write path: two items plus one per turn and
// one per event, instead of the separate writes of SaveCheckpoint,
// AppendEvents and Spend (see the package documentation for write units).
//
// It fails with fault.RunLeaseHeld unless st.Holder holds the lease,
// ErrStepCommitted unless st.Number exceeds the last committed step,
// ErrRunEnded when st.WhileRunning and the run is not running,
// fault.RunBudgetSpent (nothing written) when the spending would exceed the
// run's limits, and ErrTooLarge for more than a transaction holds. It returns the sequence number of the first event (0 with
// no events).
func (s *Store) CommitStep(ctx context.Context, runID string, st Step) (firstSeq int64, err error) {
	firstSeq, err = s.commitStep(ctx, runID, st)
	if err != nil {
		return 0, fmt.Errorf("commit step %d of run %s: %w", st.Number, runID, err)
	}
	return firstSeq, nil
}

func (s *Store) commitStep(ctx context.Context, runID string, st Step) (firstSeq int64, err error) {
	if err := st.check(); err != nil {
		return 0, err
	}
	err = s.retry(ctx, func() error {
		last, err := s.lastSeq(ctx, runID, len(st.Events))
		if err != nil {
			return err
		}
		now := s.now().UTC()
		t := s.newTxn()
		w := stepWrite(st).advanceSeq(last, len(st.Events))
		if st.WhileRunning {
			w.is("status", w.s(string(StatusRunning)))
		}
		if st.Spend != (Budget{}) {
			w.spend(st.Spend)
		}
		w.tokens(st.Tokens)
		if len(st.Wait) > 0 {
			if err := st.wait(t, w, runID, now); err != nil {
				return err
			}
		}
		t.update("run item", runKey(runID), w, s.runStepFailed(ctx, runID, st))
		ckpt, err := marshal(checkpointRecord{PK: prefixRun + runID, SK: skCheckpoint, Step: st.Number, Data: st.Checkpoint, SavedAt: now})
		if err != nil {
			return err
		}
		t.put("checkpoint", ckpt, nil, nil)
		if err := putTurns(t, runID, "", st.Turns, now); err != nil {
			return err
		}
		if err := putEvents(t, runID, last+1, st.Events, now); err != nil {
			return err
		}
		if err := s.commit(ctx, t); err != nil {
			return err
		}
		firstSeq = s.appended(runID, last, len(st.Events))
		return nil
	})
	return firstSeq, err
}

// check refuses a step without a holder, numbered below 1, spending a
// negative amount, carrying a body too large or more than a transaction
// holds.
func (st Step) check() error {
	if st.Holder == "" || st.Number < 1 || st.Spend.Tokens < 0 || st.Spend.ToolCalls < 0 {
		return fault.New(fault.RequestInvalid, "a step needs the lease holder, a number from 1 and no negative spending")
	}
	if len(st.Checkpoint) > MaxBlobBytes {
		return fmt.Errorf("checkpoint of %d bytes: %w", len(st.Checkpoint), ErrTooLarge)
	}
	if err := checkTurns(st.Turns, st.Number); err != nil {
		return err
	}
	if err := checkEvents(st.Events); err != nil {
		return err
	}
	if err := st.checkWait(); err != nil {
		return err
	}
	n := len(st.Checkpoint)
	for _, tn := range st.Turns {
		n += len(tn.Data)
	}
	for _, ev := range st.Events {
		n += len(ev.Data)
	}
	if n > maxStepBytes {
		return fmt.Errorf("a step of %d bytes, more than a transaction holds: %w", n, ErrTooLarge)
	}
	return nil
}

// stepWrite is the write of an item that holds a lease and a checkpoint
// step (a run's or a child's): it must exist, be held by st.Holder and be
// at a step below st.Number, which it moves to.
func stepWrite(st Step) *write {
	w := newWrite().exists()
	return w.set("ckptStep", w.i(st.Number)).is("leaseHolder", w.s(st.Holder)).below("ckptStep", st.Number)
}

// advanceSeq moves the run's event counter from last on by n, on the
// condition that it is still at last; with no events it does nothing.
func (w *write) advanceSeq(last int64, n int) *write {
	if n == 0 {
		return w
	}
	return w.set("evtSeq", w.i(last+int64(n))).is("evtSeq", w.i(last))
}

// lastSeq returns the hint of the run's last event sequence number when
// n events are to be appended, 0 when none are.
func (s *Store) lastSeq(ctx context.Context, runID string, n int) (int64, error) {
	if n == 0 {
		return 0, nil
	}
	return s.hint(ctx, runID)
}

// appended records that n events were appended after last and returns the
// sequence number of the first (0 when n is 0).
func (s *Store) appended(runID string, last int64, n int) int64 {
	if n == 0 {
		return 0
	}
	s.setHint(runID, last+int64(n))
	return last + 1
}

// runStepFailed says why the run item refused st: the lease is another's,
// the step is committed, the run is not running (with st.WhileRunning),
// the budget is spent; otherwise the event counter moved and the commit
// runs again.
func (s *Store) runStepFailed(ctx context.Context, runID string, st Step) onFail {
	return func(old map[string]types.AttributeValue) error {
		cur, err := s.runFrom(ctx, runID, old)
		switch {
		case err != nil:
			return err
		case cur.Holder != st.Holder:
			return leaseHeld(runID, cur)
		case cur.CkptStep >= st.Number:
			return fmt.Errorf("step %d is committed: %w", cur.CkptStep, ErrStepCommitted)
		case st.WhileRunning && cur.Status != StatusRunning:
			return fmt.Errorf("run %s is %s: %w", runID, cur.Status, ErrRunEnded)
		case cur.TokLeft < st.Spend.Tokens || cur.CallLeft < st.Spend.ToolCalls:
			return budgetSpent(runID, cur, st.Spend)
		}
		s.setHint(runID, cur.EvtSeq)
		return errRetry
	}
}
