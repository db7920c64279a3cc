package store

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/agentsfleet/agentsfleet/shared/fault"
	"github.com/agentsfleet/agentsfleet/shared/limit"
)

// MaxMessageLines is how many message lines a run may post.
const MaxMessageLines = limit.MessageLines

// AddMessageLine counts one more message line for the run and returns its
// number (1 to MaxMessageLines). The count is one conditional write, so
// however many callers race, at most MaxMessageLines succeed; the next fails
// with fault.RunMessageCap. A run without a Slack thread fails with
// fault.RunNoThread, an unknown run with fault.RunNotFound. The line counts
// when it is reserved here, before posting: a line Slack refuses still
// counts, as the specification's "posts at most 8 lines" is about attempts
// the fleet makes.
func (s *Store) AddMessageLine(ctx context.Context, runID string) (int, error) {
	var n int
	err := s.retry(ctx, func() error {
		e := newExpr()
		lines := e.n("msgLines")
		out, err := s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
			TableName:        &s.table,
			Key:              runKey(runID),
			UpdateExpression: aws.String("SET " + lines + " = " + lines + " + " + e.i(1)),
			ConditionExpression: aws.String("attribute_exists(" + e.n(AttrPK) + ") AND attribute_exists(" + e.n("threadTs") + ") AND " +
				lines + " < " + e.i(MaxMessageLines)),
			ExpressionAttributeNames:            e.nameMap(),
			ExpressionAttributeValues:           e.valueMap(),
			ReturnValues:                        types.ReturnValueAllNew,
			ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
		})
		if old, ok := conditionFailed(err); ok {
			cur, err := s.runFrom(ctx, runID, old)
			switch {
			case err != nil:
				return err
			case cur.ThreadTS == "":
				return fault.New(fault.RunNoThread, "run %s came from %s and has no Slack thread", runID, cur.Source)
			case cur.MsgLines >= MaxMessageLines:
				return fault.New(fault.RunMessageCap, "run %s has posted %d lines", runID, cur.MsgLines)
			}
			return errRetry
		}
		if err != nil {
			return err
		}
		var r runRecord
		if err := unmarshal(out.Attributes, &r); err != nil {
			return err
		}
		n = r.MsgLines
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("add message line to run %s: %w", runID, err)
	}
	return n, nil
}
