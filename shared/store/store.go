package store

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	mrand "math/rand/v2"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/agentsfleet/agentsfleet/shared/fault"
)

// API is the part of the DynamoDB client the Store uses. *dynamodb.Client
// satisfies it; so may a client wrapped for tracing or metrics.
type API interface {
	GetItem(context.Context, *dynamodb.GetItemInput, ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error)
	PutItem(context.Context, *dynamodb.PutItemInput, ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error)
	UpdateItem(context.Context, *dynamodb.UpdateItemInput, ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error)
	Query(context.Context, *dynamodb.QueryInput, ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error)
	TransactWriteItems(context.Context, *dynamodb.TransactWriteItemsInput, ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error)
}

var _ API = (*dynamodb.Client)(nil)

// Store is agentsfleet's state in one DynamoDB table. It is safe for
// concurrent use by many goroutines and many processes: every limit and
// counter is enforced by DynamoDB (a conditional write or a transaction),
// never by state held in the Store. The only state a Store keeps is a cache
// of hints (the last event sequence number seen per run) that saves a read
// when it is right and costs one retry when it is wrong, and the parent of
// each child agent it has committed a step of, which never changes.
type Store struct {
	db    API
	table string
	now   func() time.Time

	hintMu  sync.Mutex
	hints   map[string]int64  // run ID → last event seq this Store saw
	parents map[string]string // run ID + child ID → the child's parent ("" for the run's agent)
}

// Option configures a Store.
type Option func(*Store)

// WithClock makes the Store read time from now instead of time.Now. Lease
// expiry, idempotency-key expiry and timestamps all use it, so tests can move
// time without sleeping.
func WithClock(now func() time.Time) Option {
	return func(s *Store) { s.now = now }
}

// New returns a Store over table. It does not check that the table exists;
// CreateTable makes one for local use.
func New(db API, table string, opts ...Option) *Store {
	s := &Store{db: db, table: table, now: time.Now, hints: map[string]int64{}, parents: map[string]string{}}
	for _, o := range opts {
		o(s)
	}
	return s
}

// Now is the time by the Store's clock (WithClock), for callers that
// stamp what they give it.
func (s *Store) Now() time.Time { return s.now() }

// Table returns the name of the table the Store uses.
func (s *Store) Table() string { return s.table }

// ErrStepCommitted says a checkpoint or step was refused because the run has
// already committed that step or a later one: the step must not be executed
// again. It is an internal signal for the runner, not a product error.
var ErrStepCommitted = errors.New("store: step already committed")

// ErrRunEnded says a run is not in a status that allows the operation (for
// example starting a child of a run that is no longer running).
var ErrRunEnded = errors.New("store: run is not running")

// ErrChildEnded says a child agent has already finished.
var ErrChildEnded = errors.New("store: child has already ended")

// ErrTooLarge says a blob does not fit in one DynamoDB item (see
// MaxBlobBytes); larger bodies belong in S3.
var ErrTooLarge = errors.New("store: blob too large for one item")

// ErrContention says an optimistic write lost to other writers too many times
// in a row. It is transient; the caller may retry.
var ErrContention = errors.New("store: too much contention, try again")

// MaxBlobBytes is the largest Definition, checkpoint, event body, run input or
// child result the Store writes into one item. DynamoDB items are at most
// 400 KB including attribute names; the rest of the item stays well below
// the remaining 10 KB. Bigger bodies are for an S3 offload, not built yet.
const MaxBlobBytes = 390_000

// errRetry asks retry to run the operation again.
var errRetry = errors.New("retry")

const maxAttempts = 100

// retry runs op until it returns something other than errRetry. It backs off
// a little between attempts, with jitter, so that writers racing for the
// same counter spread out.
func (s *Store) retry(ctx context.Context, op func() error) error {
	for attempt := range maxAttempts {
		err := op()
		if !errors.Is(err, errRetry) {
			return err
		}
		d := time.Duration(1<<min(attempt, 4)) * time.Millisecond
		d = d/2 + mrand.N(d)
		t := time.NewTimer(d)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
	}
	return ErrContention
}

// ---- DynamoDB errors ----

// conditionFailed reports whether err is a ConditionalCheckFailedException
// and returns the item DynamoDB sent back with it (nil when the item does not
// exist, or the endpoint does not support ReturnValuesOnConditionCheckFailure).
func conditionFailed(err error) (map[string]types.AttributeValue, bool) {
	var ccf *types.ConditionalCheckFailedException
	if errors.As(err, &ccf) {
		return ccf.Item, true
	}
	return nil, false
}

// landed reports whether a write of item whose condition failed met item
// itself: the SDK sends a write again when its answer was lost, and the
// retry then fails the condition its own first attempt made false. (A
// TransactWriteItems is idempotent by its ClientRequestToken, which the
// SDK keeps across retries; PutItem has no such token.) old is the item
// the failure returned (ReturnValuesOnConditionCheckFailure ALL_OLD). The
// items this is asked of hold a random id or a timestamp, so an equal
// item is this call's own.
func landed(old, item map[string]types.AttributeValue) bool {
	return len(old) > 0 && reflect.DeepEqual(old, item)
}

// canceled returns the cancellation reasons of a TransactionCanceledException.
func canceled(err error) ([]types.CancellationReason, bool) {
	var tce *types.TransactionCanceledException
	if errors.As(err, &tce) {
		return tce.CancellationReasons, true
	}
	return nil, false
}

// conflicted reports whether a transaction was cancelled only because other
// transactions touched the same items (real DynamoDB; it retries cleanly).
func conflicted(reasons []types.CancellationReason) bool {
	conflict := false
	for _, r := range reasons {
		switch aws.ToString(r.Code) {
		case "", "None":
		case "TransactionConflict":
			conflict = true
		default:
			return false
		}
	}
	return conflict
}

// current returns old when DynamoDB sent it with a failed condition,
// otherwise the item as it is now (nil when it does not exist). moto and
// DynamoDB both send the old item; the read covers endpoints that do not.
func (s *Store) current(ctx context.Context, key map[string]types.AttributeValue, old map[string]types.AttributeValue) (map[string]types.AttributeValue, error) {
	if old != nil {
		return old, nil
	}
	return s.getItem(ctx, key)
}

func (s *Store) getItem(ctx context.Context, key map[string]types.AttributeValue) (map[string]types.AttributeValue, error) {
	out, err := s.db.GetItem(ctx, &dynamodb.GetItemInput{
		TableName:      &s.table,
		Key:            key,
		ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		return nil, err
	}
	return out.Item, nil
}

// getRecord reads the item at key into rec; found is false when there is none.
func (s *Store) getRecord(ctx context.Context, key map[string]types.AttributeValue, rec any) (found bool, err error) {
	item, err := s.getItem(ctx, key)
	if err != nil || item == nil {
		return false, err
	}
	return true, unmarshal(item, rec)
}

func unmarshal(item map[string]types.AttributeValue, rec any) error {
	if err := attributevalue.UnmarshalMap(item, rec); err != nil {
		return fmt.Errorf("decode item: %w", err)
	}
	return nil
}

func marshal(rec any) (map[string]types.AttributeValue, error) {
	item, err := attributevalue.MarshalMap(rec)
	if err != nil {
		return nil, fmt.Errorf("encode item: %w", err)
	}
	return item, nil
}

// ---- expressions ----

// expr builds one request's expression attribute names and values. Every
// attribute name goes through a placeholder, so reserved words (status,
// name, source, state, data, …) need no thought.
type expr struct {
	names  map[string]string
	values map[string]types.AttributeValue
}

func newExpr() *expr {
	return &expr{names: map[string]string{}, values: map[string]types.AttributeValue{}}
}

// n returns the placeholder for attribute name attr.
func (e *expr) n(attr string) string {
	p := "#" + attr
	e.names[p] = attr
	return p
}

// v returns a placeholder for value av.
func (e *expr) v(av types.AttributeValue) string {
	p := ":v" + strconv.Itoa(len(e.values))
	e.values[p] = av
	return p
}

func (e *expr) s(v string) string { return e.v(&types.AttributeValueMemberS{Value: v}) }
func (e *expr) i(v int64) string  { return e.v(num(v)) }
func (e *expr) b(v bool) string   { return e.v(&types.AttributeValueMemberBOOL{Value: v}) }
func (e *expr) t(v time.Time) string {
	return e.s(v.UTC().Format(time.RFC3339Nano))
}

// in returns "#attr IN (:a, :b, …)".
func (e *expr) in(attr string, vals ...string) string {
	ps := make([]string, len(vals))
	for i, v := range vals {
		ps[i] = e.s(v)
	}
	return e.n(attr) + " IN (" + strings.Join(ps, ", ") + ")"
}

func (e *expr) nameMap() map[string]string {
	if len(e.names) == 0 {
		return nil
	}
	return e.names
}

func (e *expr) valueMap() map[string]types.AttributeValue {
	if len(e.values) == 0 {
		return nil
	}
	return e.values
}

func num(v int64) types.AttributeValue {
	return &types.AttributeValueMemberN{Value: strconv.FormatInt(v, 10)}
}

func str(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }

// ---- keys ----

func key(pk, sk string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{AttrPK: str(pk), AttrSK: str(sk)}
}

// ---- IDs ----

// crockford is Crockford's base32 in lower case; its characters sort in the
// order of their values, so IDs made of them sort by time.
const crockford = "0123456789abcdefghjkmnpqrstvwxyz"

// newID returns prefix + 10 characters of millisecond time + 16 random
// characters (80 bits), like a ULID: unique, and sorting by creation time.
func newID(prefix string, t time.Time) string {
	var b strings.Builder
	b.Grow(len(prefix) + 26)
	b.WriteString(prefix)
	ms := uint64(max(t.UnixMilli(), 0))
	for i := 9; i >= 0; i-- {
		b.WriteByte(crockford[(ms>>(5*uint(i)))&31])
	}
	var r [16]byte
	_, _ = rand.Read(r[:]) // never fails (crypto/rand, Go 1.24+)
	digits := make([]byte, len(r))
	for i, c := range r {
		digits[i] = crockford[c&31] // 256 is a multiple of 32: uniform
	}
	b.Write(digits)
	return b.String()
}

// ---- paging ----

// encodeCursor turns a query's LastEvaluatedKey into an opaque page cursor.
func encodeCursor(lek map[string]types.AttributeValue) string {
	if len(lek) == 0 {
		return ""
	}
	m := make(map[string]string, len(lek))
	for k, v := range lek {
		if s, ok := v.(*types.AttributeValueMemberS); ok {
			m[k] = s.Value
		}
	}
	b, _ := json.Marshal(m) // a map of strings always encodes
	return base64.RawURLEncoding.EncodeToString(b)
}

// decodeCursor turns a page cursor back into an ExclusiveStartKey. It
// accepts only a cursor naming exactly the attributes in want, whose
// partition attribute (want's first entry) has the value partition, so a
// cursor cannot steer a query outside the partition it pages through.
func decodeCursor(cursor string, partition string, want ...string) (map[string]types.AttributeValue, error) {
	if cursor == "" {
		return nil, nil
	}
	bad := fault.New(fault.RequestInvalid, "the page cursor is not valid")
	b, err := base64.RawURLEncoding.DecodeString(cursor)
	if err != nil {
		return nil, bad
	}
	var m map[string]string
	if err := json.Unmarshal(b, &m); err != nil || len(m) != len(want) {
		return nil, bad
	}
	out := make(map[string]types.AttributeValue, len(m))
	for _, k := range want {
		v, ok := m[k]
		if !ok || v == "" {
			return nil, bad
		}
		out[k] = str(v)
	}
	if m[want[0]] != partition {
		return nil, bad
	}
	return out, nil
}

func pageSize(limit, def, most int) int32 {
	if limit <= 0 {
		return int32(def)
	}
	return int32(min(limit, most))
}
