package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/agentsfleet/agentsfleet/shared/awstest"
	"github.com/agentsfleet/agentsfleet/shared/scope"
	"github.com/agentsfleet/agentsfleet/shared/store"
)

// lostAnswers is a DynamoDB client whose every PutItem lands and then has
// its answer lost: the write is sent once more, as the SDK sends it again,
// and the second attempt's answer is what the caller gets.
type lostAnswers struct {
	*dynamodb.Client
}

func (l lostAnswers) PutItem(ctx context.Context, in *dynamodb.PutItemInput, o ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	if _, err := l.Client.PutItem(ctx, in, o...); err != nil {
		return nil, err
	}
	return l.Client.PutItem(ctx, in, o...)
}

// A create whose first attempt landed, its answer lost, and whose retry
// then failed its condition on the item the first attempt wrote, has
// succeeded: the key, the pool record and the idempotency claim are there
// and the caller is told so.
func TestRetriedCreatesSucceed(t *testing.T) {
	t.Parallel()
	db := dynamodb.NewFromConfig(awstest.Config(t))
	table := awstest.UniqueName(t, "lost")
	if err := store.CreateTable(ctx, db, table); err != nil {
		t.Fatal(err)
	}
	st := store.New(lostAnswers{db}, table)

	k, secret, err := st.CreateKey(ctx, "ci", scope.Names())
	if err != nil {
		t.Fatalf("CreateKey: %v", err)
	}
	if got, err := st.Authenticate(ctx, secret); err != nil || got.ID != k.ID {
		t.Fatalf("Authenticate = %+v, %v; want key %s", got, err, k.ID)
	}

	if err := st.PutIdleSandbox(ctx, store.PoolSandbox{ID: "sbx-lost", Size: "small", URL: "http://127.0.0.1:1",
		Nonce: "nonce-0123456789abcdef", Started: time.Now()}); err != nil {
		t.Fatalf("PutIdleSandbox: %v", err)
	}
	if n, err := st.CountIdle(ctx, "small"); err != nil || n != 1 {
		t.Fatalf("CountIdle = %d, %v; want 1", n, err)
	}

	existing, claimed, err := st.ClaimIdempotencyKey(ctx, "api", "req-1", "run_1", time.Hour)
	if err != nil || !claimed || existing != "" {
		t.Fatalf("ClaimIdempotencyKey = %q, %v, %v; want it claimed", existing, claimed, err)
	}
	// A second caller with the same key still finds it taken by run_1.
	if existing, claimed, err := st.ClaimIdempotencyKey(ctx, "api", "req-1", "run_2", time.Hour); err != nil || claimed || existing != "run_1" {
		t.Fatalf("a second claim = %q, %v, %v; want run_1's", existing, claimed, err)
	}
}
