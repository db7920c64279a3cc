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

// The table's key schema, as data, for the CDK stack and the LocalStack init
// hook to build the same table CreateTable builds.
const (
	AttrPK     = "pk"        // partition key (S)
	AttrSK     = "sk"        // sort key (S)
	AttrGSI1PK = "gsi1pk"    // GSI1 partition key (S)
	AttrGSI1SK = "gsi1sk"    // GSI1 sort key (S)
	AttrTTL    = "expiresAt" // TTL attribute: Unix seconds (N)
	IndexGSI1  = "gsi1"      // lists fleets, and runs by fleet newest first
	AttrGSI2PK = "gsi2pk"    // GSI2 partition key (S): set on unfinished runs and children only
	AttrGSI2SK = "gsi2sk"    // GSI2 sort key (N): Unix ms from which nobody executes the item
	IndexGSI2  = "gsi2"      // sparse: the runs and children a sweep may find nobody executing (ListLapsed)
)

// GSI2 projects only the keys (KEYS_ONLY): ListLapsed reads each item it
// finds again, strongly, before it reports it.

// GSI1Attributes are the non-key attributes projected into GSI1 (projection
// INCLUDE). They are what list pages show. Hot counters on the run item
// (events, budget, lease) are deliberately not among them, so that the
// per-step writes never write to the index.
var GSI1Attributes = []string{
	"kind", "name", "paused", "rev", "hash", "schedTotal", "schedFleet", "createdAt", "updatedAt",
	"id", "fleet", "source", "status", "statusAt", "channel", "threadTs", "scheduleId",
}

// PrefixRun and PrefixFleet begin the partition key of every item of a
// run (its record, events, children, checkpoint) and of a fleet (its
// record, revisions, schedules): what an IAM condition on
// dynamodb:LeadingKeys names to give a role one kind alone.
const (
	PrefixRun   = prefixRun
	PrefixFleet = prefixFleet
)

// Item key prefixes. The doc comment of the package has the full table.
const (
	prefixFleet   = "FLEET#"
	prefixRun     = "RUN#"
	prefixRev     = "REV#"
	prefixSched   = "SCHED#"
	prefixEvent   = "EVT#"
	prefixChild   = "CHILD#"
	prefixIdem    = "IDEM#"
	prefixKey     = "KEY#"
	pkKeys        = "KEYS"
	skWebhook     = "WEBHOOK"
	skFleet       = "FLEET"
	skRun         = "RUN"
	skInput       = "INPUT"
	skCheckpoint  = "CKPT"
	prefixTurn    = "TURN#"
	skIdem        = "IDEM"
	gsi1AllFleets = "FLEETS"
	prefixSlack   = "SLACK#"
	prefixThread  = "THREAD#"
	skSlackRoute  = "ROUTE"
	prefixImprove = "IMPROVE#"
	skImprove     = "IMPROVE"
	skImproveLog  = "LOG"
)

// CreateTableInput returns the request that creates the table named name:
// on-demand billing, the key schema above and GSI1. TTL is a separate call
// (UpdateTimeToLive on AttrTTL) that CreateTable makes.
func CreateTableInput(name string) *dynamodb.CreateTableInput {
	s := types.ScalarAttributeTypeS
	return &dynamodb.CreateTableInput{
		TableName:   aws.String(name),
		BillingMode: types.BillingModePayPerRequest,
		AttributeDefinitions: []types.AttributeDefinition{
			{AttributeName: aws.String(AttrPK), AttributeType: s},
			{AttributeName: aws.String(AttrSK), AttributeType: s},
			{AttributeName: aws.String(AttrGSI1PK), AttributeType: s},
			{AttributeName: aws.String(AttrGSI1SK), AttributeType: s},
			{AttributeName: aws.String(AttrGSI2PK), AttributeType: s},
			{AttributeName: aws.String(AttrGSI2SK), AttributeType: types.ScalarAttributeTypeN},
		},
		KeySchema: []types.KeySchemaElement{
			{AttributeName: aws.String(AttrPK), KeyType: types.KeyTypeHash},
			{AttributeName: aws.String(AttrSK), KeyType: types.KeyTypeRange},
		},
		GlobalSecondaryIndexes: []types.GlobalSecondaryIndex{{
			IndexName: aws.String(IndexGSI1),
			KeySchema: []types.KeySchemaElement{
				{AttributeName: aws.String(AttrGSI1PK), KeyType: types.KeyTypeHash},
				{AttributeName: aws.String(AttrGSI1SK), KeyType: types.KeyTypeRange},
			},
			Projection: &types.Projection{
				ProjectionType:   types.ProjectionTypeInclude,
				NonKeyAttributes: slices.Clone(GSI1Attributes),
			},
		}, gsi2()},
	}
}

// gsi2 is the sweep's index (IndexGSI2).
func gsi2() types.GlobalSecondaryIndex {
	return types.GlobalSecondaryIndex{
		IndexName: aws.String(IndexGSI2),
		KeySchema: []types.KeySchemaElement{
			{AttributeName: aws.String(AttrGSI2PK), KeyType: types.KeyTypeHash},
			{AttributeName: aws.String(AttrGSI2SK), KeyType: types.KeyTypeRange},
		},
		Projection: &types.Projection{ProjectionType: types.ProjectionTypeKeysOnly},
	}
}

// TableAPI is the part of the DynamoDB client CreateTable uses.
type TableAPI interface {
	CreateTable(context.Context, *dynamodb.CreateTableInput, ...func(*dynamodb.Options)) (*dynamodb.CreateTableOutput, error)
	DescribeTable(context.Context, *dynamodb.DescribeTableInput, ...func(*dynamodb.Options)) (*dynamodb.DescribeTableOutput, error)
	DescribeTimeToLive(context.Context, *dynamodb.DescribeTimeToLiveInput, ...func(*dynamodb.Options)) (*dynamodb.DescribeTimeToLiveOutput, error)
	UpdateTable(context.Context, *dynamodb.UpdateTableInput, ...func(*dynamodb.Options)) (*dynamodb.UpdateTableOutput, error)
	UpdateTimeToLive(context.Context, *dynamodb.UpdateTimeToLiveInput, ...func(*dynamodb.Options)) (*dynamodb.UpdateTimeToLiveOutput, error)
}

var _ TableAPI = (*dynamodb.Client)(nil)

// CreateTable creates the table for local use (moto, LocalStack, a dev
// account): it is idempotent, waits until the table and its indexes are
// active, and enables TTL on AttrTTL. An existing table made before GSI2
// gets it (UpdateTable). An existing table with a different key schema is
// an error. In AWS the CDK stack creates the same table.
func CreateTable(ctx context.Context, db TableAPI, name string) error {
	_, err := db.CreateTable(ctx, CreateTableInput(name))
	var inUse *types.ResourceInUseException
	if err != nil && !errors.As(err, &inUse) {
		return fmt.Errorf("create table %s: %w", name, err)
	}
	if err := waitActive(ctx, db, name); err != nil {
		return err
	}
	if err := addGSI2(ctx, db, name); err != nil {
		return err
	}
	ttl, err := db.DescribeTimeToLive(ctx, &dynamodb.DescribeTimeToLiveInput{TableName: aws.String(name)})
	if err != nil {
		return fmt.Errorf("describe TTL of table %s: %w", name, err)
	}
	if d := ttl.TimeToLiveDescription; d != nil && aws.ToString(d.AttributeName) == AttrTTL &&
		(d.TimeToLiveStatus == types.TimeToLiveStatusEnabled || d.TimeToLiveStatus == types.TimeToLiveStatusEnabling) {
		return nil
	}
	_, err = db.UpdateTimeToLive(ctx, &dynamodb.UpdateTimeToLiveInput{
		TableName: aws.String(name),
		TimeToLiveSpecification: &types.TimeToLiveSpecification{
			AttributeName: aws.String(AttrTTL),
			Enabled:       aws.Bool(true),
		},
	})
	if err != nil {
		return fmt.Errorf("enable TTL on table %s: %w", name, err)
	}
	return nil
}

// waitActive polls until the table and its indexes are active, and checks
// that its key schema is the Store's.
func waitActive(ctx context.Context, db TableAPI, name string) error {
	delay := 200 * time.Millisecond
	for {
		out, err := db.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(name)})
		if err != nil {
			return fmt.Errorf("describe table %s: %w", name, err)
		}
		t := out.Table
		if err := checkSchema(t); err != nil {
			return fmt.Errorf("table %s: %w", name, err)
		}
		active := t.TableStatus == types.TableStatusActive
		for _, g := range t.GlobalSecondaryIndexes {
			active = active && g.IndexStatus == types.IndexStatusActive
		}
		if active {
			return nil
		}
		timer := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			timer.Stop()
			return fmt.Errorf("wait for table %s: %w", name, ctx.Err())
		case <-timer.C:
		}
		delay = min(2*delay, 5*time.Second)
	}
}

// addGSI2 adds the sweep's index to a table made without it, and waits
// until it is active.
func addGSI2(ctx context.Context, db TableAPI, name string) error {
	out, err := db.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(name)})
	if err != nil {
		return fmt.Errorf("describe table %s: %w", name, err)
	}
	for _, g := range out.Table.GlobalSecondaryIndexes {
		if aws.ToString(g.IndexName) == IndexGSI2 {
			return nil
		}
	}
	in := CreateTableInput(name)
	g := gsi2()
	_, err = db.UpdateTable(ctx, &dynamodb.UpdateTableInput{
		TableName:            aws.String(name),
		AttributeDefinitions: in.AttributeDefinitions,
		GlobalSecondaryIndexUpdates: []types.GlobalSecondaryIndexUpdate{{Create: &types.CreateGlobalSecondaryIndexAction{
			IndexName: g.IndexName, KeySchema: g.KeySchema, Projection: g.Projection}}},
	})
	if err != nil {
		return fmt.Errorf("add index %s to table %s: %w", IndexGSI2, name, err)
	}
	return waitActive(ctx, db, name)
}

func checkSchema(t *types.TableDescription) error {
	keys := map[string]types.KeyType{}
	for _, k := range t.KeySchema {
		keys[aws.ToString(k.AttributeName)] = k.KeyType
	}
	if len(keys) != 2 || keys[AttrPK] != types.KeyTypeHash || keys[AttrSK] != types.KeyTypeRange {
		return fmt.Errorf("key schema is not (%s HASH, %s RANGE)", AttrPK, AttrSK)
	}
	for _, g := range t.GlobalSecondaryIndexes {
		if aws.ToString(g.IndexName) == IndexGSI1 {
			return nil
		}
	}
	return fmt.Errorf("index %s is missing", IndexGSI1)
}
