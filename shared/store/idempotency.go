package store

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/agentsfleet/agentsfleet/shared/fault"
)

// DefaultIdempotencyTTL is how long a claimed idempotency key lives when the
// caller does not say: longer than Slack's and webhook senders' retries, and
// the usual day for API Idempotency-Keys.
const DefaultIdempotencyTTL = 24 * time.Hour

// maxIdempotencyKey bounds a key: Slack event ids and delivery ids are short,
// and a partition key is at most 2048 bytes.
const maxIdempotencyKey = 255

type idemRecord struct {
	PK        string    `dynamodbav:"pk"`
	SK        string    `dynamodbav:"sk"`
	Kind      string    `dynamodbav:"kind"`
	Scope     string    `dynamodbav:"scope"`
	Key       string    `dynamodbav:"key"`
	RunID     string    `dynamodbav:"runId"`
	ExpiresAt int64     `dynamodbav:"expiresAt"` // TTL: Unix seconds
	CreatedAt time.Time `dynamodbav:"createdAt"`
}

func idemKey(scope, k string) map[string]types.AttributeValue {
	return key(prefixIdem+scope+"#"+k, skIdem)
}

func checkIdempotencyKey(scope, k string) error {
	if scope == "" || strings.ContainsRune(scope, '#') || len(scope) > 128 {
		return fault.New(fault.RequestInvalid, "idempotency scope %q: want 1 to 128 characters without '#'", scope)
	}
	if k == "" || len(k) > maxIdempotencyKey {
		return fault.New(fault.RequestInvalid, "an idempotency key has 1 to %d bytes", maxIdempotencyKey)
	}
	return nil
}

// idempotencyClaim is the item that claims a key for runID and the
// condition of its put: the key is free or has expired. DynamoDB deletes
// expired items only eventually (TTL), so the condition does not rely on it.
func (s *Store) idempotencyClaim(k IdempotencyKey, runID string) (map[string]types.AttributeValue, *write, error) {
	ttl := k.TTL
	if ttl <= 0 {
		ttl = DefaultIdempotencyTTL
	}
	now := s.now().UTC()
	rec := idemRecord{PK: prefixIdem + k.Scope + "#" + k.Key, SK: skIdem, Kind: "idempotency", Scope: k.Scope, Key: k.Key,
		RunID: runID, ExpiresAt: now.Add(ttl).Unix(), CreatedAt: now}
	item, err := marshal(rec)
	if err != nil {
		return nil, nil, err
	}
	w := newWrite()
	return item, w.either("attribute_not_exists("+w.n(AttrPK)+")", w.n(AttrTTL)+" <= "+w.i(now.Unix())), nil
}

// idempotentRun returns the run id a live claim of k names, from old (the
// item a failed condition sent back) or a read. ok is false when k is free.
func (s *Store) idempotentRun(ctx context.Context, k IdempotencyKey, old map[string]types.AttributeValue) (runID string, ok bool, err error) {
	item, err := s.current(ctx, idemKey(k.Scope, k.Key), old)
	if err != nil || item == nil {
		return "", false, err
	}
	var rec idemRecord
	if err := unmarshal(item, &rec); err != nil {
		return "", false, err
	}
	if rec.ExpiresAt <= s.now().Unix() {
		return "", false, nil
	}
	return rec.RunID, true, nil
}

// ClaimIdempotencyKey claims key within scope for runID, for ttl (0 means
// DefaultIdempotencyTTL). It returns claimed true when this call took the
// key, or claimed false and the run id of the live claim that holds it. A
// claim is one conditional write, so of concurrent claims exactly one wins.
// Prefer CreateRun with NewRun.Idempotency, which claims the key and writes
// the run in one transaction; with ClaimIdempotencyKey the caller creates
// the run (NewRun.ID = runID) itself, and a crash in between leaves a claim
// naming a run that does not exist until the key expires.
func (s *Store) ClaimIdempotencyKey(ctx context.Context, scope, key, runID string, ttl time.Duration) (existingRunID string, claimed bool, err error) {
	if err := checkIdempotencyKey(scope, key); err != nil {
		return "", false, fmt.Errorf("claim idempotency key: %w", err)
	}
	k := IdempotencyKey{Scope: scope, Key: key, TTL: ttl}
	err = s.retry(ctx, func() error {
		item, w, err := s.idempotencyClaim(k, runID)
		if err != nil {
			return err
		}
		_, err = s.db.PutItem(ctx, &dynamodb.PutItemInput{
			TableName: &s.table, Item: item, ConditionExpression: w.condition(),
			ExpressionAttributeNames: w.nameMap(), ExpressionAttributeValues: w.valueMap(),
			ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
		})
		if old, failed := conditionFailed(err); failed && landed(old, item) {
			claimed = true
			return nil
		} else if failed {
			id, ok, err := s.idempotentRun(ctx, k, old)
			if err == nil && !ok {
				return errRetry // it expired between the write and the read
			}
			existingRunID = id
			return err
		}
		claimed = err == nil
		return err
	})
	if err != nil {
		return "", false, fmt.Errorf("claim idempotency key %s/%s: %w", scope, key, err)
	}
	if claimed {
		return "", true, nil
	}
	return existingRunID, false, nil
}
