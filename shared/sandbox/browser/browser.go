package browser

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"sync"
	"time"

	"github.com/agentsfleet/agentsfleet/shared/run"
	"github.com/agentsfleet/agentsfleet/shared/sandbox"
	"github.com/agentsfleet/agentsfleet/shared/sandbox/browser/proxy"
	"github.com/agentsfleet/agentsfleet/shared/sandbox/confine"
	"github.com/agentsfleet/agentsfleet/shared/sandbox/session"
	"github.com/agentsfleet/agentsfleet/shared/tool"
)

// startTimeout bounds Chromium's start (process to first page), apart from
// the call's tool timeout, which also bounds it.
const startTimeout = 60 * time.Second

// Config is what the browser of one sandboxd is built from.
type Config struct {
	// Chromium is the browser's executable (/usr/bin/chromium).
	Chromium string
	// Policy is the confinement of the sandbox's commands; the browser's
	// is derived from it (policyFor). Nil means confine's defaults.
	Policy *confine.Policy
	// Timeout is the fleet's tool_timeout_seconds; a call's own
	// (sandbox.WithToolTimeout) wins over it.
	Timeout time.Duration
	// Allow is the one loopback address the proxy lets the browser reach
	// (egress.AllowFromEnv: tests' servers); the zero value allows none.
	Allow netip.AddrPort
	// Logger logs starts, crashes and the proxy's refusals; nil means
	// slog.Default().
	Logger *slog.Logger
}

// Browser is the one headless browser of a sandboxd: started by the first
// browser_open, navigated by later ones, captured by screenshot. Its calls
// are serialized. Safe for concurrent use.
type Browser struct {
	cfg    Config
	policy *confine.Policy
	log    *slog.Logger
	token  chan struct{} // holds one token: whose call drives the browser

	mu     sync.Mutex // guards what follows
	cur    *instance
	closed bool
	starts int    // Chromium processes started, for tests and the log
	lost   string // why the last browser went without Close, for the next call to say
	opened bool   // browser_open opened a page on cur
	// leftover is the egress of browsers closed or restarted since the
	// last call reported, for the next call to report.
	leftover []run.Egress
}

// instance is a running browser: Chromium, its proxy, and who started it.
type instance struct {
	proc  *process
	proxy *proxy.Proxy
	owner string // the agent whose browser_open started it
}

// New returns the browser of a sandboxd under cfg; nothing starts until
// the first browser_open.
func New(cfg Config) *Browser {
	log := cfg.Logger
	if log == nil {
		log = slog.Default()
	}
	b := &Browser{cfg: cfg, policy: policyFor(cfg.Policy), log: log, token: make(chan struct{}, 1)}
	b.token <- struct{}{}
	return b
}

// Tools returns browser_open and screenshot over b. browser_open also
// closes b: per agent (CloseAgent) and with the server (Close).
func (b *Browser) Tools() []tool.Tool {
	return []tool.Tool{&Open{Def: sandbox.BrowserOpen, b: b}, &Shot{Def: sandbox.Screenshot, b: b}}
}

// Starts is how many Chromium processes b has started.
func (b *Browser) Starts() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.starts
}

// PID is the process id of the running Chromium's process group leader
// (the trampoline that became it), or 0 when none runs.
func (b *Browser) PID() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.cur == nil {
		return 0
	}
	return b.cur.proc.pid
}

// errClosed is the answer of a call made while or after the server stops.
var errClosed = errors.New("the sandbox is stopping: its browser is closed")

// turn bounds the call of the tool name by its tool timeout (the call's,
// else the fleet's) and waits for the browser, which serves one call at a
// time. The call drives the browser until done; ok false means it never
// got it, and res says why.
func (b *Browser) turn(ctx context.Context, name string) (_ context.Context, timeout time.Duration, done func(), res tool.Result, ok bool) {
	timeout = sandbox.ToolTimeout(ctx, b.cfg.Timeout)
	cancel := context.CancelFunc(func() {})
	if timeout > 0 {
		ctx, cancel = context.WithTimeoutCause(ctx, timeout, errTimeout)
	}
	select {
	case <-b.token:
	case <-ctx.Done():
		res := stopped(ctx, name, "while another browser call held the browser", timeout)
		cancel()
		return ctx, timeout, nil, res, false
	}
	return ctx, timeout, func() {
		b.token <- struct{}{}
		cancel()
	}, tool.Result{}, true
}

// running is the browser a call uses, started if none runs (or the last
// one died); note says what happened to a previous browser, for the
// answer. Called with b's turn.
func (b *Browser) running(ctx context.Context) (inst *instance, note string, err error) {
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return nil, "", errClosed
	}
	if b.cur != nil && b.cur.proc.usable() {
		inst = b.cur
		b.mu.Unlock()
		return inst, "", nil
	}
	old := b.cur
	if old != nil {
		note = "[the previous browser had crashed; a new one was started, and the pages it had open are gone]"
		if !old.proc.hasCrashed() {
			note = "[the previous browser had exited; a new one was started, and the pages it had open are gone]"
		}
	} else if b.lost != "" {
		note = "[" + b.lost + "; a new one was started]"
	}
	b.cur, b.lost, b.opened = nil, "", false
	b.mu.Unlock()
	if old != nil {
		b.log.Warn("browser: restarting a browser that died", "pid", old.proc.pid, "output", old.proc.output.String())
		old.close()
		b.keepEgress(old)
	}

	px, err := proxy.Start(proxy.Config{Allow: b.cfg.Allow, Logger: b.log})
	if err != nil {
		return nil, "", fmt.Errorf("browser: the egress proxy: %w", err)
	}
	sctx, cancel := context.WithTimeout(ctx, startTimeout)
	defer cancel()
	proc, err := launch(sctx, b.cfg.Chromium, b.policy, proxy.ChromiumFlags(px.Addr()))
	if err != nil {
		_ = px.Close()
		return nil, "", err
	}
	inst = &instance{proc: proc, proxy: px, owner: session.AgentFrom(ctx)}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.starts++
	if b.closed {
		inst.close()
		return nil, "", errClosed
	}
	b.cur = inst
	b.log.Info("browser: started Chromium", "pid", proc.pid, "agent", inst.owner, "starts", b.starts)
	return inst, note, nil
}

// current is the browser and whether browser_open opened a page on it,
// for screenshot; nil when none runs.
func (b *Browser) current() (*instance, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return nil, false
	}
	if b.cur == nil || !b.cur.proc.usable() {
		return nil, false
	}
	return b.cur, b.opened
}

// lostNote says, for screenshot's answer, why no browser runs when one
// was closed under an agent.
func (b *Browser) lostNote() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.lost == "" {
		return ""
	}
	return " (" + b.lost + ")"
}

func (b *Browser) setOpened() {
	b.mu.Lock()
	b.opened = true
	b.mu.Unlock()
}

// CloseAgent closes the browser when agent's browser_open started it (a
// child agent being stopped), and returns 1 then, else 0. The top-level
// agent's browser ("") ends with the sandbox (Close). A call in flight on
// it fails; the next browser_open starts a new browser.
func (b *Browser) CloseAgent(agent string) int {
	if agent == "" {
		return 0
	}
	b.mu.Lock()
	inst := b.cur
	if inst == nil || inst.owner != agent {
		b.mu.Unlock()
		return 0
	}
	b.cur, b.opened = nil, false
	b.lost = fmt.Sprintf("the browser was closed when agent %s, which had started it, was stopped", agent)
	b.mu.Unlock()
	inst.close()
	b.keepEgress(inst)
	b.log.Info("browser: closed with its agent", "agent", agent, "pid", inst.proc.pid)
	return 1
}

// Close kills Chromium's whole process group, removes its profile and
// stops its proxy; later calls answer that the sandbox is stopping. Safe to
// call more than once.
func (b *Browser) Close() error {
	b.mu.Lock()
	inst := b.cur
	b.cur, b.closed = nil, true
	b.mu.Unlock()
	if inst != nil {
		inst.close()
	}
	return nil
}

// keepEgress keeps the egress of inst, closed, for the next call's result.
func (b *Browser) keepEgress(inst *instance) {
	entries, dropped := inst.proxy.Drain()
	b.noteDropped(dropped)
	b.mu.Lock()
	b.leftover = append(b.leftover, entries...)
	if extra := len(b.leftover) - maxLeftover; extra > 0 {
		b.leftover = append(b.leftover[:0], b.leftover[extra:]...)
		b.noteDropped(extra)
	}
	b.mu.Unlock()
}

// maxLeftover bounds the entries kept of browsers closed since the last
// call (each restart adds its proxy's).
const maxLeftover = 1024

// egress is the browser's egress since the last call reported it, named
// after the call's tool: the connections of inst's proxy and of any
// browser closed meanwhile. Called with b's turn.
func (b *Browser) egress(inst *instance, name string) []run.Egress {
	b.mu.Lock()
	entries := b.leftover
	b.leftover = nil
	b.mu.Unlock()
	if inst != nil {
		more, dropped := inst.proxy.Drain()
		b.noteDropped(dropped)
		entries = append(entries, more...)
	}
	for k := range entries {
		entries[k].Tool = name
	}
	return entries
}

func (b *Browser) noteDropped(n int) {
	if n > 0 {
		b.log.Warn("browser: egress entries dropped: more connections between two calls than the proxy keeps", "dropped", n)
	}
}

func (i *instance) close() {
	i.proc.close()
	_ = i.proxy.Close()
}

// callContext is the context of one call on the page: the page's chromedp
// context (the one chromedp's actions need), ended when ctx, the call's,
// ends, with its cause. stop releases it.
func callContext(ctx context.Context, tab context.Context) (context.Context, context.CancelFunc) {
	c, cancel := context.WithCancelCause(tab)
	stop := context.AfterFunc(ctx, func() { cancel(context.Cause(ctx)) })
	return c, func() {
		stop()
		cancel(nil)
	}
}

// errTimeout is the cause of a call's context that its tool timeout ended.
var errTimeout = errors.New("the tool timeout passed")

// quick is a context for a short follow-up on the page after a call's own
// ended (stopping a load, reading what is known).
func quick(tab context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(tab, 5*time.Second)
}
