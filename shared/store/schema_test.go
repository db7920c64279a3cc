package store_test

import (
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/agentsfleet/agentsfleet/shared/awstest"
	"github.com/agentsfleet/agentsfleet/shared/store"
)

func TestCreateTableIsIdempotentAndEnablesTTL(t *testing.T) {
	t.Parallel()
	db := dynamodb.NewFromConfig(awstest.Config(t))
	name := awstest.UniqueName(t, "tbl")
	for i := range 2 {
		if err := store.CreateTable(ctx, db, name); err != nil {
			t.Fatalf("CreateTable #%d: %v", i+1, err)
		}
	}
	ttl, err := db.DescribeTimeToLive(ctx, &dynamodb.DescribeTimeToLiveInput{TableName: &name})
	if err != nil {
		t.Fatal(err)
	}
	if got := ttl.TimeToLiveDescription; aws.ToString(got.AttributeName) != store.AttrTTL || got.TimeToLiveStatus != types.TimeToLiveStatusEnabled {
		t.Fatalf("TTL = %s %s, want %s ENABLED", aws.ToString(got.AttributeName), got.TimeToLiveStatus, store.AttrTTL)
	}
	out, err := db.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: &name})
	if err != nil {
		t.Fatal(err)
	}
	indexes := map[string]*types.Projection{}
	for _, g := range out.Table.GlobalSecondaryIndexes {
		indexes[aws.ToString(g.IndexName)] = g.Projection
	}
	if len(indexes) != 2 || indexes[store.IndexGSI1] == nil || indexes[store.IndexGSI2] == nil {
		t.Fatalf("indexes = %v, want %s and %s", indexes, store.IndexGSI1, store.IndexGSI2)
	}
	if got := indexes[store.IndexGSI1]; got.ProjectionType != types.ProjectionTypeInclude || len(got.NonKeyAttributes) != len(store.GSI1Attributes) {
		t.Fatalf("%s projection = %s %v, want INCLUDE %v", store.IndexGSI1, got.ProjectionType, got.NonKeyAttributes, store.GSI1Attributes)
	}
	if got := indexes[store.IndexGSI2]; got.ProjectionType != types.ProjectionTypeKeysOnly {
		t.Fatalf("%s projection = %s, want KEYS_ONLY", store.IndexGSI2, got.ProjectionType)
	}
}

func TestCreateTableRefusesAnotherSchema(t *testing.T) {
	t.Parallel()
	db := dynamodb.NewFromConfig(awstest.Config(t))
	name := awstest.UniqueName(t, "tbl")
	_, err := db.CreateTable(ctx, &dynamodb.CreateTableInput{
		TableName:            &name,
		BillingMode:          types.BillingModePayPerRequest,
		AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String("id"), AttributeType: types.ScalarAttributeTypeS}},
		KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String("id"), KeyType: types.KeyTypeHash}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := store.CreateTable(ctx, db, name); err == nil {
		t.Fatal("CreateTable over a table with another key schema = nil, want an error")
	}
}
