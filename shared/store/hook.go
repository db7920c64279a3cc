package store

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/agentsfleet/agentsfleet/shared/fault"
)

// webhookSecretPrefix starts every webhook secret: "afw_" and 32 random
// bytes in unpadded base64url, 47 characters in all. The HMAC key is the
// whole string, as the sender holds it.
const webhookSecretPrefix = "afw_"

type webhookRecord struct {
	PK        string    `dynamodbav:"pk"`
	SK        string    `dynamodbav:"sk"`
	Kind      string    `dynamodbav:"kind"`
	Fleet     string    `dynamodbav:"fleet"`
	Secret    string    `dynamodbav:"secret"`
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
	t := s.newTxn()
	t.check("fleet item", fleetKey(fleet), newWrite().exists(), failWith(fault.FleetNotFound))
	t.put("webhook secret", item, nil, nil)
	if err := s.commit(ctx, t); err != nil {
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
