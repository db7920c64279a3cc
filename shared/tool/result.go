package tool

import "fmt"

// Result is what a tool call returns to the model: text plus an error flag.
// It is also the JSON answer of sandboxd and of the webtools λ:
// {"output": "…", "is_error": false}.
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
