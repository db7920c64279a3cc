package store

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"strings"
	"time"
	"unicode"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/agentsfleet/agentsfleet/shared/fault"
)

// webhookSecretPrefix starts every webhook secret: "afw_" and 32 random
// bytes in unpadded base64url, 47 characters in all. The HMAC key is the
// whole string, as the sender holds it.
const webhookSecretPrefix = "afw_"

// DefaultDeliveryTTL is how long RecordDelivery remembers a signature when
// the caller does not say. A signature is accepted while its timestamp is
// within 5 minutes of now either way, so for 10 minutes at most; the rest
// covers clock skew between API instances.
const DefaultDeliveryTTL = 15 * time.Minute

// maxSignature bounds what RecordDelivery keys on. A v1 signature is 64
// hex characters; a partition key is at most 2048 bytes.
const maxSignature = 512

type webhookRecord struct {
	PK        string    `dynamodbav:"pk"`
	SK        string    `dynamodbav:"sk"`
	Kind      string    `dynamodbav:"kind"`
	Fleet     string    `dynamodbav:"fleet"`
	Secret    string    `dynamodbav:"secret"`
	CreatedAt time.Time `dynamodbav:"createdAt"`
}

type deliveryRecord struct {
	PK        string    `dynamodbav:"pk"`
	SK        string    `dynamodbav:"sk"`
	Kind      string    `dynamodbav:"kind"`
	Fleet     string    `dynamodbav:"fleet"`
	ExpiresAt int64     `dynamodbav:"expiresAt"` // TTL: Unix seconds
	CreatedAt time.Time `dynamodbav:"createdAt"`
}

func webhookKey(fleet string) map[string]types.AttributeValue {
	return key(prefixFleet+fleet, skWebhook)
}

// RotateWebhookSecret gives the fleet a new webhook secret and returns it;
// it is shown once (the API answers it and never again). The first call
// creates the secret; each later one replaces it, and deliveries signed
// with the old secret fail from then on: there is no overlap period. An
// unknown fleet fails with fault.FleetNotFound.
//
// The secret is kept in the table as it is, because verifying an HMAC needs
// the key itself, not a hash of it: DynamoDB encrypts it at rest, and
// whoever can read the table can sign deliveries for the fleet.
func (s *Store) RotateWebhookSecret(ctx context.Context, fleet string) (string, error) {
	if err := checkName("fleet name", fleet); err != nil {
		return "", fmt.Errorf("rotate webhook secret: %w", err)
	}
	var raw [32]byte
	_, _ = rand.Read(raw[:]) // never fails (crypto/rand, Go 1.24+)
	secret := webhookSecretPrefix + base64.RawURLEncoding.EncodeToString(raw[:])
	rec := webhookRecord{PK: prefixFleet + fleet, SK: skWebhook, Kind: "webhook", Fleet: fleet, Secret: secret, CreatedAt: s.now().UTC()}
	item, err := marshal(rec)
	if err != nil {
		return "", fmt.Errorf("rotate webhook secret of fleet %s: %w", fleet, err)
	}
	e := newExpr()
	err = s.transact(ctx, []types.TransactWriteItem{
		{ConditionCheck: &types.ConditionCheck{TableName: &s.table, Key: fleetKey(fleet),
			ConditionExpression: aws.String("attribute_exists(" + e.n(AttrPK) + ")"), ExpressionAttributeNames: e.nameMap()}},
		{Put: &types.Put{TableName: &s.table, Item: item}},
	})
	if reasons, ok := canceled(err); ok {
		if _, failed := reasonFailed(reasons, 0); failed {
			return "", fmt.Errorf("rotate webhook secret of fleet %s: %w", fleet, fault.FleetNotFound)
		}
	}
	if err != nil {
		return "", fmt.Errorf("rotate webhook secret of fleet %s: %w", fleet, err)
	}
	return secret, nil
}

// WebhookSecret returns the fleet's current webhook secret, for verifying
// deliveries and signing completion callbacks. A fleet without one fails
// with fault.HookNoSecret, and so does a fleet that does not exist, so that
// an unauthenticated sender learns nothing about which fleets exist.
func (s *Store) WebhookSecret(ctx context.Context, fleet string) (string, error) {
	if err := checkName("fleet name", fleet); err != nil {
		return "", fmt.Errorf("get webhook secret: %w", err)
	}
	var rec webhookRecord
	found, err := s.getRecord(ctx, webhookKey(fleet), &rec)
	if err != nil {
		return "", fmt.Errorf("get webhook secret of fleet %s: %w", fleet, err)
	}
	if !found || rec.Secret == "" {
		return "", fmt.Errorf("get webhook secret of fleet %s: %w", fleet, fault.HookNoSecret)
	}
	return rec.Secret, nil
}

// RecordDelivery remembers that a delivery to fleet carried signature, for
// ttl (0 means DefaultDeliveryTTL), and fails with fault.HookReplayed when
// a live record of the same signature exists: of any number of concurrent
// deliveries with one signature, exactly one succeeds. It is one
// conditional put; the item expires through the table's TTL, and an expired
// record counts as absent whether or not DynamoDB has deleted it yet.
//
// Pass the canonical signature (webhook.Verify returns it), not the raw
// header, which a replayer could vary without changing what it proves.
func (s *Store) RecordDelivery(ctx context.Context, fleet, signature string, ttl time.Duration) error {
	if err := checkName("fleet name", fleet); err != nil {
		return fmt.Errorf("record delivery: %w", err)
	}
	if signature == "" || len(signature) > maxSignature ||
		strings.ContainsFunc(signature, func(r rune) bool { return !unicode.IsPrint(r) || unicode.IsSpace(r) }) {
		return fmt.Errorf("record delivery to fleet %s: %w", fleet,
			fault.New(fault.RequestInvalid, "a delivery signature has 1 to %d printable characters without spaces", maxSignature))
	}
	if ttl <= 0 {
		ttl = DefaultDeliveryTTL
	}
	now := s.now().UTC()
	rec := deliveryRecord{PK: prefixDlv + fleet + "#" + signature, SK: skDlv, Kind: "delivery", Fleet: fleet,
		ExpiresAt: now.Add(ttl).Unix(), CreatedAt: now}
	item, err := marshal(rec)
	if err != nil {
		return fmt.Errorf("record delivery to fleet %s: %w", fleet, err)
	}
	e := newExpr()
	_, err = s.db.PutItem(ctx, &dynamodb.PutItemInput{
		TableName: &s.table, Item: item,
		ConditionExpression:       aws.String("attribute_not_exists(" + e.n(AttrPK) + ") OR " + e.n(AttrTTL) + " <= " + e.i(now.Unix())),
		ExpressionAttributeNames:  e.nameMap(),
		ExpressionAttributeValues: e.valueMap(),
	})
	if _, failed := conditionFailed(err); failed {
		return fmt.Errorf("record delivery to fleet %s: %w", fleet, fault.HookReplayed)
	}
	if err != nil {
		return fmt.Errorf("record delivery to fleet %s: %w", fleet, err)
	}
	return nil
}
