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

// A run's inbox holds what reaches the run while it works — a reply in its
// Slack thread — for its next turn: the runner reads the messages after
// the last it took (its checkpoint keeps that number) and adds them to the
// conversation.

// InboxMessage is one message of a run's inbox, numbered from 1.
type InboxMessage struct {
	Seq  int64
	Text string
	At   time.Time
}

// skInbox prefixes the inbox items, under the run.
const skInbox = "INBOX#"

func inboxSK(seq int64) string { return fmt.Sprintf("%s%016d", skInbox, seq) }

type inboxRecord struct {
	PK   string    `dynamodbav:"pk"`
	SK   string    `dynamodbav:"sk"`
	Seq  int64     `dynamodbav:"seq"`
	Text string    `dynamodbav:"text"`
	At   time.Time `dynamodbav:"at"`
}

// SendToRun puts text in the inbox of a run that is queued or running and
// returns its number. A run that is not (it ended, or waits) fails with
// ErrRunEnded, and the caller starts another run instead; an unknown run
// with fault.RunNotFound. The number is taken with one conditional write
// on the run item, then the message is written: two writes, so a failure
// between them leaves a number unused, which readers skip.
func (s *Store) SendToRun(ctx context.Context, runID, text string) (int64, error) {
	if text == "" || len(text) > MaxBlobBytes {
		return 0, fmt.Errorf("send to run %s: %w", runID, fault.New(fault.RequestInvalid, "a message to a run has 1 to %d bytes", MaxBlobBytes))
	}
	e := newExpr()
	seq := e.n("inboxSeq")
	out, err := s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:        &s.table,
		Key:              runKey(runID),
		UpdateExpression: aws.String("SET " + seq + " = if_not_exists(" + seq + ", " + e.i(0) + ") + " + e.i(1)),
		ConditionExpression: aws.String("attribute_exists(" + e.n(AttrPK) + ") AND " + e.n("status") + " IN (" +
			e.s(string(StatusQueued)) + ", " + e.s(string(StatusRunning)) + ")"),
		ExpressionAttributeNames:            e.nameMap(),
		ExpressionAttributeValues:           e.valueMap(),
		ReturnValues:                        types.ReturnValueUpdatedNew,
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	})
	if old, ok := conditionFailed(err); ok {
		cur, err := s.runFrom(ctx, runID, old)
		if err != nil {
			return 0, fmt.Errorf("send to run %s: %w", runID, err)
		}
		return 0, fmt.Errorf("send to run %s: it is %s: %w", runID, cur.Status, ErrRunEnded)
	}
	if err != nil {
		return 0, fmt.Errorf("send to run %s: %w", runID, err)
	}
	var got struct {
		Seq int64 `dynamodbav:"inboxSeq"`
	}
	if err := unmarshal(out.Attributes, &got); err != nil {
		return 0, fmt.Errorf("send to run %s: %w", runID, err)
	}
	item, err := marshal(inboxRecord{PK: prefixRun + runID, SK: inboxSK(got.Seq), Seq: got.Seq, Text: text, At: s.now().UTC()})
	if err != nil {
		return 0, fmt.Errorf("send to run %s: %w", runID, err)
	}
	if _, err := s.db.PutItem(ctx, &dynamodb.PutItemInput{TableName: &s.table, Item: item}); err != nil {
		return 0, fmt.Errorf("send to run %s: %w", runID, err)
	}
	return got.Seq, nil
}

// Inbox returns the run's inbox messages numbered above after, in order
// (at most 100).
func (s *Store) Inbox(ctx context.Context, runID string, after int64) ([]InboxMessage, error) {
	e := newExpr()
	out, err := s.db.Query(ctx, &dynamodb.QueryInput{
		TableName: &s.table,
		KeyConditionExpression: aws.String(e.n(AttrPK) + " = " + e.s(prefixRun+runID) + " AND " +
			e.n(AttrSK) + " BETWEEN " + e.s(inboxSK(after+1)) + " AND " + e.s(skInbox+"9999999999999999")),
		ExpressionAttributeNames:  e.nameMap(),
		ExpressionAttributeValues: e.valueMap(),
		ConsistentRead:            aws.Bool(true),
		Limit:                     aws.Int32(100),
	})
	if err != nil {
		return nil, fmt.Errorf("read the inbox of run %s: %w", runID, err)
	}
	msgs := make([]InboxMessage, 0, len(out.Items))
	for _, item := range out.Items {
		var r inboxRecord
		if err := unmarshal(item, &r); err != nil {
			return nil, fmt.Errorf("read the inbox of run %s: %w", runID, err)
		}
		msgs = append(msgs, InboxMessage{Seq: r.Seq, Text: r.Text, At: r.At})
	}
	return msgs, nil
}
