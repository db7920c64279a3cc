// Package invoke calls agentsfleet's functions by name: through AWS Lambda's
// Invoke API in AWS (Lambda), or as in-process calls on one machine (Local),
// as `agentsfleet dev` and `agentsfleet run` do and as tests do. The runner
// calls the webtools function and re-invokes itself through it; the API
// starts runs through it.
//
// Names are logical ("runner", "webtools", "slack"); Lambda maps them to the
// deployment's function names or ARNs, which FromEnv reads from the
// AGENTSFLEET_FUNCTION_* settings. A Handler is a function's handler as
// both its Lambda main and Local register it.
package invoke

import (
	"context"
	"errors"
)

// The functions agentsfleet calls.
const (
	Runner   = "runner"
	Webtools = "webtools"
	Slack    = "slack"
	// Schedule is called by the local stack's clock, as EventBridge
	// Scheduler calls it in AWS.
	Schedule = "schedule"
)

// Invoker calls functions. Implementations are safe for concurrent use.
type Invoker interface {
	// Call calls function with payload and waits for its answer
	// (Lambda's RequestResponse). A function that failed gives a
	// *FunctionError.
	Call(ctx context.Context, function string, payload []byte) ([]byte, error)
	// Start queues a call of function with payload and returns without its
	// answer (Lambda's Event invocation). Such calls may arrive more than
	// once, as Lambda's may: the function must be idempotent.
	Start(ctx context.Context, function string, payload []byte) error
}

// ErrUnknownFunction is wrapped by the error for a name no function has.
var ErrUnknownFunction = errors.New("unknown function")

// FunctionError is a function that ran and failed: its own error message,
// as Lambda reports an unhandled error.
type FunctionError struct {
	Function string
	Message  string
}

func (e *FunctionError) Error() string { return "function " + e.Function + " failed: " + e.Message }
