package store

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/agentsfleet/agentsfleet/shared/fault"
	"github.com/agentsfleet/agentsfleet/shared/limit"
)

// Child-agent limits from the specification.
const (
	MaxChildrenRunning = limit.ChildrenRunning // children working at once, per run
	MaxChildrenTotal   = limit.ChildrenTotal   // children started in all, per run
	MaxChildDepth      = limit.ChildDepth      // children (1) and grandchildren (2)
)

// ChildStatus is a child agent's status.
type ChildStatus string

// The child statuses. running is the only one that is not final.
const (
	ChildRunning     ChildStatus = "running"
	ChildDone        ChildStatus = "done"
	ChildFailed      ChildStatus = "failed"
	ChildInterrupted ChildStatus = "interrupted"
)

// Child is a child agent of a run.
type Child struct {
	ID       string
	RunID    string
	ParentID string // empty: started by the run's top-level agent
	Depth    int    // 1 for a child, 2 for a grandchild
	Task     string
	// Tools, Secrets and Hosts are what the child holds: its tools, the
	// names of the fleet's secrets its web tools may use and the entries of
	// the fleet's host list they may reach.
	Tools, Secrets, Hosts []string
	Status                ChildStatus
	Result                string
	// Limits is the child's share of the run's budget (a zero figure: no
	// share of its own, the run's budget only); Spent is what the child and
	// its own children spent.
	Limits, Spent Budget
	// StartedAt and EndedAt (zero while running).
	StartedAt, EndedAt time.Time
	// CheckpointStep is the child's last committed step (0: none).
	CheckpointStep int64
	// LeaseHolder holds the child's lease until LeaseUntil; empty when free.
	LeaseHolder string
	LeaseUntil  time.Time
	// LapsedHolder is set only in what AcquireChildLease returns, as
	// Run.LapsedHolder is.
	LapsedHolder string
}

// NewChild is what StartChild needs.
type NewChild struct {
	RunID string
	// ParentID is empty for a child of the run's top-level agent (depth 1),
	// the id of a running child for a grandchild (depth 2).
	ParentID string
	Task     string
	// Tools, Secrets and Hosts as Child's, already resolved by the caller
	// against what the parent holds.
	Tools, Secrets, Hosts []string
	// Limits is the child's share of the run's budget; zero figures set none.
	Limits Budget
	// Key, when set, makes the start safe to retry: a start with a key the
	// run already used returns the child it started, starting nothing.
	Key string
}

type childRecord struct {
	PK        string      `dynamodbav:"pk"`
	SK        string      `dynamodbav:"sk"`
	ID        string      `dynamodbav:"id"`
	RunID     string      `dynamodbav:"run"`
	ParentID  string      `dynamodbav:"parent,omitempty"`
	Depth     int         `dynamodbav:"depth"`
	Task      string      `dynamodbav:"task"`
	Tools     []string    `dynamodbav:"tools,omitempty"`
	Secrets   []string    `dynamodbav:"secrets,omitempty"`
	Hosts     []string    `dynamodbav:"hosts,omitempty"`
	Key       string      `dynamodbav:"key,omitempty"`
	Status    ChildStatus `dynamodbav:"status"`
	Result    string      `dynamodbav:"result,omitempty"`
	StartedAt time.Time   `dynamodbav:"startedAt"`
	EndedAt   *time.Time  `dynamodbav:"endedAt,omitempty"`
	// The child's share, kept as the run item keeps the run's budget.
	TokLimit  int64 `dynamodbav:"tokLimit"`
	CallLimit int64 `dynamodbav:"callLimit"`
	TokUsed   int64 `dynamodbav:"tokUsed"`
	CallUsed  int64 `dynamodbav:"callUsed"`
	TokLeft   int64 `dynamodbav:"tokLeft"`
	CallLeft  int64 `dynamodbav:"callLeft"`
	// The child's own execution: its lease and last committed step.
	CkptStep   int64  `dynamodbav:"ckptStep"`
	Holder     string `dynamodbav:"leaseHolder,omitempty"`
	LeaseUntil int64  `dynamodbav:"leaseUntil,omitempty"` // Unix ms
	// GSI2: present while the child is running (see ListLapsed).
	GSI2PK string `dynamodbav:"gsi2pk,omitempty"`
	GSI2SK int64  `dynamodbav:"gsi2sk,omitempty"`
}

func (r childRecord) child() Child {
	c := Child{ID: r.ID, RunID: r.RunID, ParentID: r.ParentID, Depth: r.Depth, Task: r.Task,
		Tools: r.Tools, Secrets: r.Secrets, Hosts: r.Hosts, Status: r.Status, Result: r.Result,
		Limits:    Budget{Tokens: r.TokLimit, ToolCalls: r.CallLimit},
		Spent:     Budget{Tokens: r.TokUsed, ToolCalls: r.CallUsed},
		StartedAt: r.StartedAt, CheckpointStep: r.CkptStep, LeaseHolder: r.Holder}
	if r.EndedAt != nil {
		c.EndedAt = *r.EndedAt
	}
	if r.LeaseUntil != 0 {
		c.LeaseUntil = time.UnixMilli(r.LeaseUntil).UTC()
	}
	return c
}

func childKey(runID, childID string) map[string]types.AttributeValue {
	return key(prefixRun+runID, prefixChild+childID)
}

func (s *Store) getChild(ctx context.Context, runID, childID string) (childRecord, error) {
	var r childRecord
	if childID == "" {
		return r, fault.ChildNotFound
	}
	found, err := s.getRecord(ctx, childKey(runID, childID), &r)
	if err == nil && !found {
		// Tell an unknown run from an unknown child.
		if _, err = s.getRun(ctx, runID); err == nil {
			err = fault.New(fault.ChildNotFound, "run %s never issued child %s", runID, childID)
		}
	}
	return r, err
}

// childFrom reads old, an item a failed condition returned, or the child
// when DynamoDB returned none.
func (s *Store) childFrom(ctx context.Context, runID, childID string, old map[string]types.AttributeValue) (childRecord, error) {
	if old == nil {
		return s.getChild(ctx, runID, childID)
	}
	var r childRecord
	return r, unmarshal(old, &r)
}

// childID returns the id of a child started with key: the same key of the
// same run always names the same child.
func childID(runID, key string) string {
	sum := sha256.Sum256([]byte(runID + "\x00" + key))
	return "child_" + strings.ToUpper(hex.EncodeToString(sum[:13]))
}

// StartChild starts a child agent of the run, as nc says. The run must be
// running (ErrRunEnded otherwise). It returns the child and whether this
// call started it: false when nc.Key was used before, and the child it
// started then comes back.
//
// One transaction counts the child on the run item and writes it, so the
// caps hold whatever races: past MaxChildrenRunning working at once or
// MaxChildrenTotal in all it fails with fault.ChildCapReached; a parent at
// depth 2 fails with fault.ChildDepth; a ParentID the run never issued with
// fault.ChildNotFound, and a parent that has ended with ErrChildEnded.
// Checking tools, secrets and hosts against the parent's
// (child_tool_not_held) is the caller's.
func (s *Store) StartChild(ctx context.Context, nc NewChild) (Child, bool, error) {
	c, created, err := s.startChild(ctx, nc)
	if err != nil {
		return Child{}, false, fmt.Errorf("start child of run %s: %w", nc.RunID, err)
	}
	return c, created, nil
}

func (s *Store) startChild(ctx context.Context, nc NewChild) (Child, bool, error) {
	if err := nc.check(); err != nil {
		return Child{}, false, err
	}
	if nc.Key != "" {
		if r, err := s.getChild(ctx, nc.RunID, childID(nc.RunID, nc.Key)); err == nil {
			return r.child(), false, nil
		} else if !errors.Is(err, fault.ChildNotFound) {
			return Child{}, false, err
		}
	}
	depth, err := s.childDepth(ctx, nc.RunID, nc.ParentID)
	if err != nil {
		return Child{}, false, err
	}
	var rec childRecord
	created := true
	err = s.retry(ctx, func() error {
		rec = nc.record(depth, s.now().UTC())
		t, err := s.startChildTxn(ctx, nc, rec)
		if err != nil {
			return err
		}
		err = s.commit(ctx, t)
		var prev startedBefore
		if errors.As(err, &prev) {
			rec, created = prev.rec, false
			return nil
		}
		return err
	})
	if err != nil {
		return Child{}, false, err
	}
	return rec.child(), created, nil
}

// check refuses a child whose task and lists are too large or whose share
// is negative.
func (nc NewChild) check() error {
	if size := len(nc.Task) + len(strings.Join(nc.Tools, "")) + len(strings.Join(nc.Secrets, "")) + len(strings.Join(nc.Hosts, "")); size > MaxBlobBytes {
		return fmt.Errorf("task and lists of %d bytes: %w", size, ErrTooLarge)
	}
	if nc.Limits.Tokens < 0 || nc.Limits.ToolCalls < 0 {
		return fault.New(fault.RequestInvalid, "a child's share of the budget cannot be negative")
	}
	return nil
}

// childDepth returns the depth of a child of parentID ("": the run's
// agent): fault.ChildDepth when the parent is as deep as children go.
func (s *Store) childDepth(ctx context.Context, runID, parentID string) (int, error) {
	if parentID == "" {
		return 1, nil
	}
	p, err := s.getChild(ctx, runID, parentID)
	if err != nil {
		return 0, err
	}
	if p.Depth >= MaxChildDepth {
		return 0, fault.New(fault.ChildDepth, "child %s is at depth %d; child agents nest %d levels deep", parentID, p.Depth, MaxChildDepth)
	}
	return p.Depth + 1, nil
}

// record is the item of the child nc starts at depth, now: its id from
// nc.Key when there is one, a fresh one otherwise.
func (nc NewChild) record(depth int, now time.Time) childRecord {
	rec := childRecord{PK: prefixRun + nc.RunID, ID: newID("child_", now), RunID: nc.RunID, ParentID: nc.ParentID, Depth: depth,
		Task: nc.Task, Tools: nc.Tools, Secrets: nc.Secrets, Hosts: nc.Hosts, Key: nc.Key, Status: ChildRunning, StartedAt: now,
		TokLimit: nc.Limits.Tokens, CallLimit: nc.Limits.ToolCalls, TokLeft: nc.Limits.Tokens, CallLeft: nc.Limits.ToolCalls,
		GSI2PK: gsi2Live, GSI2SK: now.UnixMilli()}
	if nc.Key != "" {
		rec.ID = childID(nc.RunID, nc.Key)
	}
	if rec.TokLeft == 0 {
		rec.TokLeft = unlimited
	}
	if rec.CallLeft == 0 {
		rec.CallLeft = unlimited
	}
	rec.SK = prefixChild + rec.ID
	return rec
}

// startedBefore is the failure of a keyed child's put: a start with the
// same key wrote rec first.
type startedBefore struct{ rec childRecord }

func (startedBefore) Error() string { return "child started before with the same key" }

// startChildTxn is the transaction that starts rec: it puts the child, counts
// it on the run (running, below both caps) and checks that its parent, if
// any, is running.
func (s *Store) startChildTxn(ctx context.Context, nc NewChild, rec childRecord) (*txn, error) {
	item, err := marshal(rec)
	if err != nil {
		return nil, err
	}
	t := s.newTxn()
	t.put("child item", item, newWrite().absent(), func(old map[string]types.AttributeValue) error {
		if nc.Key == "" {
			return errRetry // id collision: 80 random bits make this theoretical
		}
		prev, err := s.childFrom(ctx, nc.RunID, rec.ID, old)
		if err != nil {
			return err
		}
		return startedBefore{prev}
	})
	rw := newWrite().exists()
	rw.is("status", rw.s(string(StatusRunning))).incr("kidsRun", 1).incr("kidsTotal", 1).
		below("kidsRun", MaxChildrenRunning).below("kidsTotal", MaxChildrenTotal)
	t.update("run item", runKey(nc.RunID), rw, s.childCapFailed(ctx, nc.RunID))
	if nc.ParentID != "" {
		pw := newWrite()
		t.check("parent item", childKey(nc.RunID, nc.ParentID), pw.is("status", pw.s(string(ChildRunning))),
			failWith(fmt.Errorf("parent child %s: %w", nc.ParentID, ErrChildEnded)))
	}
	return t, nil
}

// childCapFailed says why the run refused a child: it is not running, or
// a cap is reached; otherwise the start runs again.
func (s *Store) childCapFailed(ctx context.Context, runID string) onFail {
	return func(old map[string]types.AttributeValue) error {
		cur, err := s.runFrom(ctx, runID, old)
		switch {
		case err != nil:
			return err
		case cur.Status != StatusRunning:
			return fmt.Errorf("run %s is %s: %w", runID, cur.Status, ErrRunEnded)
		case cur.KidsRun >= MaxChildrenRunning:
			return fault.New(fault.ChildCapReached, "run %s has %d children working; at most %d at once", runID, cur.KidsRun, MaxChildrenRunning)
		case cur.KidsTotal >= MaxChildrenTotal:
			return fault.New(fault.ChildCapReached, "run %s has started %d children; at most %d in all", runID, cur.KidsTotal, MaxChildrenTotal)
		}
		return errRetry
	}
}

// FinishChild ends a running child with status (done, failed or
// interrupted) and an optional result, stops counting it as working on the
// run, and appends events to the run's log, in one transaction. It returns
// the child as it ended and the sequence number of the first event (0 with
// none). A child that has already ended fails with ErrChildEnded (and
// nothing is appended); an id the run never issued with
// fault.ChildNotFound.
func (s *Store) FinishChild(ctx context.Context, runID, childID string, status ChildStatus, result string, events ...NewEvent) (Child, int64, error) {
	c, seq, err := s.finishChild(ctx, runID, childID, status, result, events)
	if err != nil {
		return Child{}, 0, fmt.Errorf("finish child %s of run %s: %w", childID, runID, err)
	}
	return c, seq, nil
}

func (s *Store) finishChild(ctx context.Context, runID, childID string, status ChildStatus, result string, events []NewEvent) (Child, int64, error) {
	if !status.final() {
		return Child{}, 0, fault.New(fault.RequestInvalid, "a child ends done, failed or interrupted, not %q", status)
	}
	if len(result) > MaxBlobBytes {
		return Child{}, 0, fmt.Errorf("result of %d bytes: %w", len(result), ErrTooLarge)
	}
	if childID == "" {
		return Child{}, 0, fault.ChildNotFound
	}
	if err := checkEvents(events); err != nil {
		return Child{}, 0, err
	}
	var first int64
	err := s.retry(ctx, func() error {
		last, err := s.lastSeq(ctx, runID, len(events))
		if err != nil {
			return err
		}
		now := s.now().UTC()
		t := s.newTxn()
		cw := newWrite().exists()
		cw.is("status", cw.s(string(ChildRunning))).endChild(status, result, now)
		t.update("child item", childKey(runID, childID), cw, s.childFinished(ctx, runID, childID))
		rw := newWrite().incr("kidsRun", -1).above("kidsRun", 0).advanceSeq(last, len(events))
		t.update("run item", runKey(runID), rw, s.seqMovedFrom(ctx, runID, last, len(events)))
		if err := putEvents(t, runID, last+1, events, now); err != nil {
			return err
		}
		if err := s.commit(ctx, t); err != nil {
			return err
		}
		first = s.appended(runID, last, len(events))
		return nil
	})
	if err != nil {
		return Child{}, 0, err
	}
	// The transaction returns nothing; read the child back.
	rec, err := s.getChild(ctx, runID, childID)
	return rec.child(), first, err
}

// childFinished is the failure of an ending child's condition: it has
// ended (ErrChildEnded), or the run never issued it (fault.ChildNotFound).
func (s *Store) childFinished(ctx context.Context, runID, childID string) onFail {
	return func(old map[string]types.AttributeValue) error {
		if old == nil {
			if _, err := s.getChild(ctx, runID, childID); err != nil {
				return err
			}
		}
		return ErrChildEnded
	}
}

// seqMovedFrom is the failure of the run item's condition when n events
// were to follow last: the counter moved (the write runs again). It cannot
// say when there were no events or the counter is still at last.
func (s *Store) seqMovedFrom(ctx context.Context, runID string, last int64, n int) onFail {
	if n == 0 {
		return nil
	}
	return func(old map[string]types.AttributeValue) error {
		cur, err := s.runFrom(ctx, runID, old)
		if err != nil {
			return err
		}
		if cur.EvtSeq == last {
			return nil
		}
		s.setHint(runID, cur.EvtSeq)
		return errRetry
	}
}

func (st ChildStatus) final() bool {
	return st == ChildDone || st == ChildFailed || st == ChildInterrupted
}

// GetChild returns a child of the run; an id this run never issued (one
// another run issued included) fails with fault.ChildNotFound.
func (s *Store) GetChild(ctx context.Context, runID, childID string) (Child, error) {
	r, err := s.getChild(ctx, runID, childID)
	if err != nil {
		return Child{}, fmt.Errorf("get child %s of run %s: %w", childID, runID, err)
	}
	return r.child(), nil
}

// ListChildren returns the run's children (at most MaxChildrenTotal), in the
// order they started.
func (s *Store) ListChildren(ctx context.Context, runID string) ([]Child, error) {
	var kids []Child
	var start map[string]types.AttributeValue
	for {
		e := newExpr()
		out, err := s.db.Query(ctx, &dynamodb.QueryInput{
			TableName: &s.table,
			KeyConditionExpression: aws.String(e.n(AttrPK) + " = " + e.s(prefixRun+runID) +
				" AND begins_with(" + e.n(AttrSK) + ", " + e.s(prefixChild) + ")"),
			ExpressionAttributeNames:  e.nameMap(),
			ExpressionAttributeValues: e.valueMap(),
			ExclusiveStartKey:         start,
			ConsistentRead:            aws.Bool(true),
		})
		if err != nil {
			return nil, fmt.Errorf("list children of run %s: %w", runID, err)
		}
		for _, item := range out.Items {
			var r childRecord
			if err := unmarshal(item, &r); err != nil {
				return nil, fmt.Errorf("list children of run %s: %w", runID, err)
			}
			kids = append(kids, r.child())
		}
		if start = out.LastEvaluatedKey; len(start) == 0 {
			break
		}
	}
	if len(kids) == 0 {
		if _, err := s.getRun(ctx, runID); err != nil {
			return nil, fmt.Errorf("list children of run %s: %w", runID, err)
		}
	}
	// Ids started with a key do not sort by time.
	slices.SortStableFunc(kids, func(a, b Child) int {
		if c := a.StartedAt.Compare(b.StartedAt); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
	return kids, nil
}

// InterruptRunningChildren ends every child of the run that is still working
// as interrupted, each with the events ended returns for it (given the
// child as it ends, nil for none), and returns the children it ended. Call
// it when a run ends. Children that end on their own meanwhile are left as
// they ended.
func (s *Store) InterruptRunningChildren(ctx context.Context, runID string, ended func(Child) []NewEvent) ([]Child, error) {
	kids, err := s.ListChildren(ctx, runID)
	if err != nil {
		return nil, fmt.Errorf("interrupt children of run %s: %w", runID, err)
	}
	var out []Child
	for _, c := range kids {
		if c.Status != ChildRunning {
			continue
		}
		var evs []NewEvent
		if ended != nil {
			c.Status = ChildInterrupted
			evs = ended(c)
		}
		done, _, err := s.finishChild(ctx, runID, c.ID, ChildInterrupted, "", evs)
		if errors.Is(err, ErrChildEnded) {
			continue
		}
		if err != nil {
			return out, fmt.Errorf("interrupt child %s of run %s: %w", c.ID, runID, err)
		}
		out = append(out, done)
	}
	return out, nil
}
