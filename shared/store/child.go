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

// Child-agent limits from the specification.
const (
	MaxChildrenRunning = 4  // children working at once, per run
	MaxChildrenTotal   = 16 // children started in all, per run
	MaxChildDepth      = 2  // children (1) and grandchildren (2)
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
	Tools    []string
	Status   ChildStatus
	Result   string
	// StartedAt and EndedAt (zero while running).
	StartedAt, EndedAt time.Time
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
	Status    ChildStatus `dynamodbav:"status"`
	Result    string      `dynamodbav:"result,omitempty"`
	StartedAt time.Time   `dynamodbav:"startedAt"`
	EndedAt   *time.Time  `dynamodbav:"endedAt,omitempty"`
}

func (r childRecord) child() Child {
	c := Child{ID: r.ID, RunID: r.RunID, ParentID: r.ParentID, Depth: r.Depth, Task: r.Task, Tools: r.Tools,
		Status: r.Status, Result: r.Result, StartedAt: r.StartedAt}
	if r.EndedAt != nil {
		c.EndedAt = *r.EndedAt
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

// StartChild starts a child agent of the run: parentID empty for a child of
// the run's top-level agent (depth 1), or the id of a running child for a
// grandchild (depth 2). The run must be running (ErrRunEnded otherwise).
//
// One transaction counts the child on the run item and writes it, so the
// caps hold whatever races: past MaxChildrenRunning working at once or
// MaxChildrenTotal in all it fails with fault.ChildCapReached; a parent at
// depth 2 fails with fault.ChildDepth; a parentID the run never issued with
// fault.ChildNotFound, and a parent that has ended with ErrChildEnded.
// Checking tools against the parent's (child_tool_not_held) is the caller's.
func (s *Store) StartChild(ctx context.Context, runID, parentID, task string, tools []string) (Child, error) {
	c, err := s.startChild(ctx, runID, parentID, task, tools)
	if err != nil {
		return Child{}, fmt.Errorf("start child of run %s: %w", runID, err)
	}
	return c, nil
}

func (s *Store) startChild(ctx context.Context, runID, parentID, task string, tools []string) (Child, error) {
	if len(task) > MaxBlobBytes {
		return Child{}, fmt.Errorf("task of %d bytes: %w", len(task), ErrTooLarge)
	}
	depth := 1
	if parentID != "" {
		p, err := s.getChild(ctx, runID, parentID)
		if err != nil {
			return Child{}, err
		}
		if p.Depth >= MaxChildDepth {
			return Child{}, fault.New(fault.ChildDepth, "child %s is at depth %d; child agents nest %d levels deep", parentID, p.Depth, MaxChildDepth)
		}
		depth = p.Depth + 1
	}
	var rec childRecord
	err := s.retry(ctx, func() error {
		now := s.now().UTC()
		rec = childRecord{PK: prefixRun + runID, ID: newID("child_", now), RunID: runID, ParentID: parentID, Depth: depth,
			Task: task, Tools: tools, Status: ChildRunning, StartedAt: now}
		rec.SK = prefixChild + rec.ID
		item, err := marshal(rec)
		if err != nil {
			return err
		}
		re, ce := newExpr(), newExpr()
		running, total := re.n("kidsRun"), re.n("kidsTotal")
		items := []types.TransactWriteItem{
			{Update: &types.Update{TableName: &s.table, Key: runKey(runID),
				UpdateExpression: aws.String("SET " + running + " = " + running + " + " + re.i(1) + ", " + total + " = " + total + " + " + re.i(1)),
				ConditionExpression: aws.String("attribute_exists(" + re.n(AttrPK) + ") AND " + re.n("status") + " = " + re.s(string(StatusRunning)) +
					" AND " + running + " < " + re.i(MaxChildrenRunning) + " AND " + total + " < " + re.i(MaxChildrenTotal)),
				ExpressionAttributeNames:            re.nameMap(),
				ExpressionAttributeValues:           re.valueMap(),
				ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld}},
			{Put: &types.Put{TableName: &s.table, Item: item,
				ConditionExpression: aws.String("attribute_not_exists(" + ce.n(AttrPK) + ")"), ExpressionAttributeNames: ce.nameMap()}},
		}
		if parentID != "" {
			pe := newExpr()
			items = append(items, types.TransactWriteItem{ConditionCheck: &types.ConditionCheck{TableName: &s.table,
				Key:                       childKey(runID, parentID),
				ConditionExpression:       aws.String(pe.n("status") + " = " + pe.s(string(ChildRunning))),
				ExpressionAttributeNames:  pe.nameMap(),
				ExpressionAttributeValues: pe.valueMap()}})
		}
		err = s.transact(ctx, items)
		if reasons, ok := canceled(err); ok {
			if old, failed := reasonFailed(reasons, 0); failed {
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
			if _, failed := reasonFailed(reasons, 2); failed {
				return fmt.Errorf("parent child %s: %w", parentID, ErrChildEnded)
			}
			if _, failed := reasonFailed(reasons, 1); failed {
				return errRetry // id collision: 80 random bits make this theoretical
			}
		}
		return err
	})
	if err != nil {
		return Child{}, err
	}
	return rec.child(), nil
}

// FinishChild ends a running child with status (done, failed or
// interrupted) and an optional result, and stops counting it as working on
// the run, in one transaction. A child that has already ended fails with
// ErrChildEnded; an id the run never issued with fault.ChildNotFound.
func (s *Store) FinishChild(ctx context.Context, runID, childID string, status ChildStatus, result string) (Child, error) {
	c, err := s.finishChild(ctx, runID, childID, status, result)
	if err != nil {
		return Child{}, fmt.Errorf("finish child %s of run %s: %w", childID, runID, err)
	}
	return c, nil
}

func (s *Store) finishChild(ctx context.Context, runID, childID string, status ChildStatus, result string) (Child, error) {
	if status != ChildDone && status != ChildFailed && status != ChildInterrupted {
		return Child{}, fault.New(fault.RequestInvalid, "a child ends done, failed or interrupted, not %q", status)
	}
	if len(result) > MaxBlobBytes {
		return Child{}, fmt.Errorf("result of %d bytes: %w", len(result), ErrTooLarge)
	}
	if childID == "" {
		return Child{}, fault.ChildNotFound
	}
	now := s.now().UTC()
	ce, re := newExpr(), newExpr()
	set := "SET " + ce.n("status") + " = " + ce.s(string(status)) + ", " + ce.n("endedAt") + " = " + ce.t(now)
	if result != "" {
		set += ", " + ce.n("result") + " = " + ce.s(result)
	}
	running := re.n("kidsRun")
	err := s.transact(ctx, []types.TransactWriteItem{
		{Update: &types.Update{TableName: &s.table, Key: childKey(runID, childID),
			UpdateExpression:                    aws.String(set),
			ConditionExpression:                 aws.String("attribute_exists(" + ce.n(AttrPK) + ") AND " + ce.n("status") + " = " + ce.s(string(ChildRunning))),
			ExpressionAttributeNames:            ce.nameMap(),
			ExpressionAttributeValues:           ce.valueMap(),
			ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld}},
		{Update: &types.Update{TableName: &s.table, Key: runKey(runID),
			UpdateExpression:          aws.String("SET " + running + " = " + running + " - " + re.i(1)),
			ConditionExpression:       aws.String(running + " > " + re.i(0)),
			ExpressionAttributeNames:  re.nameMap(),
			ExpressionAttributeValues: re.valueMap()}},
	})
	if reasons, ok := canceled(err); ok {
		if old, failed := reasonFailed(reasons, 0); failed {
			if old == nil {
				if _, err := s.getChild(ctx, runID, childID); err != nil {
					return Child{}, err
				}
			}
			return Child{}, ErrChildEnded
		}
	}
	if err != nil {
		return Child{}, err
	}
	// The transaction returns nothing; read the child back.
	rec, err := s.getChild(ctx, runID, childID)
	return rec.child(), err
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
	return kids, nil
}

// InterruptRunningChildren ends every child of the run that is still working
// as interrupted and returns how many it ended. Call it when a run ends.
// Children that end on their own meanwhile are left as they ended.
func (s *Store) InterruptRunningChildren(ctx context.Context, runID string) (int, error) {
	kids, err := s.ListChildren(ctx, runID)
	if err != nil {
		return 0, fmt.Errorf("interrupt children of run %s: %w", runID, err)
	}
	n := 0
	for _, c := range kids {
		if c.Status != ChildRunning {
			continue
		}
		_, err := s.finishChild(ctx, runID, c.ID, ChildInterrupted, "")
		if errors.Is(err, ErrChildEnded) {
			continue
		}
		if err != nil {
			return n, fmt.Errorf("interrupt child %s of run %s: %w", c.ID, runID, err)
		}
		n++
	}
	return n, nil
}
