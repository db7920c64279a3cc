package store_test

import (
	"bytes"
	"fmt"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/agentsfleet/agentsfleet/shared/store"
)

// BenchmarkStepWrites measures the per-step write path against the floor: a
// single PutItem of an event-sized item, timed in the same loop against the
// same endpoint. It reports
//
//	step/put    AppendEvent + SaveCheckpoint (two transactions) ÷ one PutItem
//	commit/put  CommitStep (one transaction, with spending) ÷ one PutItem
func BenchmarkStepWrites(b *testing.B) {
	e := newEnv(b)
	e.fleet(b, "ops")
	r, _, err := e.CreateRun(ctx, store.NewRun{Fleet: "ops", Source: store.SourceAPI})
	if err != nil {
		b.Fatal(err)
	}
	if _, err := e.AcquireLease(ctx, r.ID, "bench", time.Hour); err != nil {
		b.Fatal(err)
	}
	event := store.NewEvent{Type: "tool_call", Data: bytes.Repeat([]byte("e"), 300)}
	ckpt := bytes.Repeat([]byte("c"), 600)
	if _, err := e.AppendEvent(ctx, r.ID, event); err != nil {
		b.Fatal(err)
	}
	var put, step, commit time.Duration
	n := int64(0)
	for i := 0; b.Loop(); i++ {
		t0 := time.Now()
		_, err := e.db.PutItem(ctx, &dynamodb.PutItemInput{TableName: &e.table, Item: map[string]types.AttributeValue{
			store.AttrPK: &types.AttributeValueMemberS{Value: "BENCH#" + r.ID},
			store.AttrSK: &types.AttributeValueMemberS{Value: fmt.Sprintf("EVT#%016d", i)},
			"type":       &types.AttributeValueMemberS{Value: event.Type},
			"data":       &types.AttributeValueMemberB{Value: event.Data},
		}})
		if err != nil {
			b.Fatal(err)
		}
		t1 := time.Now()
		n++
		if _, err := e.AppendEvent(ctx, r.ID, event); err != nil {
			b.Fatal(err)
		}
		if err := e.SaveCheckpoint(ctx, r.ID, "bench", 2*n, ckpt); err != nil {
			b.Fatal(err)
		}
		t2 := time.Now()
		if _, err := e.CommitStep(ctx, r.ID, store.Step{Holder: "bench", Number: 2*n + 1, Checkpoint: ckpt,
			Events: []store.NewEvent{event}, Spend: store.Budget{Tokens: 1000, ToolCalls: 1}}); err != nil {
			b.Fatal(err)
		}
		n++
		t3 := time.Now()
		put += t1.Sub(t0)
		step += t2.Sub(t1)
		commit += t3.Sub(t2)
	}
	b.ReportMetric(float64(put.Nanoseconds())/float64(b.N), "put-ns/op")
	b.ReportMetric(float64(step)/float64(put), "step/put")
	b.ReportMetric(float64(commit)/float64(put), "commit/put")
}
