package sandbox

import (
	"context"
	"encoding/json"
	"fmt"
)

// Result is what a tool call returns to the model: text plus an error flag.
// It is also the JSON body sandboxd answers with.
type Result struct {
	Output  string `json:"output"`
	IsError bool   `json:"is_error"`
}

// Text returns a normal result.
func Text(output string) Result { return Result{Output: output} }

// Errorf returns an error result: a mistake the model can see and fix, such
// as a missing argument or a path outside the agent's data. A broken
// environment is a Go error instead.
func Errorf(format string, args ...any) Result {
	return Result{Output: fmt.Sprintf(format, args...), IsError: true}
}

// Tool is one named action. Run validates args (the tool's JSON arguments)
// before doing anything; bad arguments give an error Result, not an error.
// Run returns a non-nil error only when the environment is broken. Tools are
// safe for concurrent use.
type Tool interface {
	Name() string
	// Description is the model-facing description of the tool.
	Description() string
	Run(ctx context.Context, args json.RawMessage) (Result, error)
}

// DecodeArgs decodes a tool's JSON arguments strictly into v: unknown fields,
// trailing data and a body that is not a JSON object are refused. The
// returned Result (valid when ok is false) says what is wrong, naming tool.
func DecodeArgs(tool string, args json.RawMessage, v any) (res Result, ok bool) {
	if len(args) == 0 {
		args = json.RawMessage("{}")
	}
	dec := json.NewDecoder(bytesReader(args))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return Errorf("%s: invalid arguments: %s", tool, describeJSONError(err)), false
	}
	if dec.More() {
		return Errorf("%s: invalid arguments: unexpected data after the JSON object", tool), false
	}
	return Result{}, true
}

// Count reads an optional count argument named arg of tool: def when it is
// absent, most when larger (the spec's caps clamp, they do not refuse), and
// an error result (ok false) when it is below 1.
func Count(tool, arg string, v *int, def, most int) (n int, res Result, ok bool) {
	if v == nil {
		return def, Result{}, true
	}
	if *v < 1 {
		return 0, Errorf("%s: %s must be 1 or more, not %d", tool, arg, *v), false
	}
	return min(*v, most), Result{}, true
}
