package sandbox

import (
	"context"
	"time"
)

// toolTimeoutKey is the context key of WithToolTimeout.
type toolTimeoutKey struct{}

// WithToolTimeout returns ctx saying that the call made with it has the
// tool timeout d, the fleet's (wire.ToolTimeoutHeader): glob, grep and
// bash stop at d, and exec_command and write_stdin answer by then, instead
// of at the timeout they were built with, whether d is shorter or longer.
// d of zero or less leaves ctx as it is.
func WithToolTimeout(ctx context.Context, d time.Duration) context.Context {
	if d <= 0 {
		return ctx
	}
	return context.WithValue(ctx, toolTimeoutKey{}, d)
}

// ToolTimeout is the tool timeout of the call made with ctx: the one
// WithToolTimeout put in it, else def (the tool's own, sandboxd
// --timeout's).
func ToolTimeout(ctx context.Context, def time.Duration) time.Duration {
	if d, ok := ctx.Value(toolTimeoutKey{}).(time.Duration); ok {
		return d
	}
	return def
}
