package store

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/agentsfleet/agentsfleet/shared/fault"
)

// The run item keeps, for tokens and for tool calls, what was used and what
// is left. Condition expressions cannot add, so the check "used + n ≤ limit"
// is written as "left ≥ n" on the remaining counter, which the same update
// decrements: one conditional write checks and adds atomically. A run
// without a limit starts with a remaining count no run can reach.

func budgetSpent(runID string, r runRecord, b Budget) error {
	if r.TokLeft < b.Tokens {
		return fault.New(fault.RunBudgetSpent, "run %s has %d of %d tokens left and needs %d", runID, r.TokLeft, r.TokLimit, b.Tokens)
	}
	return fault.New(fault.RunBudgetSpent, "run %s has %d of %d tool calls left and needs %d", runID, r.CallLeft, r.CallLimit, b.ToolCalls)
}

// Spend adds tokens and tool calls to the run's spending if that keeps it
// within the run's limits, and returns the spending after. When it would
// exceed either limit nothing is added and it fails with
// fault.RunBudgetSpent. A run's children spend on the run: the budget is
// the run's, shared. Spending exactly up to a limit is allowed.
func (s *Store) Spend(ctx context.Context, runID string, tokens, toolCalls int64) (Budget, error) {
	b := Budget{Tokens: tokens, ToolCalls: toolCalls}
	if tokens < 0 || toolCalls < 0 {
		return Budget{}, fmt.Errorf("spend on run %s: %w", runID, fault.New(fault.RequestInvalid, "spending cannot be negative"))
	}
	var spent Budget
	err := s.retry(ctx, func() error {
		w := newWrite().exists().spend(b)
		out, err := s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
			TableName:                           &s.table,
			Key:                                 runKey(runID),
			UpdateExpression:                    w.update(),
			ConditionExpression:                 w.condition(),
			ExpressionAttributeNames:            w.nameMap(),
			ExpressionAttributeValues:           w.valueMap(),
			ReturnValues:                        types.ReturnValueAllNew,
			ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
		})
		if old, ok := conditionFailed(err); ok {
			cur, err := s.runFrom(ctx, runID, old)
			if err != nil {
				return err
			}
			if cur.TokLeft >= tokens && cur.CallLeft >= toolCalls {
				return errRetry
			}
			return budgetSpent(runID, cur, b)
		}
		if err != nil {
			return err
		}
		var r runRecord
		if err := unmarshal(out.Attributes, &r); err != nil {
			return err
		}
		spent = Budget{Tokens: r.TokUsed, ToolCalls: r.CallUsed}
		return nil
	})
	if err != nil {
		return Budget{}, fmt.Errorf("spend on run %s: %w", runID, err)
	}
	return spent, nil
}
