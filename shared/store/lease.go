package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/agentsfleet/agentsfleet/shared/fault"
)

// A run's lease makes sure one runner at a time executes it. The lease is
// two attributes on the run item (holder and expiry, in Unix ms by the
// Store's clock), changed only by conditional writes. Holder ids must be
// unique per runner invocation (a Lambda request id, say).
//
// The holder is also the fence for everything a runner commits: checkpoints
// and steps are conditional on the lease holder, so a runner that lost its
// lease (it paused past expiry and another took over) cannot commit.

// AcquireLease takes the run's lease for holder for d. It succeeds when the
// lease is free, has expired, or is already holder's (then it is extended);
// otherwise it fails with fault.RunLeaseHeld naming the holder. It returns
// the run as it is after the write, so the runner sees its status and last
// checkpoint step.
//
// When the lease it takes had lapsed in another holder's hands (that
// holder missed its renewals until the lease ran out: an invocation that
// died), Run.LapsedHolder names that holder, for the runner to count the
// takeover (NoteTakeover).
func (s *Store) AcquireLease(ctx context.Context, runID, holder string, d time.Duration) (Run, error) {
	var r runRecord
	lapsed, err := s.acquireLease(ctx, s.runLease(runID), holder, d, &r)
	if err != nil {
		return Run{}, fmt.Errorf("acquire lease on run %s for %s: %w", runID, holder, err)
	}
	run := r.run()
	run.LapsedHolder = lapsed
	return run, nil
}

// leased is an item that carries a lease: a run, or a child agent, each
// executed by one runner invocation at a time.
type leased struct {
	key  map[string]types.AttributeValue
	name string // "run R", "child C of run R"
	// missing returns why the item is not there (errRetry when it is).
	missing func(ctx context.Context) error
}

// leaseFields are a leased item's lease attributes.
type leaseFields struct {
	Holder     string `dynamodbav:"leaseHolder,omitempty"`
	LeaseUntil int64  `dynamodbav:"leaseUntil,omitempty"` // Unix ms
}

func (s *Store) runLease(runID string) leased {
	return leased{key: runKey(runID), name: "run " + runID, missing: func(ctx context.Context) error {
		_, err := s.getRun(ctx, runID)
		if err == nil {
			return errRetry
		}
		return err
	}}
}

// from reads the lease of old, an item a failed condition returned (nil
// when the item is not there).
func (it leased) from(ctx context.Context, old map[string]types.AttributeValue) (leaseFields, error) {
	var f leaseFields
	if old == nil {
		return f, it.missing(ctx)
	}
	return f, unmarshal(old, &f)
}

func (it leased) held(f leaseFields) error {
	if f.Holder == "" {
		return fault.New(fault.RunLeaseHeld, "nobody holds the lease on %s", it.name)
	}
	until := time.UnixMilli(f.LeaseUntil).UTC()
	return &LeaseHeld{Holder: f.Holder, Until: until,
		err: fault.New(fault.RunLeaseHeld, "%s is leased to %s until %s", it.name, f.Holder, until.Format(time.RFC3339Nano))}
}

// LeaseHeld is the fault.RunLeaseHeld of a lease someone else holds: who,
// and until when (by the Store's clock) unless they renew it. errors.Is
// matches fault.RunLeaseHeld through it.
type LeaseHeld struct {
	Holder string
	Until  time.Time
	err    error
}

func (e *LeaseHeld) Error() string { return e.err.Error() }
func (e *LeaseHeld) Unwrap() error { return e.err }

// acquireLease takes it's lease for holder for d and unmarshals the item as
// it is after the write into rec. lapsed is the holder whose lease had run
// out unrenewed when this one took it ("" when it was free, released or
// holder's own).
//
// The write also moves the item's place in GSI2 (AttrGSI2SK) to the new
// expiry: from then on a sweep (ListLapsed) finds it only if this holder
// stops renewing too.
func (s *Store) acquireLease(ctx context.Context, it leased, holder string, d time.Duration, rec any) (lapsed string, err error) {
	if holder == "" || d <= 0 {
		return "", fault.New(fault.RequestInvalid, "a lease needs a holder and a positive duration")
	}
	err = s.retry(ctx, func() error {
		now := s.now()
		exp := now.Add(d).UnixMilli()
		e := newExpr()
		h, until := e.n("leaseHolder"), e.n("leaseUntil")
		out, err := s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
			TableName: &s.table,
			Key:       it.key,
			UpdateExpression: aws.String("SET " + h + " = " + e.s(holder) + ", " + until + " = " + e.i(exp) +
				", " + e.n(AttrGSI2SK) + " = " + e.i(exp)),
			ConditionExpression: aws.String("attribute_exists(" + e.n(AttrPK) + ") AND (attribute_not_exists(" + h + ") OR " +
				h + " = " + e.s(holder) + " OR " + until + " <= " + e.i(now.UnixMilli()) + ")"),
			ExpressionAttributeNames:  e.nameMap(),
			ExpressionAttributeValues: e.valueMap(),
			// The item as it was, to see whose lease lapsed; the new lease
			// is known.
			ReturnValues:                        types.ReturnValueAllOld,
			ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
		})
		if old, ok := conditionFailed(err); ok {
			cur, err := it.from(ctx, old)
			if err != nil {
				return err
			}
			if cur.Holder == "" || cur.LeaseUntil <= now.UnixMilli() {
				return errRetry // released or lapsed between the write and the read
			}
			return it.held(cur)
		}
		if err != nil {
			return err
		}
		item := out.Attributes
		var prev leaseFields
		if err := unmarshal(item, &prev); err != nil {
			return err
		}
		lapsed = ""
		if prev.Holder != "" && prev.Holder != holder {
			lapsed = prev.Holder // the condition held: its lease had run out
		}
		item["leaseHolder"], item["leaseUntil"], item[AttrGSI2SK] = str(holder), num(exp), num(exp)
		return unmarshal(item, rec)
	})
	return lapsed, err
}

// NoteTakeover counts that holder took the run's lease over from an
// invocation that died holding it (the lease lapsed unrenewed), and
// returns how many times that has happened to the run. Only the holder
// can note it (fault.RunLeaseHeld otherwise).
func (s *Store) NoteTakeover(ctx context.Context, runID, holder string) (int, error) {
	e := newExpr()
	var n struct {
		Takeovers int `dynamodbav:"takeovers"`
	}
	if err := s.holderUpdate(ctx, s.runLease(runID), holder, e, "ADD "+e.n("takeovers")+" "+e.i(1), &n); err != nil {
		return 0, fmt.Errorf("note a takeover of run %s: %w", runID, err)
	}
	return n.Takeovers, nil
}

// NoteChildTakeover counts that holder took the child's lease over from an
// invocation that died holding it, as NoteTakeover does for a run, and
// returns how many times that has happened to the child.
func (s *Store) NoteChildTakeover(ctx context.Context, runID, childID, holder string) (int, error) {
	e := newExpr()
	var n struct {
		Takeovers int `dynamodbav:"takeovers"`
	}
	if err := s.holderUpdate(ctx, s.childLease(runID, childID), holder, e, "ADD "+e.n("takeovers")+" "+e.i(1), &n); err != nil {
		return 0, fmt.Errorf("note a takeover of child %s of run %s: %w", childID, runID, err)
	}
	return n.Takeovers, nil
}

// RenewLease extends holder's lease to d from now and returns the new
// expiry. Only the holder can renew (fault.RunLeaseHeld otherwise). A lease
// that lapsed but that nobody took over can still be renewed: nobody else
// can have run the run in between.
func (s *Store) RenewLease(ctx context.Context, runID, holder string, d time.Duration) (time.Time, error) {
	until, err := s.renewLease(ctx, s.runLease(runID), holder, d)
	if err != nil {
		return time.Time{}, fmt.Errorf("renew lease on run %s for %s: %w", runID, holder, err)
	}
	return until, nil
}

func (s *Store) renewLease(ctx context.Context, it leased, holder string, d time.Duration) (time.Time, error) {
	until := s.now().Add(d)
	e := newExpr()
	set := "SET " + e.n("leaseUntil") + " = " + e.i(until.UnixMilli()) + ", " + e.n(AttrGSI2SK) + " = " + e.i(until.UnixMilli())
	if err := s.holderUpdate(ctx, it, holder, e, set, nil); err != nil {
		return time.Time{}, err
	}
	return time.UnixMilli(until.UnixMilli()).UTC(), nil
}

// ReleaseLease frees holder's lease so that another runner can take the run
// at once. Only the holder can release (fault.RunLeaseHeld otherwise).
func (s *Store) ReleaseLease(ctx context.Context, runID, holder string) error {
	if err := s.releaseLease(ctx, s.runLease(runID), holder); err != nil {
		return fmt.Errorf("release lease on run %s for %s: %w", runID, holder, err)
	}
	return nil
}

// releaseLease frees the lease and marks the item in GSI2 as held by
// nobody from now: the invocation it was handed to should take it at once,
// and a sweep finds it when none does.
func (s *Store) releaseLease(ctx context.Context, it leased, holder string) error {
	e := newExpr()
	update := "REMOVE " + e.n("leaseHolder") + ", " + e.n("leaseUntil") + " SET " + e.n(AttrGSI2SK) + " = " + e.i(s.now().UnixMilli())
	return s.holderUpdate(ctx, it, holder, e, update, nil)
}

// holderUpdate applies update to it if holder holds its lease, and
// unmarshals the attributes it changed into updated unless that is nil.
func (s *Store) holderUpdate(ctx context.Context, it leased, holder string, e *expr, update string, updated any) error {
	in := &dynamodb.UpdateItemInput{
		TableName:                           &s.table,
		Key:                                 it.key,
		UpdateExpression:                    aws.String(update),
		ConditionExpression:                 aws.String("attribute_exists(" + e.n(AttrPK) + ") AND " + e.n("leaseHolder") + " = " + e.s(holder)),
		ExpressionAttributeNames:            e.nameMap(),
		ExpressionAttributeValues:           e.valueMap(),
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	}
	if updated != nil {
		in.ReturnValues = types.ReturnValueUpdatedNew
	}
	out, err := s.db.UpdateItem(ctx, in)
	if err == nil && updated != nil {
		return unmarshal(out.Attributes, updated)
	}
	if old, ok := conditionFailed(err); ok {
		cur, err := it.from(ctx, old)
		if errors.Is(err, errRetry) {
			return it.held(leaseFields{})
		}
		if err != nil {
			return err
		}
		return it.held(cur)
	}
	return err
}

// Checkpoint is the latest saved state of a run's agent loop.
type Checkpoint struct {
	Step    int64 // 0: nothing saved yet
	Data    []byte
	SavedAt time.Time
}

type checkpointRecord struct {
	PK      string    `dynamodbav:"pk"`
	SK      string    `dynamodbav:"sk"`
	Step    int64     `dynamodbav:"step"`
	Data    []byte    `dynamodbav:"data,omitempty"`
	SavedAt time.Time `dynamodbav:"savedAt"`
}

// SaveCheckpoint commits step of the run with its checkpoint data. Only the
// lease holder can save (fault.RunLeaseHeld otherwise), and only forward:
// a step at or below the last committed one fails with ErrStepCommitted, so
// that a runner that lost a race does not roll the run back, and a step that
// was committed is never executed again. Steps start at 1.
//
// The step number lives on the run item, where the lease is, and the data
// in an item of its own, written in the same transaction.
func (s *Store) SaveCheckpoint(ctx context.Context, runID, holder string, step int64, data []byte) error {
	_, err := s.commitStep(ctx, runID, Step{Holder: holder, Number: step, Checkpoint: data})
	if err != nil {
		return fmt.Errorf("save checkpoint of run %s: %w", runID, err)
	}
	return nil
}

// LoadCheckpoint returns the run's latest checkpoint; Step is 0 when none was
// saved. An unknown run fails with fault.RunNotFound.
func (s *Store) LoadCheckpoint(ctx context.Context, runID string) (Checkpoint, error) {
	var c checkpointRecord
	found, err := s.getRecord(ctx, key(prefixRun+runID, skCheckpoint), &c)
	if err == nil && !found {
		_, err = s.getRun(ctx, runID)
	}
	if err != nil {
		return Checkpoint{}, fmt.Errorf("load checkpoint of run %s: %w", runID, err)
	}
	return Checkpoint{Step: c.Step, Data: c.Data, SavedAt: c.SavedAt}, nil
}

func leaseHeld(runID string, r runRecord) error {
	return leased{name: "run " + runID}.held(leaseFields{Holder: r.Holder, LeaseUntil: r.LeaseUntil})
}
