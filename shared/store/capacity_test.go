package store_test

import (
	"bytes"
	"fmt"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/agentsfleet/agentsfleet/shared/store"
	"github.com/agentsfleet/agentsfleet/shared/store/storetest"
)

func (e *env) raw(t *testing.T, pk, sk string) map[string]types.AttributeValue {
	t.Helper()
	out, err := e.db.GetItem(ctx, &dynamodb.GetItemInput{TableName: &e.table, ConsistentRead: aws.Bool(true),
		Key: map[string]types.AttributeValue{
			store.AttrPK: &types.AttributeValueMemberS{Value: pk},
			store.AttrSK: &types.AttributeValueMemberS{Value: sk},
		}})
	if err != nil || out.Item == nil {
		t.Fatalf("GetItem(%s, %s) = %v, %v", pk, sk, out, err)
	}
	return out.Item
}

// toolCallWriteUnits is the most write units one CommitStep of a tool call
// (one event of a few hundred bytes, a checkpoint under 1 KB, the spend) may
// cost: one transaction of three items of at most 1 KB (the run's counters,
// the event, the checkpoint), 2 units each. A change that adds an item to
// the step, or grows one past 1 KB, goes over it: raise it only with the
// reason, and update the figures in the package documentation.
const toolCallWriteUnits = 6

// TestWriteUnitsPerToolCall measures the per-tool-call write path: the write
// units DynamoDB charges by the sizes of the items actually written (see
// storetest.Ledger), against a fixed budget, and what the meter sees the
// endpoint report (moto reports nothing for transactions; where an endpoint
// does, it must agree with the item sizes).
func TestWriteUnitsPerToolCall(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	charged := &storetest.Ledger{DB: e.db}
	meter := store.NewCapacityMeter(charged)
	s := store.New(meter, e.table, store.WithClock(e.clock.Now))
	e.fleet(t, "ops")
	r, _, err := s.CreateRun(ctx, store.NewRun{Fleet: "ops", Source: store.SourceSlack,
		Thread: &store.Thread{Channel: "C0123456789", ThreadTS: "1700000000.000100"}, Limits: store.Budget{Tokens: 1e6, ToolCalls: 500}})
	if err != nil {
		t.Fatal(err)
	}
	const holder = "2f9c6d3e-5a1b-4c7d-8e9f-0a1b2c3d4e5f" // a Lambda request id
	if _, err := s.AcquireLease(ctx, r.ID, holder, 5*time.Minute); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Transition(ctx, r.ID, store.StatusRunning, ""); err != nil {
		t.Fatal(err)
	}
	// A tool call's event: a short JSON record; the output body goes to the
	// model, and the log keeps a preview.
	event := store.NewEvent{Type: "tool_call", Data: bytes.Repeat([]byte("e"), 300)}
	if _, err := s.AppendEvent(ctx, r.ID, event); err != nil { // warms the seq hint, as a runner's first event does
		t.Fatal(err)
	}

	for _, tc := range []struct {
		ckptSize int
		budget   float64
	}{
		{600, toolCallWriteUnits},
		// Every KB of checkpoint past the first costs 2 units more.
		{8 << 10, toolCallWriteUnits + 2*8},
	} {
		t.Run(fmt.Sprintf("checkpoint %d bytes", tc.ckptSize), func(t *testing.T) {
			ckpt := bytes.Repeat([]byte("c"), tc.ckptSize)
			run, _ := s.GetRun(ctx, r.ID)
			step := run.CheckpointStep

			// Separate calls: AppendEvent + SaveCheckpoint + Spend.
			meter.Reset()
			charged.Reset()
			step++
			seq, err := s.AppendEvent(ctx, r.ID, event)
			if err != nil {
				t.Fatal(err)
			}
			if err := s.SaveCheckpoint(ctx, r.ID, holder, step, ckpt); err != nil {
				t.Fatal(err)
			}
			if _, err := s.Spend(ctx, r.ID, 1200, 1); err != nil {
				t.Fatal(err)
			}
			separateReported := meter.Total()
			separate, separateCalls, separateItems := charged.Total()

			runSize := storetest.ItemSize(e.raw(t, "RUN#"+r.ID, "RUN"))
			evtSize := storetest.ItemSize(e.raw(t, "RUN#"+r.ID, fmt.Sprintf("EVT#%016d", seq)))
			ckptItemSize := storetest.ItemSize(e.raw(t, "RUN#"+r.ID, "CKPT"))

			// One transaction: CommitStep.
			meter.Reset()
			charged.Reset()
			step++
			if _, err := s.CommitStep(ctx, r.ID, store.Step{Holder: holder, Number: step, Checkpoint: ckpt,
				Events: []store.NewEvent{event}, Spend: store.Budget{Tokens: 1200, ToolCalls: 1}}); err != nil {
				t.Fatal(err)
			}
			commitReported := meter.Total()
			commit, commitCalls, commitItems := charged.Total()

			t.Logf("items: run %d B, event %d B, checkpoint %d B", runSize, evtSize, ckptItemSize)
			t.Logf("write units by item size: separate calls %.0f (%d items in %d calls), CommitStep %.0f (%d items in %d calls)",
				separate, separateItems, separateCalls, commit, commitItems, commitCalls)
			t.Logf("write units the endpoint reported: separate %.1f (read %.1f), CommitStep %.1f (read %.1f)",
				separateReported.Write, separateReported.Read, commitReported.Write, commitReported.Read)

			if runSize > 1024 {
				t.Errorf("run item is %d bytes; keep it within 1 KB so each counter update costs 1 write unit", runSize)
			}
			if commit > tc.budget {
				t.Errorf("CommitStep costs %.0f write units (%d items in %d calls); want at most %.0f", commit, commitItems, commitCalls, tc.budget)
			}
			if commit >= separate {
				t.Errorf("CommitStep costs %.0f write units, separate calls %.0f; want fewer", commit, separate)
			}
			// moto reports no capacity for a transaction (and a fixed 1 or
			// 0.5 for a single write): there is nothing to compare. An
			// endpoint that reports must agree with the item sizes.
			if commitReported.Write != 0 && commitReported.Write != commit {
				t.Errorf("the endpoint reported %.1f write units for CommitStep; its items' sizes say %.0f", commitReported.Write, commit)
			}
			if separateReported.Read != 0 || commitReported.Read != 0 {
				t.Errorf("the write path read (%.1f, %.1f units); with a warm hint it should not", separateReported.Read, commitReported.Read)
			}
		})
	}
}
