package store_test

import (
	"bytes"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/agentsfleet/agentsfleet/shared/store"
)

// itemSize is an item's size by DynamoDB's rules: attribute names plus
// values; a number takes 1 byte per two significant digits plus 1; lists and
// maps take 3 bytes plus 1 per element.
func itemSize(item map[string]types.AttributeValue) int {
	n := 0
	for name, v := range item {
		n += len(name) + valueSize(v)
	}
	return n
}

func valueSize(v types.AttributeValue) int {
	switch v := v.(type) {
	case *types.AttributeValueMemberS:
		return len(v.Value)
	case *types.AttributeValueMemberN:
		digits := strings.Trim(strings.NewReplacer("-", "", ".", "").Replace(v.Value), "0")
		return (len(digits)+1)/2 + 1
	case *types.AttributeValueMemberB:
		return len(v.Value)
	case *types.AttributeValueMemberBOOL, *types.AttributeValueMemberNULL:
		return 1
	case *types.AttributeValueMemberL:
		n := 3
		for _, e := range v.Value {
			n += 1 + valueSize(e)
		}
		return n
	case *types.AttributeValueMemberM:
		n := 3
		for k, e := range v.Value {
			n += 1 + len(k) + valueSize(e)
		}
		return n
	case *types.AttributeValueMemberSS:
		n := 0
		for _, s := range v.Value {
			n += len(s)
		}
		return n
	}
	panic(fmt.Sprintf("valueSize: %T", v))
}

// wcu is the write units of writing an item of size bytes: 1 per KB started.
func wcu(size int) float64 { return math.Ceil(float64(size) / 1024) }

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

// TestWriteUnitsPerToolCall measures the per-tool-call write path: what the
// meter sees DynamoDB (here moto) report, and what DynamoDB charges by the
// sizes of the items actually written.
func TestWriteUnitsPerToolCall(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	meter := store.NewCapacityMeter(e.db)
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

	for _, ckptSize := range []int{600, 8 << 10} {
		t.Run(fmt.Sprintf("checkpoint %d bytes", ckptSize), func(t *testing.T) {
			ckpt := bytes.Repeat([]byte("c"), ckptSize)
			run, _ := s.GetRun(ctx, r.ID)
			step := run.CheckpointStep

			// Separate calls: AppendEvent + SaveCheckpoint + Spend.
			meter.Reset()
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

			runSize := itemSize(e.raw(t, "RUN#"+r.ID, "RUN"))
			evtSize := itemSize(e.raw(t, "RUN#"+r.ID, fmt.Sprintf("EVT#%016d", seq)))
			ckptItemSize := itemSize(e.raw(t, "RUN#"+r.ID, "CKPT"))
			// Transactions cost twice a plain write; an update costs by the larger of before and after.
			separate := 2*(wcu(runSize)+wcu(evtSize)) + 2*(wcu(runSize)+wcu(ckptItemSize)) + wcu(runSize)

			// One transaction: CommitStep.
			meter.Reset()
			step++
			if _, err := s.CommitStep(ctx, r.ID, store.Step{Holder: holder, Number: step, Checkpoint: ckpt,
				Events: []store.NewEvent{event}, Spend: store.Budget{Tokens: 1200, ToolCalls: 1}}); err != nil {
				t.Fatal(err)
			}
			commitReported := meter.Total()
			commit := 2 * (wcu(runSize) + wcu(evtSize) + wcu(ckptItemSize))

			t.Logf("items: run %d B, event %d B, checkpoint %d B", runSize, evtSize, ckptItemSize)
			t.Logf("write units by item size: separate calls %.0f, CommitStep %.0f", separate, commit)
			t.Logf("write units the endpoint reported: separate %.1f (read %.1f), CommitStep %.1f (read %.1f)",
				separateReported.Write, separateReported.Read, commitReported.Write, commitReported.Read)

			if runSize > 1024 {
				t.Errorf("run item is %d bytes; keep it within 1 KB so each counter update costs 1 write unit", runSize)
			}
			if separateReported.Read != 0 || commitReported.Read != 0 {
				t.Errorf("the write path read (%.1f, %.1f units); with a warm hint it should not", separateReported.Read, commitReported.Read)
			}
			if commit >= separate {
				t.Errorf("CommitStep costs %.0f units, separate calls %.0f; want fewer", commit, separate)
			}
		})
	}
}
