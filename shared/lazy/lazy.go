// Package lazy makes a value on its first use. The Lambda functions build
// what needs an AWS call (a secret, a client that reads one) through it, so
// that a cold start makes no request and a request that does not need a
// value never waits for it.
package lazy

import (
	"context"
	"sync"
)

// Value is a value made by its function on the first Get that needs it.
// A make that fails is not kept: the next Get tries again, so that a
// throttled or briefly unreachable AWS API does not break a container for
// its whole life. Safe for concurrent use: one make at a time, and callers
// wait for it.
type Value[T any] struct {
	mu   sync.Mutex
	make func(context.Context) (T, error)
	done bool
	v    T
}

// New is the Value make makes.
func New[T any](make func(context.Context) (T, error)) *Value[T] {
	return &Value[T]{make: make}
}

// Get returns the value, making it first unless an earlier Get has. ctx
// is the make's, so a cancelled request stops its own attempt only.
func (l *Value[T]) Get(ctx context.Context) (T, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.done {
		return l.v, nil
	}
	v, err := l.make(ctx)
	if err != nil {
		var zero T
		return zero, err
	}
	l.v, l.done = v, true
	return v, nil
}
