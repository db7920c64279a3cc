package store

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/agentsfleet/agentsfleet/shared/fault"
	"github.com/agentsfleet/agentsfleet/shared/scope"
)

// An API key, as its holder sees it, is
//
//	afk_<key id>_<secret>
//
// where the key id is "key_" and 26 Crockford base32 characters (like run
// ids: time first, so keys list in creation order) and the secret is 32
// random bytes from crypto/rand in unpadded base64url (43 characters, which
// may include '-' and '_'). A key is always 78 characters; it is parsed by
// position, not by splitting on '_'. The key id is not secret: lists show
// it, and it names the key to revoke.
//
// The Store keeps only the SHA-256 of the 32 secret bytes. A slow password
// hash (bcrypt, scrypt, argon2) exists to make guessing a low-entropy
// secret expensive; 256 random bits cannot be guessed, so one SHA-256 is
// enough and keeps authentication cheap on every request. The hash is
// compared in constant time.
const (
	keyPrefix    = "afk_"
	keyIDPrefix  = "key_"
	keyIDLen     = len(keyIDPrefix) + 26
	keySecretLen = 43 // base64url, unpadded, of 32 bytes
	keyLen       = len(keyPrefix) + keyIDLen + 1 + keySecretLen
)

// keyLastUsedEvery is how stale Key.LastUsedAt may be: Authenticate writes
// it at most once in this long per key, not on every request.
const keyLastUsedEvery = time.Hour

// Key is an API key's record. It never holds the secret or its hash.
type Key struct {
	ID     string
	Name   string
	Scopes []string // sorted, without repeats
	// CreatedAt is when CreateKey made the key.
	CreatedAt time.Time
	// LastUsedAt is when Authenticate last accepted the key, to within an
	// hour (it is written at most once an hour); zero if never.
	LastUsedAt time.Time
	// Revoked keys never authenticate again; RevokedAt is when.
	Revoked   bool
	RevokedAt time.Time
	// Fleets are the fleets the key serves, sorted, without repeats; empty
	// means every fleet of the deployment (a deployment-wide key, as every
	// key made before keys named fleets is). The API checks them on every
	// route (Serves); the Store only keeps them.
	Fleets []string
}

// MaxKeyFleets is the most fleets a key may name: a condition of DynamoDB
// takes at most 100 values in one IN, and PutSlackRoute checks a key's
// fleets in one.
const MaxKeyFleets = 100

// Has reports whether the key carries scope s (exactly: no scope implies
// another).
func (k Key) Has(s string) bool { return slices.Contains(k.Scopes, s) }

// AllFleets reports whether the key serves every fleet (names none).
func (k Key) AllFleets() bool { return len(k.Fleets) == 0 }

// Serves reports whether the key may act on fleet: it names it, or names
// no fleet at all.
func (k Key) Serves(fleet string) bool { return k.AllFleets() || slices.Contains(k.Fleets, fleet) }

// Covers reports whether every fleet of a key naming fleets (empty: every
// fleet) is one k serves: a key that serves all covers every list, a key
// limited to some fleets covers only non-empty lists of them.
func (k Key) Covers(fleets []string) bool {
	if k.AllFleets() {
		return true
	}
	if len(fleets) == 0 {
		return false
	}
	for _, f := range fleets {
		if !k.Serves(f) {
			return false
		}
	}
	return true
}

type keyRecord struct {
	PK        string    `dynamodbav:"pk"`
	SK        string    `dynamodbav:"sk"`
	Kind      string    `dynamodbav:"kind"`
	ID        string    `dynamodbav:"id"`
	Name      string    `dynamodbav:"name"`
	Scopes    []string  `dynamodbav:"scopes"`
	Hash      []byte    `dynamodbav:"hash"` // SHA-256 of the secret bytes
	CreatedAt time.Time `dynamodbav:"createdAt"`
	LastUsed  int64     `dynamodbav:"lastUsedAt,omitempty"` // Unix seconds, so that conditions compare numbers
	Revoked   bool      `dynamodbav:"revoked"`
	RevokedAt int64     `dynamodbav:"revokedAt,omitempty"` // Unix seconds
	Fleets    []string  `dynamodbav:"fleets,omitempty"`    // absent: every fleet
}

func (r keyRecord) key() Key {
	k := Key{ID: r.ID, Name: r.Name, Scopes: r.Scopes, CreatedAt: r.CreatedAt, Revoked: r.Revoked, Fleets: r.Fleets}
	if r.LastUsed > 0 {
		k.LastUsedAt = time.Unix(r.LastUsed, 0).UTC()
	}
	if r.RevokedAt > 0 {
		k.RevokedAt = time.Unix(r.RevokedAt, 0).UTC()
	}
	return k
}

// keyAttrs are the attributes ListKeys reads: all but the hash.
var keyAttrs = []string{"id", "name", "scopes", "createdAt", "lastUsedAt", "revoked", "revokedAt", "fleets"}

func apiKeyKey(id string) map[string]types.AttributeValue { return key(pkKeys, prefixKey+id) }

var secretEncoding = base64.RawURLEncoding.Strict()

// parseKey splits an API key into its id and secret bytes; ok is false for
// anything that is not exactly the format above.
func parseKey(k string) (id string, secret []byte, ok bool) {
	if len(k) != keyLen || !strings.HasPrefix(k, keyPrefix) {
		return "", nil, false
	}
	id = k[len(keyPrefix) : len(keyPrefix)+keyIDLen]
	if !validKeyID(id) || k[len(keyPrefix)+keyIDLen] != '_' {
		return "", nil, false
	}
	secret, err := secretEncoding.DecodeString(k[len(keyPrefix)+keyIDLen+1:])
	if err != nil || len(secret) != 32 {
		return "", nil, false
	}
	return id, secret, true
}

func validKeyID(id string) bool {
	if len(id) != keyIDLen || !strings.HasPrefix(id, keyIDPrefix) {
		return false
	}
	for _, c := range id[len(keyIDPrefix):] {
		if !strings.ContainsRune(crockford, c) {
			return false
		}
	}
	return true
}

func checkKeyName(name string) error {
	if name == "" || len(name) > 128 || strings.TrimSpace(name) != name ||
		strings.ContainsFunc(name, func(r rune) bool { return !unicode.IsPrint(r) }) {
		return fault.New(fault.RequestInvalid, "key name %q: want 1 to 128 printable characters, not starting or ending with a space", name)
	}
	return nil
}

// CreateKey creates an API key called name carrying scopes and returns it
// with its secret form (the whole "afk_…" key), which is shown once: the
// Store keeps only a hash and cannot show it again. Every scope must be one
// of package scope's (fault.RequestInvalid naming the unknown ones and
// listing the valid ones otherwise), and a key needs at least one. Names
// need not be unique; the key id is.
//
// fleets are the fleets the key serves (Key.Fleets): none makes a
// deployment-wide key. Each must be a valid fleet name, at most
// MaxKeyFleets of them (fault.RequestInvalid otherwise); they need not
// exist yet, so that a team's key can create the team's fleets.
func (s *Store) CreateKey(ctx context.Context, name string, scopes []string, fleets ...string) (Key, string, error) {
	if err := checkKeyName(name); err != nil {
		return Key{}, "", fmt.Errorf("create key: %w", err)
	}
	if len(scopes) == 0 {
		return Key{}, "", fmt.Errorf("create key %s: %w", name,
			fault.New(fault.RequestInvalid, "a key needs at least one scope; valid scopes are %s", strings.Join(scope.Names(), ", ")))
	}
	if err := scope.Check(scopes); err != nil {
		return Key{}, "", fmt.Errorf("create key %s: %w", name, err)
	}
	sorted := slices.Clone(scopes)
	slices.Sort(sorted)
	sorted = slices.Compact(sorted)
	var served []string
	if len(fleets) > 0 {
		served = slices.Clone(fleets)
		slices.Sort(served)
		served = slices.Compact(served)
	}
	if len(served) > MaxKeyFleets {
		return Key{}, "", fmt.Errorf("create key %s: %w", name,
			fault.New(fault.RequestInvalid, "a key may name at most %d fleets, not %d", MaxKeyFleets, len(served)))
	}
	for _, f := range served {
		if err := checkName("fleet name", f); err != nil {
			return Key{}, "", fmt.Errorf("create key %s: %w", name, err)
		}
	}

	now := s.now().UTC()
	var raw [32]byte
	_, _ = rand.Read(raw[:]) // never fails (crypto/rand, Go 1.24+)
	sum := sha256.Sum256(raw[:])
	id := newID(keyIDPrefix, now)
	rec := keyRecord{PK: pkKeys, SK: prefixKey + id, Kind: "key", ID: id, Name: name, Scopes: sorted,
		Hash: sum[:], CreatedAt: now, Fleets: served}
	item, err := marshal(rec)
	if err != nil {
		return Key{}, "", fmt.Errorf("create key %s: %w", name, err)
	}
	e := newExpr()
	_, err = s.db.PutItem(ctx, &dynamodb.PutItemInput{
		TableName: &s.table, Item: item,
		// 80 random bits make a clash all but impossible; the condition
		// makes it an error instead of an overwrite.
		ConditionExpression:                 aws.String("attribute_not_exists(" + e.n(AttrPK) + ")"),
		ExpressionAttributeNames:            e.nameMap(),
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	})
	if old, failed := conditionFailed(err); failed && landed(old, item) {
		err = nil
	}
	if err != nil {
		return Key{}, "", fmt.Errorf("create key %s: %w", name, err)
	}
	return rec.key(), keyPrefix + id + "_" + secretEncoding.EncodeToString(raw[:]), nil
}

// Authenticate returns the key whose secret form is k. A key that is
// malformed, unknown, has the wrong secret or is revoked fails with
// fault.KeyUnauthorized, and the error does not say which. Other errors
// are DynamoDB's. The read is consistent, so a revocation holds from the
// moment RevokeKey returns.
//
// On success it records LastUsedAt when the recorded time is more than an
// hour old, with one conditional update; a failure of that update does not
// fail the authentication.
func (s *Store) Authenticate(ctx context.Context, k string) (Key, error) {
	unauthorized := fmt.Errorf("authenticate: %w", fault.KeyUnauthorized)
	id, secret, ok := parseKey(k)
	if !ok {
		return Key{}, unauthorized
	}
	var rec keyRecord
	found, err := s.getRecord(ctx, apiKeyKey(id), &rec)
	if err != nil {
		return Key{}, fmt.Errorf("authenticate key %s: %w", id, err)
	}
	sum := sha256.Sum256(secret)
	if !found || subtle.ConstantTimeCompare(sum[:], rec.Hash) != 1 || rec.Revoked {
		return Key{}, unauthorized
	}
	now := s.now()
	if cutoff := now.Add(-keyLastUsedEvery).Unix(); rec.LastUsed <= cutoff {
		e := newExpr()
		_, err := s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
			TableName:        &s.table,
			Key:              apiKeyKey(id),
			UpdateExpression: aws.String("SET " + e.n("lastUsedAt") + " = " + e.i(now.Unix())),
			// Concurrent requests write it once; a revoked or deleted key
			// is not touched (an update would recreate a deleted item).
			ConditionExpression: aws.String("attribute_exists(" + e.n(AttrPK) + ") AND " + e.n("revoked") + " = " + e.b(false) +
				" AND (attribute_not_exists(" + e.n("lastUsedAt") + ") OR " + e.n("lastUsedAt") + " <= " + e.i(cutoff) + ")"),
			ExpressionAttributeNames:  e.nameMap(),
			ExpressionAttributeValues: e.valueMap(),
		})
		if err == nil {
			rec.LastUsed = now.Unix()
		}
		// Otherwise the stamp is merely stale: never refuse a valid key for it.
	}
	return rec.key(), nil
}

// GetKey returns the key with id, revoked or not; an unknown id fails with
// fault.KeyNotFound.
func (s *Store) GetKey(ctx context.Context, id string) (Key, error) {
	if !validKeyID(id) {
		return Key{}, fmt.Errorf("get key %q: %w", id, fault.KeyNotFound)
	}
	var rec keyRecord
	found, err := s.getRecord(ctx, apiKeyKey(id), &rec)
	if err != nil {
		return Key{}, fmt.Errorf("get key %s: %w", id, err)
	}
	if !found {
		return Key{}, fmt.Errorf("get key %s: %w", id, fault.KeyNotFound)
	}
	return rec.key(), nil
}

// ListKeys returns every API key, revoked ones included, oldest first. It
// never reads the hashes.
func (s *Store) ListKeys(ctx context.Context) ([]Key, error) {
	var keys []Key
	var start map[string]types.AttributeValue
	for {
		e := newExpr()
		proj := make([]string, len(keyAttrs))
		for i, a := range keyAttrs {
			proj[i] = e.n(a)
		}
		out, err := s.db.Query(ctx, &dynamodb.QueryInput{
			TableName:                 &s.table,
			KeyConditionExpression:    aws.String(e.n(AttrPK) + " = " + e.s(pkKeys) + " AND begins_with(" + e.n(AttrSK) + ", " + e.s(prefixKey) + ")"),
			ProjectionExpression:      aws.String(strings.Join(proj, ", ")),
			ExpressionAttributeNames:  e.nameMap(),
			ExpressionAttributeValues: e.valueMap(),
			ExclusiveStartKey:         start,
			ConsistentRead:            aws.Bool(true),
		})
		if err != nil {
			return nil, fmt.Errorf("list keys: %w", err)
		}
		for _, item := range out.Items {
			var r keyRecord
			if err := unmarshal(item, &r); err != nil {
				return nil, fmt.Errorf("list keys: %w", err)
			}
			keys = append(keys, r.key())
		}
		if len(out.LastEvaluatedKey) == 0 {
			return keys, nil
		}
		start = out.LastEvaluatedKey
	}
}

// RevokeKey revokes the key with id: Authenticate refuses it from the moment
// RevokeKey returns. Revoking a revoked key is no error and keeps the first
// RevokedAt; an unknown id fails with fault.KeyNotFound.
func (s *Store) RevokeKey(ctx context.Context, id string) error {
	if !validKeyID(id) {
		return fmt.Errorf("revoke key %q: %w", id, fault.KeyNotFound)
	}
	e := newExpr()
	_, err := s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: &s.table,
		Key:       apiKeyKey(id),
		UpdateExpression: aws.String("SET " + e.n("revoked") + " = " + e.b(true) + ", " +
			e.n("revokedAt") + " = if_not_exists(" + e.n("revokedAt") + ", " + e.i(s.now().Unix()) + ")"),
		ConditionExpression:       aws.String("attribute_exists(" + e.n(AttrPK) + ")"),
		ExpressionAttributeNames:  e.nameMap(),
		ExpressionAttributeValues: e.valueMap(),
	})
	if _, ok := conditionFailed(err); ok {
		return fmt.Errorf("revoke key %s: %w", id, fault.KeyNotFound)
	}
	if err != nil {
		return fmt.Errorf("revoke key %s: %w", id, err)
	}
	return nil
}
