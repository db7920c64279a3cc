package store

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// PoolState is the state of a pooled sandbox's record.
type PoolState string

// The pool states. An idle sandbox waits for a run; a claimed one serves
// exactly one run (and its children) and never goes back to idle.
const (
	PoolIdle    PoolState = "idle"
	PoolClaimed PoolState = "claimed"
)

// ClaimedTTL is how long a claimed sandbox's record lives (its expiresAt)
// after the claim: longer than any run, so that TTL only removes records a
// crashed runner left behind.
const ClaimedTTL = 24 * time.Hour

// DefaultIdleTTL is the expiresAt given to an idle record whose ExpiresAt
// is zero, counted from its Started.
const DefaultIdleTTL = time.Hour

// PoolSandbox is the record of a sandbox of the warm pool, idle or claimed.
// It holds no token: Nonce is what the launcher that started the sandbox
// derives the token from, with a key the table never sees (launch.Warm),
// so that a reader of the table cannot call a sandbox's tools. The pool's
// items are under the partition key prefix PoolKeyPrefix, which the stack
// denies every role but the runner's.
type PoolSandbox struct {
	ID      string // task ARN on Fargate, "local-<pid>" locally
	Size    string // the sandbox size
	URL     string // where its sandboxd answers
	Nonce   string // names its token; not secret
	Started time.Time
	State   PoolState
	// ClaimedBy is the run the sandbox serves, empty while idle.
	ClaimedBy string
	ClaimedAt time.Time
	// ExpiresAt is when DynamoDB's TTL may delete the record, and when an
	// idle one stops being claimable (its sandboxd has stopped itself).
	ExpiresAt time.Time
}

type poolRecord struct {
	PK        string     `dynamodbav:"pk"`
	SK        string     `dynamodbav:"sk"`
	Kind      string     `dynamodbav:"kind"`
	ID        string     `dynamodbav:"id"`
	Size      string     `dynamodbav:"size"`
	URL       string     `dynamodbav:"url"`
	Nonce     string     `dynamodbav:"nonce"`
	Started   time.Time  `dynamodbav:"started"`
	State     PoolState  `dynamodbav:"state"`
	ClaimedBy string     `dynamodbav:"claimedBy,omitempty"`
	ClaimedAt *time.Time `dynamodbav:"claimedAt,omitempty"`
	ExpiresAt int64      `dynamodbav:"expiresAt"` // TTL, Unix seconds
}

func (r poolRecord) sandbox() PoolSandbox {
	ps := PoolSandbox{ID: r.ID, Size: r.Size, URL: r.URL, Nonce: r.Nonce, Started: r.Started, State: r.State,
		ClaimedBy: r.ClaimedBy, ExpiresAt: time.Unix(r.ExpiresAt, 0).UTC()}
	if r.ClaimedAt != nil {
		ps.ClaimedAt = *r.ClaimedAt
	}
	return ps
}

// PoolKeyPrefix begins the partition key of every item of the warm pool,
// and of no other item: the stack denies the functions other than the
// runner every request whose partition key (dynamodb:LeadingKeys) begins
// with it.
const PoolKeyPrefix = prefixPool

const (
	prefixPool    = "POOL#"
	prefixSandbox = "SBX#"
)

func poolKey(size, id string) map[string]types.AttributeValue {
	return key(prefixPool+size, prefixSandbox+id)
}

// PutIdleSandbox records a started sandbox as idle, ready to be claimed.
// Its ExpiresAt, when zero, is Started + DefaultIdleTTL; it should be when
// the sandbox stops itself for idleness. A record with the same size and id
// is never overwritten (condition attribute_not_exists(pk)).
func (s *Store) PutIdleSandbox(ctx context.Context, ps PoolSandbox) error {
	ps.State, ps.ClaimedBy, ps.ClaimedAt = PoolIdle, "", time.Time{}
	if ps.ExpiresAt.IsZero() {
		ps.ExpiresAt = ps.Started.Add(DefaultIdleTTL)
	}
	if err := s.putPool(ctx, ps); err != nil {
		return fmt.Errorf("put idle sandbox %s: %w", ps.ID, err)
	}
	return nil
}

// PutClaimedSandbox records a sandbox started for run runID (a cold start)
// as claimed by it, so that the run finds it again from another invocation
// (ClaimedSandbox). It expires ClaimedTTL from now.
func (s *Store) PutClaimedSandbox(ctx context.Context, ps PoolSandbox, runID string) error {
	now := s.now().UTC()
	ps.State, ps.ClaimedBy, ps.ClaimedAt, ps.ExpiresAt = PoolClaimed, runID, now, now.Add(ClaimedTTL)
	if err := s.putPool(ctx, ps); err != nil {
		return fmt.Errorf("put sandbox %s of run %s: %w", ps.ID, runID, err)
	}
	return nil
}

func (s *Store) putPool(ctx context.Context, ps PoolSandbox) error {
	if ps.ID == "" || ps.Size == "" {
		return fmt.Errorf("a pooled sandbox needs an id and a size")
	}
	rec := poolRecord{PK: prefixPool + ps.Size, SK: prefixSandbox + ps.ID, Kind: "sandbox", ID: ps.ID, Size: ps.Size,
		URL: ps.URL, Nonce: ps.Nonce, Started: ps.Started.UTC(), State: ps.State, ClaimedBy: ps.ClaimedBy,
		ExpiresAt: ps.ExpiresAt.Unix()}
	if !ps.ClaimedAt.IsZero() {
		t := ps.ClaimedAt.UTC()
		rec.ClaimedAt = &t
	}
	item, err := marshal(rec)
	if err != nil {
		return err
	}
	e := newExpr()
	_, err = s.db.PutItem(ctx, &dynamodb.PutItemInput{TableName: &s.table, Item: item,
		ConditionExpression:                 aws.String("attribute_not_exists(" + e.n(AttrPK) + ")"),
		ExpressionAttributeNames:            e.nameMap(),
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld})
	if old, ok := conditionFailed(err); ok {
		if landed(old, item) {
			return nil
		}
		return fmt.Errorf("sandbox %s is already recorded", ps.ID)
	}
	return err
}

// ClaimIdleSandbox claims an idle sandbox of size for run runID and
// returns it claimed; ok is false when there is none to claim. It reads
// the idle records of the size (oldest first) and claims one with a single
// conditional write, state = idle AND expiresAt > now → state = claimed,
// claimedBy = runID; a record another run claimed first is skipped for
// the next. Whatever races, in one process or many, a sandbox is claimed
// by one run only.
func (s *Store) ClaimIdleSandbox(ctx context.Context, size, runID string) (PoolSandbox, bool, error) {
	ps, ok, err := s.claimIdle(ctx, size, runID)
	if err != nil {
		return PoolSandbox{}, false, fmt.Errorf("claim idle sandbox of size %s for run %s: %w", size, runID, err)
	}
	return ps, ok, nil
}

func (s *Store) claimIdle(ctx context.Context, size, runID string) (PoolSandbox, bool, error) {
	if runID == "" {
		return PoolSandbox{}, false, fmt.Errorf("no run id")
	}
	idle, err := s.queryPool(ctx, size, true)
	if err != nil {
		return PoolSandbox{}, false, err
	}
	for _, c := range idle {
		now := s.now().UTC()
		e := newExpr()
		in := &dynamodb.UpdateItemInput{
			TableName: &s.table,
			Key:       poolKey(size, c.ID),
			UpdateExpression: aws.String("SET " + e.n("state") + " = " + e.s(string(PoolClaimed)) +
				", " + e.n("claimedBy") + " = " + e.s(runID) + ", " + e.n("claimedAt") + " = " + e.t(now) +
				", " + e.n(AttrTTL) + " = " + e.i(now.Add(ClaimedTTL).Unix())),
			ConditionExpression: aws.String("attribute_exists(" + e.n(AttrPK) + ") AND " + e.n("state") + " = " + e.s(string(PoolIdle)) +
				" AND " + e.n(AttrTTL) + " > " + e.i(now.Unix())),
			ExpressionAttributeNames:  e.nameMap(),
			ExpressionAttributeValues: e.valueMap(),
			ReturnValues:              types.ReturnValueAllNew,
		}
		out, err := s.db.UpdateItem(ctx, in)
		if _, lost := conditionFailed(err); lost {
			continue // another run claimed it (or it was dropped): take the next
		}
		if err != nil {
			return PoolSandbox{}, false, err
		}
		var r poolRecord
		if err := unmarshal(out.Attributes, &r); err != nil {
			return PoolSandbox{}, false, err
		}
		return r.sandbox(), true, nil
	}
	return PoolSandbox{}, false, nil
}

// ClaimedSandbox returns the sandbox of size that run runID claimed (or
// was started for), if any: how a re-invoked runner finds its sandbox.
func (s *Store) ClaimedSandbox(ctx context.Context, size, runID string) (PoolSandbox, bool, error) {
	all, err := s.queryPool(ctx, size, false)
	if err != nil {
		return PoolSandbox{}, false, fmt.Errorf("find sandbox of run %s: %w", runID, err)
	}
	for _, ps := range all {
		if ps.State == PoolClaimed && ps.ClaimedBy == runID {
			return ps, true, nil
		}
	}
	return PoolSandbox{}, false, nil
}

// DropIdleSandbox deletes the record of sandbox id if it is still idle and
// reports whether it did; a sandbox a run claimed meanwhile is left to it.
// Stopping the sandbox is the caller's, after a drop.
func (s *Store) DropIdleSandbox(ctx context.Context, size, id string) (bool, error) {
	w := newWrite()
	dropped, err := s.deletePool(ctx, size, id, w.is("state", w.s(string(PoolIdle))))
	if err != nil {
		return false, fmt.Errorf("drop idle sandbox %s: %w", id, err)
	}
	return dropped, nil
}

// DropClaimedSandbox deletes the record of sandbox id if run runID claimed
// it, and reports whether it did. Dropping a record that is gone is not an
// error.
func (s *Store) DropClaimedSandbox(ctx context.Context, size, id, runID string) (bool, error) {
	w := newWrite()
	dropped, err := s.deletePool(ctx, size, id, w.is("claimedBy", w.s(runID)))
	if err != nil {
		return false, fmt.Errorf("drop sandbox %s of run %s: %w", id, runID, err)
	}
	return dropped, nil
}

// deleter is the optional DeleteItem of the DynamoDB client (*dynamodb.Client
// has it); without it a delete is a one-item transaction.
type deleter interface {
	DeleteItem(context.Context, *dynamodb.DeleteItemInput, ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error)
}

// errNotDeleted is the failure of a pool delete's condition.
var errNotDeleted = errors.New("pool record not deleted")

// deletePool deletes the record of sandbox id if w's condition holds, and
// reports whether it did.
func (s *Store) deletePool(ctx context.Context, size, id string, w *write) (bool, error) {
	k := poolKey(size, id)
	var err error
	if d, ok := s.db.(deleter); ok {
		_, err = d.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: &s.table, Key: k,
			ConditionExpression:       w.condition(),
			ExpressionAttributeNames:  w.nameMap(),
			ExpressionAttributeValues: w.valueMap()})
		if _, failed := conditionFailed(err); failed {
			return false, nil
		}
	} else {
		t := s.newTxn()
		t.delete("pool item", k, w, failWith(errNotDeleted))
		if err = s.commit(ctx, t); errors.Is(err, errNotDeleted) {
			return false, nil
		}
	}
	return err == nil, err
}

// CountIdle returns how many claimable idle sandboxes of size are recorded.
func (s *Store) CountIdle(ctx context.Context, size string) (int, error) {
	idle, err := s.queryPool(ctx, size, true)
	if err != nil {
		return 0, fmt.Errorf("count idle sandboxes of size %s: %w", size, err)
	}
	return len(idle), nil
}

// ListPool returns every record of size, idle (expired ones included) and
// claimed, oldest first: what a sweep goes through.
func (s *Store) ListPool(ctx context.Context, size string) ([]PoolSandbox, error) {
	all, err := s.queryPool(ctx, size, false)
	if err != nil {
		return nil, fmt.Errorf("list sandboxes of size %s: %w", size, err)
	}
	return all, nil
}

// queryPool reads the records of size, oldest first; idleOnly keeps the
// claimable idle ones (state = idle AND expiresAt > now).
func (s *Store) queryPool(ctx context.Context, size string, idleOnly bool) ([]PoolSandbox, error) {
	var out []PoolSandbox
	var start map[string]types.AttributeValue
	for {
		e := newExpr()
		in := &dynamodb.QueryInput{
			TableName: &s.table,
			KeyConditionExpression: aws.String(e.n(AttrPK) + " = " + e.s(prefixPool+size) +
				" AND begins_with(" + e.n(AttrSK) + ", " + e.s(prefixSandbox) + ")"),
			ExclusiveStartKey: start,
			ConsistentRead:    aws.Bool(true),
		}
		if idleOnly {
			in.FilterExpression = aws.String(e.n("state") + " = " + e.s(string(PoolIdle)) +
				" AND " + e.n(AttrTTL) + " > " + e.i(s.now().Unix()))
		}
		in.ExpressionAttributeNames, in.ExpressionAttributeValues = e.nameMap(), e.valueMap()
		page, err := s.db.Query(ctx, in)
		if err != nil {
			return nil, err
		}
		for _, item := range page.Items {
			var r poolRecord
			if err := unmarshal(item, &r); err != nil {
				return nil, err
			}
			out = append(out, r.sandbox())
		}
		if start = page.LastEvaluatedKey; len(start) == 0 {
			break
		}
	}
	slices.SortStableFunc(out, func(a, b PoolSandbox) int { return a.Started.Compare(b.Started) })
	return out, nil
}
