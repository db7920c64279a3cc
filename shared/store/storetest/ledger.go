// Package storetest measures what the store costs in DynamoDB: Ledger is a
// store.API that charges every write the write units DynamoDB bills for it
// by the sizes of the items it touches, which emulators do not report
// (moto reports a fixed figure a call, and none for transactions).
package storetest

import (
	"context"
	"fmt"
	"math"
	"strings"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/agentsfleet/agentsfleet/shared/store"
)

// ItemSize is an item's size by DynamoDB's rules: attribute names plus
// values; a number takes 1 byte per two significant digits plus 1; lists and
// maps take 3 bytes plus 1 per element.
func ItemSize(item map[string]types.AttributeValue) int {
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

// WriteUnits is the write units of writing an item of size bytes: 1 per KB
// started.
func WriteUnits(size int) float64 { return math.Ceil(float64(size) / 1024) }

// Ledger is a store.API that passes every call on to DB and adds up, for
// each write that succeeds, the write units DynamoDB charges for it by the
// sizes of the items it touches, read from the table just before and just
// after: per item 1 unit for every KB started of the larger of the two,
// twice that in a transaction (a condition check counted like a write of
// the item it checks). Unlike an emulator's reports it sees every item a
// write touches, so an item added to a transaction, or one grown past 1 KB,
// shows in its total. Its own reads go straight to DB, past any
// CapacityMeter above it. It measures one writer at a time; it is safe for
// concurrent use, but writes that overlap on an item are charged as they
// happen to be read.
type Ledger struct {
	DB *dynamodb.Client

	mu     sync.Mutex
	units  float64
	calls  int
	items  int
	writes []Write
}

var _ store.API = (*Ledger)(nil)

// Write is one write the Ledger charged: the call, the keys (pk, sk) of the
// items it touched, and its units.
type Write struct {
	Call  string // "PutItem", "UpdateItem", "TransactWriteItems"
	Keys  [][2]string
	Units float64
}

// Reset sets the totals to zero and forgets the writes.
func (l *Ledger) Reset() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.units, l.calls, l.items, l.writes = 0, 0, 0, nil
}

// Total returns the units charged since the Ledger was made or Reset, and
// how many calls and items they were for.
func (l *Ledger) Total() (units float64, calls, items int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.units, l.calls, l.items
}

// Writes returns the writes charged since the Ledger was made or Reset, in
// order.
func (l *Ledger) Writes() []Write {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]Write(nil), l.writes...)
}

// touched is an item a write names: its table and key.
type touched struct {
	table string
	key   map[string]types.AttributeValue
}

func keyOf(item map[string]types.AttributeValue) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{store.AttrPK: item[store.AttrPK], store.AttrSK: item[store.AttrSK]}
}

func (l *Ledger) size(ctx context.Context, it touched) (int, error) {
	out, err := l.DB.GetItem(ctx, &dynamodb.GetItemInput{TableName: &it.table, Key: it.key, ConsistentRead: aws.Bool(true)})
	if err != nil {
		return 0, fmt.Errorf("ledger: size of %v: %w", it.key, err)
	}
	if out.Item == nil {
		return 0, nil
	}
	return ItemSize(out.Item), nil
}

// write runs do, charging factor units per KB of each item in its.
func (l *Ledger) write(ctx context.Context, call string, factor float64, its []touched, do func() error) error {
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
	w := Write{Call: call}
	for i, it := range its {
		after, err := l.size(ctx, it)
		if err != nil {
			return err
		}
		w.Units += factor * WriteUnits(max(before[i], after))
		w.Keys = append(w.Keys, [2]string{keyString(it.key[store.AttrPK]), keyString(it.key[store.AttrSK])})
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.units += w.Units
	l.calls++
	l.items += len(its)
	l.writes = append(l.writes, w)
	return nil
}

func keyString(v types.AttributeValue) string {
	if s, ok := v.(*types.AttributeValueMemberS); ok {
		return s.Value
	}
	return fmt.Sprint(v)
}

// GetItem implements store.API.
func (l *Ledger) GetItem(ctx context.Context, in *dynamodb.GetItemInput, o ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	return l.DB.GetItem(ctx, in, o...)
}

// Query implements store.API.
func (l *Ledger) Query(ctx context.Context, in *dynamodb.QueryInput, o ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error) {
	return l.DB.Query(ctx, in, o...)
}

// PutItem implements store.API.
func (l *Ledger) PutItem(ctx context.Context, in *dynamodb.PutItemInput, o ...func(*dynamodb.Options)) (out *dynamodb.PutItemOutput, err error) {
	err = l.write(ctx, "PutItem", 1, []touched{{aws.ToString(in.TableName), keyOf(in.Item)}}, func() error {
		out, err = l.DB.PutItem(ctx, in, o...)
		return err
	})
	return out, err
}

// UpdateItem implements store.API.
func (l *Ledger) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, o ...func(*dynamodb.Options)) (out *dynamodb.UpdateItemOutput, err error) {
	err = l.write(ctx, "UpdateItem", 1, []touched{{aws.ToString(in.TableName), in.Key}}, func() error {
		out, err = l.DB.UpdateItem(ctx, in, o...)
		return err
	})
	return out, err
}

// TransactWriteItems implements store.API.
func (l *Ledger) TransactWriteItems(ctx context.Context, in *dynamodb.TransactWriteItemsInput, o ...func(*dynamodb.Options)) (out *dynamodb.TransactWriteItemsOutput, err error) {
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
	err = l.write(ctx, "TransactWriteItems", 2, its, func() error {
		out, err = l.DB.TransactWriteItems(ctx, in, o...)
		return err
	})
	return out, err
}
