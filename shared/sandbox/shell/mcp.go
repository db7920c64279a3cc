package shell

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentsfleet/agentsfleet/shared/mcp"
	"github.com/agentsfleet/agentsfleet/shared/sandbox"
	"github.com/agentsfleet/agentsfleet/shared/sandbox/confine"
	"github.com/agentsfleet/agentsfleet/shared/sandbox/wire"
	"github.com/agentsfleet/agentsfleet/shared/tool"
)

// MCP runs a Definition's stdio MCP servers in the sandbox: one long-lived
// process per server, started by the first call that names it, spoken to
// over its standard input and output with the official Go SDK. Its two
// tools, wire.MCPStdioList and wire.MCPStdioCall, are the runner's: in no
// catalog, so no Definition can offer them to the model. Close stops every
// server. Safe for concurrent use.
//
// Security boundary: a server's process is started exactly as bash's
// commands are (Policy.Command: the same policy, uid, Landlock roots,
// seccomp filter, rlimits and scrubbed environment, in the workdir), so it
// can read and write what bash can and nothing more; it gets no secret
// (the runner sends none, and the environment is bash's). The command
// comes from the Definition, sent by the runner; the model chooses only a
// tool and its arguments, which reach the server as MCP data. What the
// server answers is bounded (a JSON-RPC message at maxMCPMessage, a
// result's text at wire.MaxMCPResult, standard error at mcpStderrKeep)
// and is the runner's to screen and fence: sandboxd neither trusts nor
// changes it.
type MCP struct {
	roots   *sandbox.Roots
	policy  *confine.Policy
	timeout time.Duration

	mu      sync.Mutex
	servers map[string]*stdioServer
	closed  bool
}

// NewMCP returns the stdio servers' runner: under policy, in the workdir of
// roots, each request bounded by timeout (the fleet's tool_timeout_seconds)
// or the call's own (sandbox.WithToolTimeout). Give it bash's three.
func NewMCP(roots *sandbox.Roots, policy *confine.Policy, timeout time.Duration) *MCP {
	return &MCP{roots: roots, policy: policy, timeout: timeout, servers: map[string]*stdioServer{}}
}

// Tools are the two tools over m: list and call. The list tool is an
// io.Closer, whose Close is m's, so that a server closing its tools stops
// the stdio servers once.
func (m *MCP) Tools() []tool.Tool { return []tool.Tool{mcpList{m}, mcpCall{m}} }

// Close stops the servers (MCP.Close).
func (t mcpList) Close() error { return t.m.Close() }

// Close stops every server; later calls answer that the sandbox is
// stopping.
func (m *MCP) Close() error {
	m.mu.Lock()
	m.closed = true
	servers := m.servers
	m.servers = map[string]*stdioServer{}
	m.mu.Unlock()
	for _, s := range servers {
		s.stop()
	}
	return nil
}

// Bounds of what a server sends.
const (
	// maxMCPMessage bounds one JSON-RPC message a server writes: past it
	// the connection fails rather than fill sandboxd's memory.
	maxMCPMessage = 8 << 20
	// mcpStderrKeep is how much of the end of a server's standard error is
	// kept.
	mcpStderrKeep = 16 << 10
	// mcpExitWait is how long a failed request waits to learn whether the
	// server exited (its output closes a moment before it is reaped).
	mcpExitWait = time.Second
)

// stdioServer is one server's process and session.
type stdioServer struct {
	name    string
	command []string
	ready   chan struct{} // closed once started, or failed to start
	err     error         // why it could not start; valid after ready
	group   *confine.Group
	cs      *sdk.ClientSession
	files   []*os.File // sandboxd's ends of the pipes
	stderr  *tailBuffer
	errRead chan struct{} // closed when standard error has been read to its end
	out     *lineLimit
	stopped chan struct{} // closed by stop
	once    sync.Once
}

// exited reports whether the process has exited (and why) once started.
func (s *stdioServer) exited() (string, bool) {
	select {
	case <-s.group.Done():
		return exitDescription(s.group.Err()), true
	default:
		return "", false
	}
}

// stop kills the process and closes the session, once.
func (s *stdioServer) stop() {
	s.once.Do(func() {
		close(s.stopped)
		<-s.ready
		if s.group != nil {
			s.group.Kill()
			<-s.group.Done()
		}
		if s.cs != nil {
			_ = s.cs.Close()
		}
		for _, f := range s.files {
			f.Close()
		}
	})
}

// start starts the process and opens the session within ctx. On failure
// everything it started is stopped, and the error says why (with the end
// of standard error when the process exited).
func (m *MCP) start(ctx context.Context, s *stdioServer, timeout time.Duration) error {
	cmd, err := m.policy.Command(s.command[0], s.command[1:]...)
	if err != nil {
		return err
	}
	cmd.Dir = m.roots.Workdir()
	inR, inW, err := os.Pipe()
	if err != nil {
		return fmt.Errorf("stdin pipe: %w", err)
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		return fmt.Errorf("stdout pipe: %w", err)
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		for _, f := range []*os.File{inR, inW, outR, outW} {
			f.Close()
		}
		return fmt.Errorf("stderr pipe: %w", err)
	}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = inR, outW, errW
	s.files = []*os.File{inW, outR, errR}
	g, err := confine.StartGroup(cmd)
	for _, f := range []*os.File{inR, outW, errW} {
		f.Close()
	}
	if err != nil {
		return fmt.Errorf("start %s: %w", s.command[0], err)
	}
	s.group = g
	s.errRead = make(chan struct{})
	go func() {
		defer close(s.errRead)
		_, _ = s.stderr.ReadFrom(errR)
	}()
	s.out = &lineLimit{r: outR, max: maxMCPMessage}
	t := &sdk.IOTransport{Reader: s.out, Writer: inW, MaxLineLength: 2 * maxMCPMessage}
	cs, err := mcp.NewClient().Connect(ctx, t, nil)
	if err != nil {
		if why, ok := s.waitExit(); ok {
			// What it wrote before it exited may still be in the pipe.
			select {
			case <-s.errRead:
			case <-time.After(mcpExitWait):
			}
			return fmt.Errorf("it %s before it answered initialize%s", why, s.stderrNote())
		}
		if ctx.Err() != nil {
			return fmt.Errorf("it did not answer initialize within %s (the fleet's tool timeout)%s", seconds(timeout), s.stderrNote())
		}
		return fmt.Errorf("initialize: %v%s", err, s.stderrNote())
	}
	s.cs = cs
	return nil
}

// waitExit waits a moment for the process to exit, and says how it did.
func (s *stdioServer) waitExit() (string, bool) {
	select {
	case <-s.group.Done():
	case <-time.After(mcpExitWait):
	}
	return s.exited()
}

// stderrNote is the end of the server's standard error, as a clause of an
// error, or "" when it wrote none.
func (s *stdioServer) stderrNote() string {
	tail := strings.TrimSpace(s.stderr.Tail(wire.MCPStderrTail))
	if tail == "" {
		return "; it wrote nothing on standard error"
	}
	return "; its standard error ends:\n" + tail
}

// session returns the running server name with command, starting it when
// it is not running (the first call, a server that exited, another
// command). note is a line telling the call that the server was started
// again, "" otherwise. A server that cannot be started is the error.
func (m *MCP) session(ctx context.Context, name string, command []string, timeout time.Duration) (s *stdioServer, note string, err error) {
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return nil, "", errors.New("the sandbox is stopping")
	}
	old := m.servers[name]
	if old != nil {
		select {
		case <-old.ready:
			switch why, gone := old.exitedIfStarted(); {
			case old.err != nil:
				// It failed to start: this call tries again.
			case gone:
				note = fmt.Sprintf("[the MCP server %s %s since the last call; it was started again for this one]\n", name, why)
			case !slices.Equal(old.command, command):
			default:
				m.mu.Unlock()
				return old, "", nil
			}
		default:
			if slices.Equal(old.command, command) {
				m.mu.Unlock()
				select {
				case <-old.ready:
				case <-ctx.Done():
					return nil, "", fmt.Errorf("it was still starting when the call's time ran out")
				}
				if old.err != nil {
					return nil, "", old.err
				}
				return old, "", nil
			}
		}
		delete(m.servers, name)
		go old.stop()
	}
	s = &stdioServer{name: name, command: slices.Clone(command), ready: make(chan struct{}), stopped: make(chan struct{}),
		stderr: &tailBuffer{max: mcpStderrKeep}}
	m.servers[name] = s
	m.mu.Unlock()
	s.err = m.start(ctx, s, timeout)
	close(s.ready)
	if s.err != nil {
		m.drop(s)
		return nil, "", s.err
	}
	return s, note, nil
}

// exitedIfStarted is exited for a server that started.
func (s *stdioServer) exitedIfStarted() (string, bool) {
	if s.group == nil {
		return "", false
	}
	return s.exited()
}

// drop stops s and forgets it, when it is still the server of its name.
func (m *MCP) drop(s *stdioServer) {
	m.mu.Lock()
	if m.servers[s.name] == s {
		delete(m.servers, s.name)
	}
	m.mu.Unlock()
	s.stop()
}

// request runs do against the server named by args within the call's tool
// timeout, and turns what failed into an error result for the model: a
// server that exited, one that did not answer in time (it is stopped), one
// that could not start. The next call starts a stopped or exited server
// again.
func (m *MCP) request(ctx context.Context, op, name string, command []string, do func(context.Context, *stdioServer) (tool.Result, error)) tool.Result {
	timeout := sandbox.ToolTimeout(ctx, m.timeout)
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeoutCause(ctx, timeout, errToolTimeout)
		defer cancel()
	}
	s, note, err := m.session(ctx, name, command, timeout)
	if err != nil {
		return tool.Errorf("%s: the MCP server %s (%s) could not be started: %v. The next call tries again", op, name, strings.Join(command, " "), err)
	}
	res, err := do(ctx, s)
	if err == nil {
		res.Output = note + res.Output
		return res
	}
	var rpcErr *jsonrpc.Error
	switch {
	case s.out.over.Load():
		m.drop(s)
		return tool.Errorf("%s%s: the MCP server %s wrote a message larger than %d MiB, the most sandboxd reads, so it was stopped; the next call starts it again", note, op, name, maxMCPMessage>>20)
	case errors.Is(err, mcp.ErrUnknownTool):
		return tool.Errorf("%s%s: %v", wire.MCPUnknownTool, op, err)
	case errors.As(err, &rpcErr):
		// The server answered: it runs on.
		return tool.Errorf("%s%s: the MCP server %s answered an error: %v", note, op, name, err)
	case context.Cause(ctx) == errToolTimeout:
		if why, gone := s.exited(); gone {
			m.drop(s)
			return tool.Errorf("%s%s: the MCP server %s %s%s. The next call starts it again", note, op, name, why, s.stderrNote())
		}
		m.drop(s)
		return tool.Errorf("%s%s: the MCP server %s did not answer within %s (the fleet's tool timeout), so it was stopped; the next call starts it again", note, op, name, seconds(timeout))
	}
	if why, gone := s.waitExit(); gone {
		m.drop(s)
		return tool.Errorf("%s%s: the MCP server %s %s%s. The next call starts it again", note, op, name, why, s.stderrNote())
	}
	if ctx.Err() != nil {
		return tool.Errorf("%s%s: stopped before the MCP server %s answered (%v)", note, op, name, context.Cause(ctx))
	}
	return tool.Errorf("%s%s: the MCP server %s failed: %v", note, op, name, err)
}

// decodeStrict reads raw into v, refusing unknown fields.
func decodeStrict(op string, raw json.RawMessage, v any) (tool.Result, bool) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return tool.Errorf("%s: the call is not of its form: %v", op, err), false
	}
	return tool.Result{}, true
}

func checkStdio(op, server string, command []string) (tool.Result, bool) {
	switch {
	case server == "":
		return tool.Errorf("%s: the call names no server", op), false
	case len(command) == 0 || strings.TrimSpace(command[0]) == "":
		return tool.Errorf("%s: the call gives server %s no command", op, server), false
	case slices.ContainsFunc(command, func(c string) bool { return strings.ContainsRune(c, 0) }):
		return tool.Errorf("%s: the command must not contain a NUL character", op), false
	}
	return tool.Result{}, true
}

// mcpList is wire.MCPStdioList.
type mcpList struct{ m *MCP }

func (mcpList) Name() string { return wire.MCPStdioList }
func (mcpList) Description() string {
	return "Lists the tools of one of the Definition's stdio MCP servers, starting it in the sandbox when it is not running. The runner calls it; the model calls the servers' tools by their mcp__<server>__<tool> names."
}

var mcpListSchema = json.RawMessage(`{"type":"object","properties":{"server":{"type":"string","minLength":1},"command":{"type":"array","items":{"type":"string"},"minItems":1}},"required":["server","command"],"additionalProperties":false}`)

func (mcpList) Schema() json.RawMessage { return mcpListSchema }
func (mcpList) Info() tool.Info {
	return tool.Info{Name: wire.MCPStdioList, RunsIn: tool.InSandbox, Scope: tool.ScopeExecute,
		Summary: "Lists a stdio MCP server's tools (the runner's, not offered to the model)"}
}

func (t mcpList) Check(raw json.RawMessage) (tool.Result, bool) {
	_, res, ok := t.decode(raw)
	return res, ok
}

func (t mcpList) decode(raw json.RawMessage) (wire.MCPStdioListArgs, tool.Result, bool) {
	var a wire.MCPStdioListArgs
	if res, ok := decodeStrict(wire.MCPStdioList, raw, &a); !ok {
		return a, res, false
	}
	res, ok := checkStdio(wire.MCPStdioList, a.Server, a.Command)
	return a, res, ok
}

func (t mcpList) Run(ctx context.Context, raw json.RawMessage) (tool.Result, error) {
	a, res, ok := t.decode(raw)
	if !ok {
		return res, nil
	}
	op := "MCP server " + a.Server
	return t.m.request(ctx, op, a.Server, a.Command, func(ctx context.Context, s *stdioServer) (tool.Result, error) {
		tools, err := mcp.ListSession(ctx, s.cs)
		if err != nil {
			return tool.Result{}, err
		}
		out := make([]wire.MCPTool, len(tools))
		for i, t := range tools {
			out[i] = wire.MCPTool{Name: t.Name, Description: t.Description, InputSchema: t.InputSchema}
		}
		b, err := json.Marshal(out)
		if err != nil {
			return tool.Result{}, fmt.Errorf("encode its tools: %w", err)
		}
		return tool.Text(string(b)), nil
	}), nil
}

// mcpCall is wire.MCPStdioCall.
type mcpCall struct{ m *MCP }

func (mcpCall) Name() string { return wire.MCPStdioCall }
func (mcpCall) Description() string {
	return "Calls a tool of one of the Definition's stdio MCP servers in the sandbox, starting the server when it is not running. The runner calls it for the model's mcp__<server>__<tool> calls."
}

var mcpCallSchema = json.RawMessage(`{"type":"object","properties":{"server":{"type":"string","minLength":1},"command":{"type":"array","items":{"type":"string"},"minItems":1},"tool":{"type":"string","minLength":1},"arguments":{"type":"object"}},"required":["server","command","tool"],"additionalProperties":false}`)

func (mcpCall) Schema() json.RawMessage { return mcpCallSchema }
func (mcpCall) Info() tool.Info {
	return tool.Info{Name: wire.MCPStdioCall, RunsIn: tool.InSandbox, Scope: tool.ScopeExecute,
		Summary: "Calls a stdio MCP server's tool (the runner's, not offered to the model)"}
}

func (t mcpCall) Check(raw json.RawMessage) (tool.Result, bool) {
	_, res, ok := t.decode(raw)
	return res, ok
}

func (t mcpCall) decode(raw json.RawMessage) (wire.MCPStdioCallArgs, tool.Result, bool) {
	var a wire.MCPStdioCallArgs
	if res, ok := decodeStrict(wire.MCPStdioCall, raw, &a); !ok {
		return a, res, false
	}
	if res, ok := checkStdio(wire.MCPStdioCall, a.Server, a.Command); !ok {
		return a, res, false
	}
	if a.Tool == "" {
		return a, tool.Errorf("%s: the call names no tool", wire.MCPStdioCall), false
	}
	if len(a.Arguments) > 0 && !wire.IsObject(a.Arguments) {
		return a, tool.Errorf("mcp__%s__%s: the arguments must be a JSON object", a.Server, a.Tool), false
	}
	return a, tool.Result{}, true
}

func (t mcpCall) Run(ctx context.Context, raw json.RawMessage) (tool.Result, error) {
	a, res, ok := t.decode(raw)
	if !ok {
		return res, nil
	}
	op := "mcp__" + a.Server + "__" + a.Tool
	return t.m.request(ctx, op, a.Server, a.Command, func(ctx context.Context, s *stdioServer) (tool.Result, error) {
		r, err := mcp.CallSession(ctx, s.cs, a.Tool, a.Arguments)
		if err != nil {
			return tool.Result{}, err
		}
		text := r.Text
		if len(text) > wire.MaxMCPResult {
			n := wire.MaxMCPResult
			for n > 0 && !utf8.RuneStart(text[n]) {
				n--
			}
			text = text[:n] + "\n[result cut at 1 MiB: it was longer]"
		}
		if text == "" {
			text = "[the tool answered no content]"
		}
		return tool.Result{Output: text, IsError: r.IsError}, nil
	}), nil
}

// exitDescription says how a process ended, from its Wait error.
func exitDescription(err error) string {
	code, werr := exitCode(err)
	switch {
	case werr != nil:
		return "exited (" + werr.Error() + ")"
	case code > 128:
		return fmt.Sprintf("was killed by signal %d", code-128)
	}
	return fmt.Sprintf("exited with code %d", code)
}

// lineLimit reads r and fails once a line (a JSON-RPC message) grows past
// max bytes, noting it in over.
type lineLimit struct {
	r    io.ReadCloser
	max  int
	line int
	over atomic.Bool
}

func (l *lineLimit) Read(p []byte) (int, error) {
	if l.over.Load() {
		return 0, errors.New("a message is too large")
	}
	n, err := l.r.Read(p)
	if i := bytes.LastIndexByte(p[:n], '\n'); i >= 0 {
		l.line = n - i - 1
	} else {
		l.line += n
	}
	if l.line > l.max {
		l.over.Store(true)
		return 0, errors.New("a message is too large")
	}
	return n, err
}

func (l *lineLimit) Close() error { return l.r.Close() }

// tailBuffer keeps the last max bytes written to it. Safe for concurrent
// use.
type tailBuffer struct {
	mu  sync.Mutex
	max int
	b   []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if over := len(t.b) - t.max; over > 0 {
		t.b = append(t.b[:0], t.b[over:]...)
	}
	return len(p), nil
}

// ReadFrom copies r into t until r ends.
func (t *tailBuffer) ReadFrom(r *os.File) (int64, error) {
	buf := make([]byte, 4096)
	var n int64
	for {
		k, err := r.Read(buf)
		if k > 0 {
			_, _ = t.Write(buf[:k])
			n += int64(k)
		}
		if err != nil {
			return n, nil
		}
	}
}

// Tail is the last n bytes or fewer, not starting inside a character.
func (t *tailBuffer) Tail(n int) string {
	t.mu.Lock()
	defer t.mu.Unlock()
	b := t.b
	if len(b) > n {
		b = b[len(b)-n:]
		for len(b) > 0 && !utf8.RuneStart(b[0]) {
			b = b[1:]
		}
	}
	return strings.ToValidUTF8(string(b), "")
}
