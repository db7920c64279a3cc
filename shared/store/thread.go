package store

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
)

// ThreadMessages are the messages the slack λ keeps editing in a run's
// thread: the working status (with its Stop button) and the plan. Empty:
// not posted yet.
type ThreadMessages struct {
	Status string // its ts
	Plan   string
}

// skThreadMsgs is the run's thread messages item, under the run.
const skThreadMsgs = "THREADMSG"

type threadMsgsRecord struct {
	PK     string `dynamodbav:"pk"`
	SK     string `dynamodbav:"sk"`
	Status string `dynamodbav:"status,omitempty"`
	Plan   string `dynamodbav:"plan,omitempty"`
}

// SetThreadMessage records ts as the run's status or plan message (which
// is "status" or "plan"). One write; the other is left as it is.
func (s *Store) SetThreadMessage(ctx context.Context, runID, which, ts string) error {
	if which != "status" && which != "plan" {
		return fmt.Errorf("set thread message of run %s: %q is not status or plan", runID, which)
	}
	e := newExpr()
	_, err := s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                 &s.table,
		Key:                       key(prefixRun+runID, skThreadMsgs),
		UpdateExpression:          aws.String("SET " + e.n(which) + " = " + e.s(ts)),
		ExpressionAttributeNames:  e.nameMap(),
		ExpressionAttributeValues: e.valueMap(),
	})
	if err != nil {
		return fmt.Errorf("set thread message of run %s: %w", runID, err)
	}
	return nil
}

// GetThreadMessages returns the run's thread messages (zero when none was
// recorded).
func (s *Store) GetThreadMessages(ctx context.Context, runID string) (ThreadMessages, error) {
	var r threadMsgsRecord
	if _, err := s.getRecord(ctx, key(prefixRun+runID, skThreadMsgs), &r); err != nil {
		return ThreadMessages{}, fmt.Errorf("get thread messages of run %s: %w", runID, err)
	}
	return ThreadMessages{Status: r.Status, Plan: r.Plan}, nil
}
