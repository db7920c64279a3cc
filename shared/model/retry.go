package model

import (
	"context"
	"errors"
	"math/rand/v2"
	"time"
)

// RetryPolicy says how WithRetry retries.
type RetryPolicy struct {
	// Attempts is the most calls made, the first included; 0 means 6.
	Attempts int
	// Base is the first wait; each later wait doubles, with jitter; 0
	// means 500 ms.
	Base time.Duration
	// Max caps one wait; 0 means 20 s.
	Max time.Duration
	// Sleep waits d or until ctx is done; nil means a timer. Tests pass
	// one that records the waits.
	Sleep func(ctx context.Context, d time.Duration) error
}

// WithRetry returns m retrying the errors that IsRetryable: rate limits,
// overload and server errors. It waits what the provider asked
// (Error.RetryAfter) or an exponential backoff with jitter, and never
// past ctx's deadline: when the next wait would end after it, it returns
// the last error instead of waiting for nothing. A call that streamed text
// to Request.OnText is not retried, since the text already reached the
// caller.
func WithRetry(m Model, p RetryPolicy) Model {
	if p.Attempts <= 0 {
		p.Attempts = 6
	}
	if p.Base <= 0 {
		p.Base = 500 * time.Millisecond
	}
	if p.Max <= 0 {
		p.Max = 20 * time.Second
	}
	if p.Sleep == nil {
		p.Sleep = sleep
	}
	return &retrying{m: m, p: p}
}

type retrying struct {
	m Model
	p RetryPolicy
}

func (r *retrying) Converse(ctx context.Context, req Request) (Response, error) {
	streamed := false
	if onText := req.OnText; onText != nil {
		req.OnText = func(d string) { streamed = true; onText(d) }
	}
	wait := r.p.Base
	for attempt := 1; ; attempt++ {
		resp, err := r.m.Converse(ctx, req)
		if err == nil || !IsRetryable(err) || streamed || attempt == r.p.Attempts {
			return resp, err
		}
		d := min(wait+rand.N(wait/2+1), r.p.Max)
		if me := (*Error)(nil); errors.As(err, &me) && me.RetryAfter > 0 {
			d = me.RetryAfter
		}
		if dl, ok := ctx.Deadline(); ok && time.Until(dl) < d {
			return resp, err
		}
		if serr := r.p.Sleep(ctx, d); serr != nil {
			return resp, err
		}
		wait = min(wait*2, r.p.Max)
	}
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
