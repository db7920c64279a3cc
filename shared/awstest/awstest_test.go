package awstest_test

import (
	"context"
	"errors"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"

	"github.com/agentsfleet/agentsfleet/shared/awstest"
)

func TestMain(m *testing.M) { awstest.Main(m) }

func TestEmulatorAnswersOverTheWire(t *testing.T) {
	t.Parallel()
	sm := secretsmanager.NewFromConfig(awstest.Config(t))
	name := awstest.UniqueName(t, "secret")
	value := "hunter2"
	ctx := context.Background()
	if _, err := sm.CreateSecret(ctx, &secretsmanager.CreateSecretInput{Name: &name, SecretString: &value}); err != nil {
		t.Fatalf("CreateSecret: %v", err)
	}
	out, err := sm.GetSecretValue(ctx, &secretsmanager.GetSecretValueInput{SecretId: &name})
	if err != nil {
		t.Fatalf("GetSecretValue: %v", err)
	}
	if got := *out.SecretString; got != value {
		t.Fatalf("secret = %q, want %q", got, value)
	}
}

func TestUniqueNamesDiffer(t *testing.T) {
	t.Parallel()
	a, b := awstest.UniqueName(t, "x"), awstest.UniqueName(t, "x")
	if a == b {
		t.Fatalf("UniqueName returned %q twice", a)
	}
}

// DynamoDB applies a TransactWriteItems once per ClientRequestToken (the
// SDK keeps the token across its retries), so a retry after a lost answer
// succeeds instead of failing the conditions its first attempt made true.
// The emulator must do the same, or such a retry fails a test that AWS
// would pass.
func TestTransactionsAreIdempotentByClientToken(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := dynamodb.NewFromConfig(awstest.Config(t))
	table := awstest.UniqueName(t, "tokens")
	if _, err := db.CreateTable(ctx, &dynamodb.CreateTableInput{
		TableName:            &table,
		BillingMode:          types.BillingModePayPerRequest,
		AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String("PK"), AttributeType: types.ScalarAttributeTypeS}},
		KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String("PK"), KeyType: types.KeyTypeHash}},
	}); err != nil {
		t.Fatal(err)
	}
	create := func(token, pk string) error {
		_, err := db.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{
			ClientRequestToken: aws.String(token),
			TransactItems: []types.TransactWriteItem{{Put: &types.Put{
				TableName:           &table,
				Item:                map[string]types.AttributeValue{"PK": &types.AttributeValueMemberS{Value: pk}},
				ConditionExpression: aws.String("attribute_not_exists(PK)"),
			}}},
		})
		return err
	}
	if err := create("token-1", "a"); err != nil {
		t.Fatalf("first attempt: %v", err)
	}
	if err := create("token-1", "a"); err != nil {
		t.Fatalf("the same transaction with the same token failed: %v", err)
	}
	var mismatch *types.IdempotentParameterMismatchException
	if err := create("token-1", "b"); !errors.As(err, &mismatch) {
		t.Fatalf("the same token with another item: %v, want IdempotentParameterMismatchException", err)
	}
	var canceled *types.TransactionCanceledException
	if err := create("token-2", "a"); !errors.As(err, &canceled) {
		t.Fatalf("the same item with a new token: %v, want its condition to fail", err)
	}
	out, err := db.Scan(ctx, &dynamodb.ScanInput{TableName: &table})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Items) != 1 {
		t.Fatalf("the table holds %d items, want 1", len(out.Items))
	}
}
