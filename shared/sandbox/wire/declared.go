package wire

import "encoding/json"

// A Definition's declared tools ([[tools.declared]]) run in sandboxd
// through one tool of its own, which the runner calls and the model never
// sees (it is in no catalog and no Definition can allow it):
//
//	POST ToolPath(DeclaredTool)   body: DeclaredArgs
//	                              → 200 a tool.Result, as bash's
//
// as any tool call, with the same headers (Idempotency-Key, the tool
// timeout) and the same answers. The command comes from the Definition
// (the runner sends it), the arguments from the model, checked by the
// runner against the tool's schema first. sandboxd runs the command
// exactly as bash runs one (/bin/sh -c in the workdir, the same
// confinement, environment, output cap and timeout) with:
//
//   - standard input: the arguments, the JSON object as sent, compacted;
//   - sandbox.DeclaredArgsEnv (AGENTSFLEET_ARGS): the same JSON;
//   - sandbox.DeclaredArgEnvPrefix + NAME (AGENTSFLEET_ARG_NAME) for each
//     top-level argument, NAME its name in upper case: a string as it is,
//     anything else as its JSON.
//
// The result is the combined output and a last line [exit code N], cut as
// bash's; a non-zero exit, a timeout or arguments that cannot be passed
// (sandbox.ArgProblem, more than MaxDeclaredArguments bytes, a NUL in a string,
// two names that differ only in case) are error results naming the tool.
const (
	// DeclaredTool is the name of sandboxd's tool that runs declared tools.
	DeclaredTool = "declared"
	// MaxDeclaredArguments bounds the arguments' JSON: they travel in the
	// environment twice and through a pipe written before the command
	// starts (whose capacity is at least this).
	MaxDeclaredArguments = 64 << 10
)

// DeclaredArgs are the arguments of DeclaredTool. Every field is required;
// no other is accepted.
type DeclaredArgs struct {
	// Name is the declared tool's name, as the model called it; results
	// and messages name it.
	Name string `json:"name"`
	// Command is the Definition's command line for it.
	Command string `json:"command"`
	// Arguments are the model's arguments: one JSON object.
	Arguments json.RawMessage `json:"arguments"`
}
