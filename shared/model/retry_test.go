package model_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/agentsfleet/agentsfleet/shared/model"
)

// flaky fails with errs in turn, then answers.
type flaky struct {
	errs  []error
	calls int
	text  string
}

func (f *flaky) Converse(_ context.Context, req model.Request) (model.Response, error) {
	f.calls++
	if f.calls <= len(f.errs) {
		if f.text != "" && req.OnText != nil {
			req.OnText(f.text)
		}
		return model.Response{}, f.errs[f.calls-1]
	}
	return model.Response{Message: model.Message{Role: model.Assistant, Content: []model.Part{{Text: "ok"}}}}, nil
}

func TestWithRetry(t *testing.T) {
	t.Parallel()
	limited := &model.Error{Provider: "openai", Status: 429, Retryable: true, RetryAfter: 3 * time.Second}
	server := &model.Error{Provider: "openai", Status: 503, Retryable: true}
	bad := &model.Error{Provider: "openai", Status: 400, Message: "bad tool schema"}
	for _, tc := range []struct {
		name      string
		errs      []error
		text      string
		deadline  time.Duration
		wantCalls int
		wantErr   error
		wantWaits []time.Duration // nil: not checked
	}{
		{name: "rate limit then answer", errs: []error{limited}, wantCalls: 2, wantWaits: []time.Duration{3 * time.Second}},
		{name: "server errors then answer", errs: []error{server, server}, wantCalls: 3},
		{name: "not retryable", errs: []error{bad}, wantCalls: 1, wantErr: bad},
		{name: "attempts run out", errs: []error{server, server, server, server, server, server, server}, wantCalls: 6, wantErr: server},
		{name: "the wait would pass the deadline", errs: []error{limited}, deadline: time.Second, wantCalls: 1, wantErr: limited},
		{name: "text already streamed", errs: []error{server}, text: "partial", wantCalls: 1, wantErr: server},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := &flaky{errs: tc.errs, text: tc.text}
			var waits []time.Duration
			m := model.WithRetry(f, model.RetryPolicy{Sleep: func(_ context.Context, d time.Duration) error {
				waits = append(waits, d)
				return nil
			}})
			ctx := context.Background()
			if tc.deadline > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, tc.deadline)
				defer cancel()
			}
			_, err := m.Converse(ctx, model.Request{OnText: func(string) {}})
			if f.calls != tc.wantCalls || !errors.Is(err, tc.wantErr) {
				t.Errorf("calls %d, err %v; want %d calls and %v", f.calls, err, tc.wantCalls, tc.wantErr)
			}
			if tc.wantWaits != nil && len(waits) != len(tc.wantWaits) {
				t.Errorf("waits %v, want %v", waits, tc.wantWaits)
			}
			for i := range min(len(waits), len(tc.wantWaits)) {
				if waits[i] != tc.wantWaits[i] {
					t.Errorf("wait %d = %v, want %v", i, waits[i], tc.wantWaits[i])
				}
			}
			for _, w := range waits {
				if w > 20*time.Second {
					t.Errorf("a wait of %v passes the 20 s cap", w)
				}
			}
		})
	}
}
