package invoke_test

import (
	"context"
	"testing"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/agentsfleet/agentsfleet/shared/invoke"
)

// A Handler is what lambda.Start takes as it is, so that a function's main
// registers the value the local stack registers.
var _ lambda.Handler = invoke.Handler(nil)

func TestHandlerInvoke(t *testing.T) {
	t.Parallel()
	h := invoke.Handler(func(_ context.Context, p []byte) ([]byte, error) { return append([]byte("got "), p...), nil })
	if out, err := h.Invoke(context.Background(), []byte(`{"run_id":"r"}`)); err != nil || string(out) != `got {"run_id":"r"}` {
		t.Fatalf("Invoke = %q, %v", out, err)
	}
}
