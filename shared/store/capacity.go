package store

import (
	"context"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// Capacity is DynamoDB capacity consumed, in read and write units.
type Capacity struct {
	Read, Write float64
}

// CapacityMeter is an API that asks DynamoDB to report the capacity each
// call consumes (ReturnConsumedCapacity TOTAL) and adds it up. Wrap the
// client with it to measure a code path: New(NewCapacityMeter(client), …).
// It is safe for concurrent use.
//
// It sees only what DynamoDB reports: a write refused by its condition also
// consumes write units but returns an error without a report. Emulators may
// report made-up figures (moto reports a fixed 1 or 0.5 a call, and none for
// transactions); the package documentation has the figures by item size.
type CapacityMeter struct {
	api API

	mu  sync.Mutex
	sum Capacity
}

var _ API = (*CapacityMeter)(nil)

// NewCapacityMeter wraps api.
func NewCapacityMeter(api API) *CapacityMeter { return &CapacityMeter{api: api} }

// Total returns the capacity consumed since the meter was made or Reset.
func (m *CapacityMeter) Total() Capacity {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.sum
}

// Reset sets the totals to zero.
func (m *CapacityMeter) Reset() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.sum = Capacity{}
}

func (m *CapacityMeter) add(read bool, ccs ...*types.ConsumedCapacity) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, cc := range ccs {
		if cc == nil {
			continue
		}
		if read {
			m.sum.Read += aws.ToFloat64(cc.CapacityUnits)
		} else {
			m.sum.Write += aws.ToFloat64(cc.CapacityUnits)
		}
	}
}

const total = types.ReturnConsumedCapacityTotal

// GetItem implements API.
func (m *CapacityMeter) GetItem(ctx context.Context, in *dynamodb.GetItemInput, o ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	c := *in
	c.ReturnConsumedCapacity = total
	out, err := m.api.GetItem(ctx, &c, o...)
	if err == nil {
		m.add(true, out.ConsumedCapacity)
	}
	return out, err
}

// Query implements API.
func (m *CapacityMeter) Query(ctx context.Context, in *dynamodb.QueryInput, o ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error) {
	c := *in
	c.ReturnConsumedCapacity = total
	out, err := m.api.Query(ctx, &c, o...)
	if err == nil {
		m.add(true, out.ConsumedCapacity)
	}
	return out, err
}

// PutItem implements API.
func (m *CapacityMeter) PutItem(ctx context.Context, in *dynamodb.PutItemInput, o ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	c := *in
	c.ReturnConsumedCapacity = total
	out, err := m.api.PutItem(ctx, &c, o...)
	if err == nil {
		m.add(false, out.ConsumedCapacity)
	}
	return out, err
}

// UpdateItem implements API.
func (m *CapacityMeter) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, o ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	c := *in
	c.ReturnConsumedCapacity = total
	out, err := m.api.UpdateItem(ctx, &c, o...)
	if err == nil {
		m.add(false, out.ConsumedCapacity)
	}
	return out, err
}

// TransactWriteItems implements API.
func (m *CapacityMeter) TransactWriteItems(ctx context.Context, in *dynamodb.TransactWriteItemsInput, o ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error) {
	c := *in
	c.ReturnConsumedCapacity = total
	out, err := m.api.TransactWriteItems(ctx, &c, o...)
	if err == nil {
		ccs := make([]*types.ConsumedCapacity, len(out.ConsumedCapacity))
		for i := range out.ConsumedCapacity {
			ccs[i] = &out.ConsumedCapacity[i]
		}
		m.add(false, ccs...)
	}
	return out, err
}
