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

// An agent's conversation is kept in turn items beside its checkpoint, so
// that a step writes what it adds to the conversation and not the whole of
// it: a step commits, in its transaction, the turns it adds or changes
// (Step.Turns), and its checkpoint says which turns make the conversation.
// A turn item is keyed by the agent and the step that first wrote it, so
// that ListTurns reads a conversation back in order with one Query. The
// store does not read what a turn holds.
//
// Turn items live as long as the run's other items (the run, its events,
// its checkpoints): they carry no TTL and nothing deletes them. One that a
// later checkpoint no longer names (a conversation compacted into a
// summary) stays, as the events of the same work do.

// MaxTurnsPerStep is the most turns one step may write: with
// maxEventsPerWrite events and the items a step updates (the run, the
// checkpoint; for a child, its own item and its parent's), a step stays
// within DynamoDB's 100 items a transaction.
const MaxTurnsPerStep = 6

// maxStepBytes bounds what one step writes (its checkpoint, turns and
// events) within the 4 MB of a transaction, with room for the keys and
// the other attributes of at most 100 items.
const maxStepBytes = 4_000_000 - 100*1024

// Turn is one turn item of an agent's conversation.
type Turn struct {
	// Step is the step that first wrote the turn: its place in the
	// conversation. A step may write a turn of an earlier step again (to
	// change what it holds), never one of a later step.
	Step int64
	// Data is what the turn holds, opaque to the store; at most
	// MaxBlobBytes.
	Data []byte
}

type turnRecord struct {
	PK      string    `dynamodbav:"pk"`
	SK      string    `dynamodbav:"sk"`
	Step    int64     `dynamodbav:"step"`
	Data    []byte    `dynamodbav:"data,omitempty"`
	SavedAt time.Time `dynamodbav:"savedAt"`
}

// turnSK is the sort key of agent's turn of step: TURN#<agent>#<step>,
// agent "" for the run's own, so that no agent's turns sort among
// another's.
func turnSK(agent string, step int64) string {
	return fmt.Sprintf("%s%s#%016d", prefixTurn, agent, step)
}

// checkTurns refuses turns of steps outside 1 through number, more than
// MaxTurnsPerStep or a turn larger than MaxBlobBytes.
func checkTurns(turns []Turn, number int64) error {
	if len(turns) > MaxTurnsPerStep {
		return fmt.Errorf("%d turns in one step, at most %d: %w", len(turns), MaxTurnsPerStep, ErrTooLarge)
	}
	for _, tn := range turns {
		if tn.Step < 1 || tn.Step > number {
			return fault.New(fault.RequestInvalid, "a turn of step %d in step %d: a step writes the turns of steps 1 through its own", tn.Step, number)
		}
		if len(tn.Data) > MaxBlobBytes {
			return fmt.Errorf("turn of step %d of %d bytes: %w", tn.Step, len(tn.Data), ErrTooLarge)
		}
	}
	return nil
}

// putTurns adds to t the puts of agent's turns (agent "" for the run's
// own).
func putTurns(t *txn, runID, agent string, turns []Turn, at time.Time) error {
	for _, tn := range turns {
		item, err := marshal(turnRecord{PK: prefixRun + runID, SK: turnSK(agent, tn.Step), Step: tn.Step, Data: tn.Data, SavedAt: at})
		if err != nil {
			return err
		}
		t.put(fmt.Sprintf("turn of step %d", tn.Step), item, nil, nil)
	}
	return nil
}

// ListTurns returns the turns of agent (a child id; "" for the run's own
// agent) in the run runID whose steps are from through to, in step order,
// read strongly: after a commit, the turns it wrote. It returns none, and
// no error, for a run or agent without turns there.
func (s *Store) ListTurns(ctx context.Context, runID, agent string, from, to int64) ([]Turn, error) {
	if from > to {
		return nil, nil
	}
	var turns []Turn
	var start map[string]types.AttributeValue
	for {
		e := newExpr()
		out, err := s.db.Query(ctx, &dynamodb.QueryInput{
			TableName: &s.table,
			KeyConditionExpression: aws.String(e.n(AttrPK) + " = " + e.s(prefixRun+runID) + " AND " +
				e.n(AttrSK) + " BETWEEN " + e.s(turnSK(agent, max(from, 0))) + " AND " + e.s(turnSK(agent, to))),
			ExpressionAttributeNames:  e.nameMap(),
			ExpressionAttributeValues: e.valueMap(),
			ConsistentRead:            aws.Bool(true),
			ExclusiveStartKey:         start,
		})
		if err != nil {
			return nil, fmt.Errorf("list turns of %q in run %s: %w", agent, runID, err)
		}
		for _, item := range out.Items {
			var r turnRecord
			if err := unmarshal(item, &r); err != nil {
				return nil, fmt.Errorf("list turns of %q in run %s: %w", agent, runID, err)
			}
			turns = append(turns, Turn{Step: r.Step, Data: r.Data})
		}
		if start = out.LastEvaluatedKey; len(start) == 0 {
			return turns, nil
		}
	}
}
