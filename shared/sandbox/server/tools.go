package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"os"
	"slices"
	"sort"
	"time"

	"github.com/agentsfleet/agentsfleet/shared/sandbox"
	"github.com/agentsfleet/agentsfleet/shared/sandbox/browser"
	"github.com/agentsfleet/agentsfleet/shared/sandbox/confine"
	"github.com/agentsfleet/agentsfleet/shared/sandbox/files"
	"github.com/agentsfleet/agentsfleet/shared/sandbox/patch"
	"github.com/agentsfleet/agentsfleet/shared/sandbox/session"
	"github.com/agentsfleet/agentsfleet/shared/sandbox/shell"
	"github.com/agentsfleet/agentsfleet/shared/sandbox/wire"
	"github.com/agentsfleet/agentsfleet/shared/tool"
)

// DefaultTimeout is the tool timeout when the fleet sets none
// (tool_timeout_seconds), as the wire contract states it.
const DefaultTimeout = wire.DefaultToolTimeout

// Config is what the tools of one sandboxd share.
type Config struct {
	Roots *sandbox.Roots
	// Timeout is the fleet's tool_timeout_seconds: bash and grep are
	// killed after it, glob stops, exec_command and write_stdin answer by
	// then. Zero means DefaultTimeout. A call's own (wire.ToolTimeoutHeader,
	// sandbox.WithToolTimeout) wins over it, for that call.
	Timeout time.Duration
	// UID and GID are who commands run as when sandboxd runs as root
	// (--user); zero means confine.NobodyID.
	UID, GID int
	// Policy confines the processes the tools start; nil means
	// PolicyFor(cfg).
	Policy *confine.Policy
	// Browser is the Chromium that browser_open and screenshot drive
	// (sandboxd serve --browser PATH): started by the first browser_open,
	// confined like bash's commands. Empty: the sandbox has no browser,
	// and both answer sandbox.NoBrowser.
	Browser string
	// BrowserAllow is the one loopback address the browser may reach
	// (egress.AllowFromEnv, for tests' servers); the zero value allows
	// none.
	BrowserAllow netip.AddrPort
	// Logger logs what the browser does (starts, crashes); nil means
	// slog.Default().
	Logger *slog.Logger
}

// PolicyFor is the confinement of processes under cfg: the writable roots
// writable, the others (data, system directories) read-only, run as
// cfg.UID:cfg.GID when sandboxd is root. The process limit counts every
// thread of the uid: where sandboxd shares it with its commands (sandboxd
// not run as root), its reserve of threads (reservedThreads) counts too,
// so the limit is raised by as much.
func PolicyFor(cfg Config) *confine.Policy {
	return &confine.Policy{
		ReadOnly: cfg.Roots.ReadOnlyPaths(),
		Writable: cfg.Roots.WritablePaths(),
		Limits:   confine.Limits{Processes: confine.DefaultLimits.Processes + reservedThreads},
		UID:      cfg.UID,
		GID:      cfg.GID,
	}
}

// Tools returns every tool sandboxd serves, built over cfg: one for each
// of sandbox.Specs, embedding that spec, and wire.DeclaredTool,
// wire.MCPStdioList and wire.MCPStdioCall, which the runner calls for a
// Definition's declared tools and stdio MCP servers (in no catalog, so
// never offered to the model). It is the one place a tool's implementation is
// registered; its tests fail on a sandbox contract that has none here. The display tools drive cfg.Browser, or answer that the
// sandbox has no browser when it is empty. Tools that hold state
// (exec_command sessions, the browser) are built here once per server; a
// tool that must be stopped when the server stops implements io.Closer,
// and one holding what an agent started implements CloseAgent.
func Tools(cfg Config) []tool.Tool {
	timeout := cfg.Timeout
	if timeout == 0 {
		timeout = DefaultTimeout
	}
	policy := cfg.Policy
	if policy == nil {
		policy = PolicyFor(cfg)
	}
	// grep only reads: every root is read-only to it. Its program (rg, or
	// grep -r) follows no link and is given a path sandboxd checked; when
	// sandboxd runs as root, its commands' uid is one that owns nothing
	// outside the roots, and Landlock leaves its reads to that uid
	// (confine.Policy.UncheckedReads). Where commands keep the uid of
	// whoever started sandboxd, Landlock checks its reads too, at some 10%
	// of a search's time.
	search := *policy
	search.ReadOnly = append(slices.Clone(policy.ReadOnly), policy.Writable...)
	search.Writable = nil
	search.UncheckedReads = os.Getuid() == 0

	// exec_command sessions live as long as the server (or one call).
	sessions := session.NewManager(policy, cfg.Roots, session.Options{ToolTimeout: timeout})

	display := sandbox.DisplayTools()
	if cfg.Browser != "" {
		display = browser.New(browser.Config{Chromium: cfg.Browser, Policy: policy, Timeout: timeout, Allow: cfg.BrowserAllow, Logger: cfg.Logger}).Tools()
	}

	return append([]tool.Tool{
		files.NewRead(cfg.Roots),
		files.NewGlob(cfg.Roots, timeout),
		files.NewList(cfg.Roots),
		shell.NewGrep(cfg.Roots, &search, timeout),
		shell.NewBash(cfg.Roots, policy, timeout),
		shell.NewDeclared(cfg.Roots, policy, timeout), // the runner's, for declared tools: in no catalog
		sessions.ExecCommand(),
		sessions.WriteStdin(),
		patch.NewApplyPatch(cfg.Roots),
	}, append(shell.NewMCP(cfg.Roots, policy, timeout).Tools(), display...)...) // the runner's, for stdio MCP servers: in no catalog
}

// ErrUnknownTool is wrapped by Call's error for a name no tool has.
var ErrUnknownTool = errors.New("unknown tool")

// Call runs the tool called name from tools with args, exactly as the
// server does for POST /v1/tools/{name}. args that are not a JSON object
// give an error wrapping ErrNotObject.
func Call(ctx context.Context, tools []tool.Tool, name string, args json.RawMessage) (tool.Result, error) {
	t := find(tools, name)
	if t == nil {
		return tool.Result{}, fmt.Errorf("%w %q (known tools: %v)", ErrUnknownTool, name, names(tools))
	}
	if !wire.IsObject(args) {
		return tool.Result{}, fmt.Errorf("%s: %w", name, ErrNotObject)
	}
	return t.Run(ctx, args)
}

// ErrNotObject means a tool's arguments were not a JSON object.
var ErrNotObject = errors.New("the arguments must be a JSON object")

func find(tools []tool.Tool, name string) tool.Tool {
	for _, t := range tools {
		if t.Name() == name {
			return t
		}
	}
	return nil
}

func names(tools []tool.Tool) []string {
	out := make([]string, 0, len(tools))
	for _, t := range tools {
		out = append(out, t.Name())
	}
	sort.Strings(out)
	return out
}
