package store_test

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"strings"
	"sync"
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

// ledger is an API that passes every call on to db and adds up, for each
// write that succeeds, the write units DynamoDB charges for it by the sizes
// of the items it touches, read from the table just before and just after:
// per item 1 unit for every KB started of the larger of the two, twice that
// in a transaction (a condition check counted like a write of the item it
// checks). Unlike an emulator's reports it sees every item a write touches,
// so an item added to a transaction, or one grown past 1 KB, shows in its
// total. Its own reads go straight to db, past any CapacityMeter above it.
// It measures one writer at a time.
type ledger struct {
	db *dynamodb.Client

	mu           sync.Mutex
	units        float64
	calls, items int
}

var _ store.API = (*ledger)(nil)

func (l *ledger) reset() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.units, l.calls, l.items = 0, 0, 0
}

func (l *ledger) total() (units float64, calls, items int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.units, l.calls, l.items
}

// touched is an item a write names: its table and key.
type touched struct {
	table string
	key   map[string]types.AttributeValue
}

func keyOf(item map[string]types.AttributeValue) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{store.AttrPK: item[store.AttrPK], store.AttrSK: item[store.AttrSK]}
}

func (l *ledger) size(ctx context.Context, it touched) (int, error) {
	out, err := l.db.GetItem(ctx, &dynamodb.GetItemInput{TableName: &it.table, Key: it.key, ConsistentRead: aws.Bool(true)})
	if err != nil {
		return 0, fmt.Errorf("ledger: size of %v: %w", it.key, err)
	}
	if out.Item == nil {
		return 0, nil
	}
	return itemSize(out.Item), nil
}

// write runs do, charging factor units per KB of each item in its.
func (l *ledger) write(ctx context.Context, factor float64, its []touched, do func() error) error {
	before := make([]int, len(its))
	for i, it := range its {
		n, err := l.size(ctx, it)
		if err != nil {
			return err
		}
		before[i] = n
	}
	if err := do(); err != nil {
		return err
	}
	var units float64
	for i, it := range its {
		after, err := l.size(ctx, it)
		if err != nil {
			return err
		}
		units += factor * wcu(max(before[i], after))
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.units += units
	l.calls++
	l.items += len(its)
	return nil
}

// GetItem implements store.API.
func (l *ledger) GetItem(ctx context.Context, in *dynamodb.GetItemInput, o ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	return l.db.GetItem(ctx, in, o...)
}

// Query implements store.API.
func (l *ledger) Query(ctx context.Context, in *dynamodb.QueryInput, o ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error) {
	return l.db.Query(ctx, in, o...)
}

// PutItem implements store.API.
func (l *ledger) PutItem(ctx context.Context, in *dynamodb.PutItemInput, o ...func(*dynamodb.Options)) (out *dynamodb.PutItemOutput, err error) {
	err = l.write(ctx, 1, []touched{{aws.ToString(in.TableName), keyOf(in.Item)}}, func() error {
		out, err = l.db.PutItem(ctx, in, o...)
		return err
	})
	return out, err
}

// UpdateItem implements store.API.
func (l *ledger) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, o ...func(*dynamodb.Options)) (out *dynamodb.UpdateItemOutput, err error) {
	err = l.write(ctx, 1, []touched{{aws.ToString(in.TableName), in.Key}}, func() error {
		out, err = l.db.UpdateItem(ctx, in, o...)
		return err
	})
	return out, err
}

// TransactWriteItems implements store.API.
func (l *ledger) TransactWriteItems(ctx context.Context, in *dynamodb.TransactWriteItemsInput, o ...func(*dynamodb.Options)) (out *dynamodb.TransactWriteItemsOutput, err error) {
	var its []touched
	for _, ti := range in.TransactItems {
		switch {
		case ti.Put != nil:
			its = append(its, touched{aws.ToString(ti.Put.TableName), keyOf(ti.Put.Item)})
		case ti.Update != nil:
			its = append(its, touched{aws.ToString(ti.Update.TableName), ti.Update.Key})
		case ti.Delete != nil:
			its = append(its, touched{aws.ToString(ti.Delete.TableName), ti.Delete.Key})
		case ti.ConditionCheck != nil:
			its = append(its, touched{aws.ToString(ti.ConditionCheck.TableName), ti.ConditionCheck.Key})
		}
	}
	err = l.write(ctx, 2, its, func() error {
		out, err = l.db.TransactWriteItems(ctx, in, o...)
		return err
	})
	return out, err
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
// ledger), against a fixed budget, and what the meter sees the endpoint
// report (moto reports nothing for transactions; where an endpoint does,
// it must agree with the item sizes).
func TestWriteUnitsPerToolCall(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	charged := &ledger{db: e.db}
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
			charged.reset()
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
			separate, separateCalls, separateItems := charged.total()

			runSize := itemSize(e.raw(t, "RUN#"+r.ID, "RUN"))
			evtSize := itemSize(e.raw(t, "RUN#"+r.ID, fmt.Sprintf("EVT#%016d", seq)))
			ckptItemSize := itemSize(e.raw(t, "RUN#"+r.ID, "CKPT"))

			// One transaction: CommitStep.
			meter.Reset()
			charged.reset()
			step++
			if _, err := s.CommitStep(ctx, r.ID, store.Step{Holder: holder, Number: step, Checkpoint: ckpt,
				Events: []store.NewEvent{event}, Spend: store.Budget{Tokens: 1200, ToolCalls: 1}}); err != nil {
				t.Fatal(err)
			}
			commitReported := meter.Total()
			commit, commitCalls, commitItems := charged.total()

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
