package shell

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/agentsfleet/agentsfleet/shared/sandbox"
	"github.com/agentsfleet/agentsfleet/shared/sandbox/confine"
	"github.com/agentsfleet/agentsfleet/shared/sandbox/wire"
	"github.com/agentsfleet/agentsfleet/shared/tool"
)

// Declared is sandboxd's tool wire.DeclaredTool: it runs a Definition's
// declared tool, the command the runner sends with the model's arguments,
// exactly as Bash runs a command. It is no contract of the catalog: the
// runner calls it for every declared tool, and no Definition can offer it
// to the model. Safe for concurrent use.
//
// Security boundary: the command runs under the very policy, workdir,
// output cap and timeout as bash's, with a scrubbed environment holding
// nothing but the arguments besides bash's; it gets no secret value (the
// runner sends none). The arguments are data: they reach the command on
// its standard input and in variables, never in its command line.
type Declared struct {
	roots   *sandbox.Roots
	policy  *confine.Policy
	timeout time.Duration
}

var _ tool.Tool = (*Declared)(nil)

// NewDeclared returns the tool that runs declared tools: under policy, in
// the workdir of roots, killed with their process group after timeout
// (the fleet's tool_timeout_seconds; zero means none), or after the
// call's own (sandbox.WithToolTimeout). Give it bash's three.
func NewDeclared(roots *sandbox.Roots, policy *confine.Policy, timeout time.Duration) *Declared {
	return &Declared{roots: roots, policy: policy, timeout: timeout}
}

// Name is wire.DeclaredTool.
func (t *Declared) Name() string { return wire.DeclaredTool }

// Description says what the tool is for; the model is never told it.
func (t *Declared) Description() string {
	return "Runs one of the Definition's declared tools, as bash runs a command, with the model's arguments on standard input and in the environment. The runner calls it; the model calls the declared tools by their own names."
}

// declaredSchema is the schema of wire.DeclaredArgs.
var declaredSchema = json.RawMessage(`{"type":"object","properties":{"name":{"type":"string","minLength":1},"command":{"type":"string","minLength":1,"pattern":"\\S"},"arguments":{"type":"object"}},"required":["name","command","arguments"],"additionalProperties":false}`)

// Schema is the JSON Schema of wire.DeclaredArgs.
func (t *Declared) Schema() json.RawMessage { return declaredSchema }

// Info says the tool runs in the sandbox and needs what bash needs.
func (t *Declared) Info() tool.Info {
	return tool.Info{Name: wire.DeclaredTool, RunsIn: tool.InSandbox, Scope: tool.ScopeExecute,
		Summary: "Runs a Definition's declared tool (the runner's, not offered to the model)"}
}

// Check validates args as Run does, without running anything.
func (t *Declared) Check(args json.RawMessage) (tool.Result, bool) {
	_, _, res, ok := t.decode(args)
	return res, ok
}

// Run runs the declared tool's command. Arguments that cannot be passed, a
// non-zero exit and a timeout are error results; a failure to start the
// shell is a Go error.
func (t *Declared) Run(ctx context.Context, raw json.RawMessage) (tool.Result, error) {
	args, env, res, ok := t.decode(raw)
	if !ok {
		return res, nil
	}
	cmd, err := t.policy.Command("/bin/sh", "-c", args.Command)
	if err != nil {
		return tool.Result{}, fmt.Errorf("declared %s: %w", args.Name, err)
	}
	cmd.Dir = t.roots.Workdir()
	cmd.Env = append(cmd.Env, env...)
	stdin, err := inputPipe(args.Arguments)
	if err != nil {
		return tool.Result{}, fmt.Errorf("declared %s: %w", args.Name, err)
	}
	defer stdin.Close()
	cmd.Stdin = stdin
	return runGroup(ctx, "declared "+args.Name, cmd, t.timeout)
}

// decode reads and checks raw, returning the call with its arguments
// compacted and the variables that carry them.
func (t *Declared) decode(raw json.RawMessage) (args wire.DeclaredArgs, env []string, res tool.Result, ok bool) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&args); err != nil {
		return args, nil, tool.Errorf("%s: the call is not {name, command, arguments}: %v", wire.DeclaredTool, err), false
	}
	if dec.More() {
		return args, nil, tool.Errorf("%s: data after the call's JSON object", wire.DeclaredTool), false
	}
	name := args.Name
	switch {
	case name == "":
		return args, nil, tool.Errorf("%s: the call names no tool", wire.DeclaredTool), false
	case strings.TrimSpace(args.Command) == "":
		return args, nil, tool.Errorf("%s: the call has no command", name), false
	case strings.ContainsRune(args.Command, 0):
		return args, nil, tool.Errorf("%s: the command must not contain a NUL character", name), false
	case !wire.IsObject(args.Arguments):
		return args, nil, tool.Errorf("%s: the arguments must be a JSON object", name), false
	}
	var compact bytes.Buffer
	if err := json.Compact(&compact, args.Arguments); err != nil {
		return args, nil, tool.Errorf("%s: the arguments are not JSON: %v", name, err), false
	}
	if compact.Len() > wire.MaxDeclaredArguments {
		return args, nil, tool.Errorf("%s: the arguments are %d bytes of JSON; a declared tool takes at most %d", name, compact.Len(), wire.MaxDeclaredArguments), false
	}
	args.Arguments = compact.Bytes()
	var top map[string]json.RawMessage
	if err := json.Unmarshal(args.Arguments, &top); err != nil {
		return args, nil, tool.Errorf("%s: the arguments are not a JSON object: %v", name, err), false
	}
	keys := make([]string, 0, len(top))
	for k := range top {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	env = make([]string, 0, len(top)+1)
	seen := map[string]string{}
	for _, k := range keys {
		if msg := sandbox.ArgProblem(k); msg != "" {
			return args, nil, tool.Errorf("%s: argument %s", name, msg), false
		}
		v := sandbox.DeclaredArgEnvPrefix + strings.ToUpper(k)
		if other, dup := seen[v]; dup {
			return args, nil, tool.Errorf("%s: arguments %q and %q differ only in case, so both would be the variable %s", name, other, k, v), false
		}
		seen[v] = k
		value := string(top[k])
		var s string
		if json.Unmarshal(top[k], &s) == nil {
			if strings.ContainsRune(s, 0) {
				return args, nil, tool.Errorf("%s: argument %q holds a NUL character, which no environment variable can", name, k), false
			}
			value = s
		}
		env = append(env, v+"="+value)
	}
	env = append(env, sandbox.DeclaredArgsEnv+"="+string(args.Arguments))
	return args, env, tool.Result{}, true
}

// inputPipe returns the read end of a pipe holding data and then its end:
// the command's standard input. data is at most wire.MaxDeclaredArguments,
// which a pipe holds (its capacity is raised where the kernel lets it), so
// it is written before the command starts and no goroutine is left
// feeding a command that never reads it.
func inputPipe(data []byte) (*os.File, error) {
	pr, pw, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("stdin pipe: %w", err)
	}
	defer pw.Close()
	if rc, err := pw.SyscallConn(); err == nil {
		_ = rc.Control(func(fd uintptr) { setPipeSize(fd, wire.MaxDeclaredArguments) })
	}
	// A pipe that still held less would block the write: fail instead.
	_ = pw.SetWriteDeadline(time.Now().Add(time.Second))
	if _, err := pw.Write(data); err != nil {
		pr.Close()
		return nil, fmt.Errorf("stdin pipe: write the arguments: %w", err)
	}
	return pr, nil
}

// setPipeSize asks for a pipe of at least n bytes.
func setPipeSize(fd uintptr, n int) { _, _ = unix.FcntlInt(fd, unix.F_SETPIPE_SZ, n) }
