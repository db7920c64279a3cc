package store

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// GSI2 holds, sparsely, the items a runner invocation is meant to be
// executing: queued and running runs, and running child agents. Each such
// item carries AttrGSI2PK (gsi2Live) and AttrGSI2SK, the moment (Unix ms)
// from which nobody executes it unless something changed since:
//
//	created (a queued run, a child not yet started)   its creation
//	lease taken or renewed                              the lease's expiry
//	lease released (handed over, or the run stopping)   the release
//
// so that the items whose moment is past are those no live invocation
// holds: a live holder renews every third of its lease, always keeping its
// moment in the future. A run leaves the index when it moves to waiting or
// a final status (Transition), a child when it ends. Only lease writes move
// the sort key, never a step, so the index costs one write per renewal.
//
// Everything sits in one partition: the index holds only what is under way
// (at most the runner's concurrency, times the children), far below a
// partition's write rate even at a renewal a lease-third each.
const gsi2Live = "LIVE"

// Lapsed is a run, or a child agent of one, that is not finished and that
// no runner invocation holds: its lease ran out unrenewed (the invocation
// died), or was released and nobody took it, or it was never taken (the
// invocation that should start it was lost).
type Lapsed struct {
	RunID string
	// ChildID is the child agent; empty for the run's own agent.
	ChildID string
	// Since is when it was left without a holder: its lease's expiry, its
	// release, or its creation.
	Since time.Time
	// Holder is the holder whose lease ran out; empty when it was released
	// or never taken.
	Holder string
}

// Lapsed limits.
const (
	DefaultLapsedLimit = 100
	MaxLapsedLimit     = 1000
)

// ListLapsed returns at most limit (0 means DefaultLapsedLimit, at most
// MaxLapsedLimit) runs and child agents that have had no holder since
// before or earlier, oldest first: queued and running runs and running
// children whose lease ran out, was released or was never taken by then.
// A run waiting for a person is not among them, nor anything held by a
// live invocation (one that renewed its lease since before).
//
// It reads one page of GSI2 (a Query, never a Scan), then each item found
// again with a strongly consistent read, so that an item the index shows
// a moment late (a lease just taken or renewed, a run just ended) is left
// out. It writes nothing: safe to call concurrently and again.
func (s *Store) ListLapsed(ctx context.Context, before time.Time, limit int) ([]Lapsed, error) {
	e := newExpr()
	out, err := s.db.Query(ctx, &dynamodb.QueryInput{
		TableName: &s.table,
		IndexName: aws.String(IndexGSI2),
		KeyConditionExpression: aws.String(e.n(AttrGSI2PK) + " = " + e.s(gsi2Live) +
			" AND " + e.n(AttrGSI2SK) + " <= " + e.i(before.UnixMilli())),
		ExpressionAttributeNames:  e.nameMap(),
		ExpressionAttributeValues: e.valueMap(),
		ScanIndexForward:          aws.Bool(true),
		Limit:                     aws.Int32(pageSize(limit, DefaultLapsedLimit, MaxLapsedLimit)),
	})
	if err != nil {
		return nil, fmt.Errorf("list lapsed runs: %w", err)
	}
	var found []Lapsed
	for _, k := range out.Items {
		l, ok, err := s.lapsed(ctx, k, before)
		if err != nil {
			return found, fmt.Errorf("list lapsed runs: %w", err)
		}
		if ok {
			found = append(found, l)
		}
	}
	return found, nil
}

// lapsed reads the item of an index entry again and reports it if it is
// still under way and without a holder since before.
func (s *Store) lapsed(ctx context.Context, k map[string]types.AttributeValue, before time.Time) (Lapsed, bool, error) {
	var keys struct {
		PK string `dynamodbav:"pk"`
		SK string `dynamodbav:"sk"`
	}
	if err := unmarshal(k, &keys); err != nil {
		return Lapsed{}, false, err
	}
	runID, ok := strings.CutPrefix(keys.PK, prefixRun)
	if !ok {
		return Lapsed{}, false, nil
	}
	l := Lapsed{RunID: runID}
	var lease leaseFields
	var live bool
	var due int64
	var found bool
	var err error
	if childID, isChild := strings.CutPrefix(keys.SK, prefixChild); isChild {
		var c childRecord
		found, err = s.getRecord(ctx, key(keys.PK, keys.SK), &c)
		l.ChildID = childID
		lease, due = leaseFields{Holder: c.Holder, LeaseUntil: c.LeaseUntil}, c.GSI2SK
		live = c.GSI2PK != "" && c.Status == ChildRunning
	} else if keys.SK == skRun {
		var r runRecord
		found, err = s.getRecord(ctx, key(keys.PK, keys.SK), &r)
		lease, due = leaseFields{Holder: r.Holder, LeaseUntil: r.LeaseUntil}, r.GSI2SK
		live = r.GSI2PK != "" && (r.Status == StatusQueued || r.Status == StatusRunning)
	}
	if err != nil || !found || !live || due > before.UnixMilli() ||
		lease.Holder != "" && lease.LeaseUntil > s.now().UnixMilli() {
		return Lapsed{}, false, err
	}
	l.Since, l.Holder = time.UnixMilli(due).UTC(), lease.Holder
	return l, true, nil
}
