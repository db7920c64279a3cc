package api_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/agentsfleet/agentsfleet/shared/awstest"
	"github.com/agentsfleet/agentsfleet/shared/invoke"
	"github.com/agentsfleet/agentsfleet/shared/run/start"
	"github.com/agentsfleet/agentsfleet/shared/store"
)

// BenchmarkStartRun measures what POST /v1/fleets/{name}/runs costs over
// the floor of one DynamoDB write on the same emulator, in alternating
// rounds. The runner's invocation is the local invoker's (started, not
// waited for), so the figure is the API's: the key check, reading the
// revision, the run's transaction and the answer. It reports
//
//	api-ns/start      a run start over HTTP
//	put-ns/write      one PutItem of a small item
//	api/put           their ratio
//	api/direct        the start over HTTP against the same store calls
//	                  made directly (the key check and start.Run): what
//	                  the HTTP layer itself adds
func BenchmarkStartRun(b *testing.B) {
	const per, rounds = 20, 5
	e := newEnv(b)
	e.apply(opsTOML)
	// The runner's invocations return at once: the bench is the API's.
	e.local.Register(invoke.Runner, func(context.Context, []byte) ([]byte, error) { return nil, nil })
	db := dynamodb.NewFromConfig(awstest.Config(b))
	table := awstest.UniqueName(b, "put")
	if _, err := db.CreateTable(context.Background(), &dynamodb.CreateTableInput{TableName: aws.String(table),
		AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String("pk"), AttributeType: types.ScalarAttributeTypeS}},
		KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String("pk"), KeyType: types.KeyTypeHash}},
		BillingMode:          types.BillingModePayPerRequest}); err != nil {
		b.Fatal(err)
	}
	var apiNs, putNs, directNs []float64
	for round := range rounds {
		t0 := time.Now()
		for range per {
			if code, body := e.do("POST", "/v1/fleets/ops/runs", e.admin, map[string]any{"input": "bench"}); code != 202 {
				b.Fatalf("start = %d %v", code, body)
			}
		}
		apiNs = append(apiNs, float64(time.Since(t0).Nanoseconds())/per)
		t1 := time.Now()
		for i := range per {
			if _, err := db.PutItem(context.Background(), &dynamodb.PutItemInput{TableName: aws.String(table),
				Item: map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: fmt.Sprintf("r%d-%d", round, i)},
					"data": &types.AttributeValueMemberS{Value: "bench"}}}); err != nil {
				b.Fatal(err)
			}
		}
		putNs = append(putNs, float64(time.Since(t1).Nanoseconds())/per)
		t2 := time.Now()
		for range per {
			if _, err := e.store.Authenticate(ctx, e.admin); err != nil {
				b.Fatal(err)
			}
			if _, _, err := start.Run(ctx, e.store, e.local, store.NewRun{Fleet: "ops", Source: store.SourceAPI, Input: []byte("bench")}); err != nil {
				b.Fatal(err)
			}
		}
		directNs = append(directNs, float64(time.Since(t2).Nanoseconds())/per)
	}
	e.local.Wait()
	a, p := median(apiNs), median(putNs)
	b.ReportMetric(a, "api-ns/start")
	b.ReportMetric(p, "put-ns/write")
	b.ReportMetric(a/p, "api/put")
	b.ReportMetric(a/median(directNs), "api/direct")
}

func median(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	return s[len(s)/2]
}
