package invoke

import (
	"context"
	"fmt"
	"log/slog"
	"sort"
	"strings"
	"sync"
)

// Handler is a function as Local runs it: the same handler the Lambda's
// main serves. It is a lambda.Handler of aws-lambda-go (Invoke), so that a
// main gives lambda.Start the very value the local stack registers:
// lambda.Start(invoke.Handler(r.Handle)).
type Handler func(ctx context.Context, payload []byte) ([]byte, error)

// Invoke calls h: the payload as Lambda delivered it, the answer as it is
// returned to the caller.
func (h Handler) Invoke(ctx context.Context, payload []byte) ([]byte, error) { return h(ctx, payload) }

// Local runs functions in this process. Start runs the call on a goroutine
// with a context that is not cancelled with the caller's (a queued Lambda
// call outlives its caller too) but is with Close. Safe for concurrent use.
type Local struct {
	mu       sync.Mutex
	handlers map[string]Handler
	wg       sync.WaitGroup
	ctx      context.Context
	cancel   context.CancelFunc
	log      *slog.Logger
}

var _ Invoker = (*Local)(nil)

// NewLocal returns a Local with no functions; log receives the errors of
// started calls (nil: slog.Default()).
func NewLocal(log *slog.Logger) *Local {
	if log == nil {
		log = slog.Default()
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Local{handlers: map[string]Handler{}, ctx: ctx, cancel: cancel, log: log}
}

// Register makes function call h. Registering a name again replaces it.
func (l *Local) Register(function string, h Handler) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.handlers[function] = h
}

// Has reports whether function is registered.
func (l *Local) Has(function string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	_, ok := l.handlers[function]
	return ok
}

func (l *Local) handler(function string) (Handler, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	h, ok := l.handlers[function]
	if !ok {
		names := make([]string, 0, len(l.handlers))
		for n := range l.handlers {
			names = append(names, n)
		}
		sort.Strings(names)
		return nil, fmt.Errorf("%w %q (registered: %s)", ErrUnknownFunction, function, strings.Join(names, ", "))
	}
	return h, nil
}

// Call runs function's handler and returns its answer; a handler's error
// becomes a *FunctionError, as Lambda reports it.
func (l *Local) Call(ctx context.Context, function string, payload []byte) ([]byte, error) {
	h, err := l.handler(function)
	if err != nil {
		return nil, err
	}
	out, err := h(ctx, payload)
	if err != nil {
		return nil, &FunctionError{Function: function, Message: err.Error()}
	}
	return out, nil
}

// Start runs function's handler on its own goroutine and returns at once.
// The payload is copied. After Close, Start refuses.
func (l *Local) Start(_ context.Context, function string, payload []byte) error {
	h, err := l.handler(function)
	if err != nil {
		return err
	}
	if l.ctx.Err() != nil {
		return fmt.Errorf("start %s: the local functions are closed", function)
	}
	payload = append([]byte(nil), payload...)
	l.wg.Add(1)
	go func() {
		defer l.wg.Done()
		if _, err := h(l.ctx, payload); err != nil {
			l.log.Error("function failed", "function", function, "error", err)
		}
	}()
	return nil
}

// Close cancels the started calls' context and waits for them to return.
func (l *Local) Close() {
	l.cancel()
	l.wg.Wait()
}

// Wait waits for the started calls to return, without cancelling them.
func (l *Local) Wait() { l.wg.Wait() }
