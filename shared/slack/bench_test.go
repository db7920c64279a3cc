package slack_test

import (
	"fmt"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/agentsfleet/agentsfleet/shared/awstest"
)

// BenchmarkAckEvent measures what acknowledging an app mention costs over
// the floor of one DynamoDB write on the same emulator, in alternating
// rounds: the signature check, the route read, the run's transaction with
// its event_id as idempotency key, the runner's invocation (the local
// invoker's, started and not waited for) and the thread record. Slack's
// limit is 3 s. It reports
//
//	ack-ns/event     a new event, signed, through HandleGateway to its 200
//	retry-ns/event   a retry of an event already started
//	put-ns/write     one PutItem of a small item
//	ack/put          their ratio
func BenchmarkAckEvent(b *testing.B) {
	const per, rounds = 20, 5
	e := newEnv(b, nil)
	e.fleet("ops")
	if _, err := e.store.PutSlackRoute(ctx, channel, "ops"); err != nil {
		b.Fatal(err)
	}
	db := dynamodb.NewFromConfig(awstest.Config(b))
	table := awstest.UniqueName(b, "put")
	if _, err := db.CreateTable(ctx, &dynamodb.CreateTableInput{TableName: aws.String(table),
		AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String("pk"), AttributeType: types.ScalarAttributeTypeS}},
		KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String("pk"), KeyType: types.KeyTypeHash}},
		BillingMode:          types.BillingModePayPerRequest}); err != nil {
		b.Fatal(err)
	}
	base := load(b, "app_mention.json")
	var ackNs, retryNs, putNs []float64
	for round := range rounds {
		reqs := make([]events.APIGatewayV2HTTPRequest, per)
		for i := range reqs {
			reqs[i] = edit(b, base, func(o, in map[string]any) {
				o["event_id"] = fmt.Sprintf("EvBENCH%02d%03d", round, i)
				in["ts"] = fmt.Sprintf("1796123%03d.%06d", round, i)
			})
		}
		t0 := time.Now()
		for _, r := range reqs {
			if resp := e.send(sign(b, r)); resp.StatusCode != http.StatusOK {
				b.Fatalf("ack = %d %s", resp.StatusCode, resp.Body)
			}
		}
		ackNs = append(ackNs, float64(time.Since(t0).Nanoseconds())/per)
		t1 := time.Now()
		for _, r := range reqs {
			if resp := e.send(sign(b, r)); resp.StatusCode != http.StatusOK {
				b.Fatalf("retry ack = %d %s", resp.StatusCode, resp.Body)
			}
		}
		retryNs = append(retryNs, float64(time.Since(t1).Nanoseconds())/per)
		t2 := time.Now()
		for i := range per {
			if _, err := db.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(table),
				Item: map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: fmt.Sprintf("r%d-%d", round, i)},
					"data": &types.AttributeValueMemberS{Value: "bench"}}}); err != nil {
				b.Fatal(err)
			}
		}
		putNs = append(putNs, float64(time.Since(t2).Nanoseconds())/per)
	}
	e.local.Wait()
	if n := len(e.runs("ops")); n != per*rounds {
		b.Fatalf("%d runs, want %d", n, per*rounds)
	}
	a, r, p := median(ackNs), median(retryNs), median(putNs)
	b.ReportMetric(a, "ack-ns/event")
	b.ReportMetric(r, "retry-ns/event")
	b.ReportMetric(p, "put-ns/write")
	b.ReportMetric(a/p, "ack/put")
}

func median(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	return s[len(s)/2]
}
