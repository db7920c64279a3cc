package proxy

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log"
	"log/slog"
	"net"
	"net/http"
	"net/http/httputil"
	"net/netip"
	"strings"
	"sync"
	"time"

	"github.com/agentsfleet/agentsfleet/shared/run"
	"github.com/agentsfleet/agentsfleet/shared/web/egress"
)

// The proxy's bounds.
const (
	// MaxHeaderBytes bounds a request's line and headers; past it the
	// browser gets 431.
	MaxHeaderBytes = 64 << 10
	// MaxTunnels bounds the open CONNECT tunnels and upgraded (WebSocket)
	// requests together; past it the browser gets 503.
	MaxTunnels = 256
	// IdleTimeout ends a tunnel, an upgraded request or a kept-alive
	// connection that carried nothing either way for this long.
	IdleTimeout = 5 * time.Minute
	// DialTimeout bounds one connection attempt to a destination.
	DialTimeout = 10 * time.Second

	maxResponseHeaderBytes = 1 << 20
	keptRefusals           = 64
)

// Config configures a Proxy.
type Config struct {
	// Allow is one loopback ip:port admitted despite the rules, for tests:
	// egress.AllowFromEnv's value (AGENTSFLEET_TEST_ALLOW_ADDR). Zero: none.
	Allow netip.AddrPort
	// Logger gets one line per refused request. Nil discards.
	Logger *slog.Logger
	// Resolver resolves host names; nil means net.DefaultResolver.
	Resolver egress.Resolver
}

// Proxy is a running forward proxy. Its methods are safe for concurrent use.
type Proxy struct {
	allow    netip.AddrPort
	self     netip.AddrPort
	log      *slog.Logger
	resolver egress.Resolver
	idle     time.Duration // IdleTimeout but in tests

	ln      net.Listener
	srv     *http.Server
	tr      *http.Transport
	forward *httputil.ReverseProxy
	ctx     context.Context // ends at Close: every request's and tunnel's
	cancel  context.CancelFunc
	slots   chan struct{} // one per open tunnel or upgraded request

	mu       sync.Mutex
	closed   bool
	open     map[net.Conn]struct{} // tunnels' connections, both ends
	busy     sync.WaitGroup        // handlers and tunnels running
	refusals []Refusal
	refused  uint64        // how many refusals ever: the last one's mark
	served   chan struct{} // closed when Serve returns

	// The egress entries for Drain: the open tunnels and requests, and
	// what ended or was refused since the last Drain.
	now          func() time.Time
	live         map[*flow]struct{}
	flows        []run.Egress
	droppedFlows int
}

// Refusal is one request the proxy refused.
type Refusal struct {
	Host   string // the host:port the browser asked for
	Addr   string // the address it resolved to, when it got that far
	Reason string // why, in words
}

// Start listens on 127.0.0.1:0 and serves until Close.
//
// It returns an error if cfg.Allow is set but is not a loopback ip:port
// with a port, or if it cannot listen.
func Start(cfg Config) (*Proxy, error) { return start(cfg, IdleTimeout) }

func start(cfg Config, idle time.Duration) (*Proxy, error) {
	if cfg.Allow.IsValid() && (!cfg.Allow.Addr().Unmap().IsLoopback() || cfg.Allow.Port() == 0) {
		return nil, fmt.Errorf("browser proxy: Allow %s: want a loopback ip:port such as 127.0.0.1:8080", cfg.Allow)
	}
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("browser proxy: listen: %w", err)
	}
	p := &Proxy{
		allow:    netip.AddrPortFrom(cfg.Allow.Addr().Unmap().WithZone(""), cfg.Allow.Port()),
		self:     netip.MustParseAddrPort(ln.Addr().String()),
		log:      cfg.Logger,
		resolver: cfg.Resolver,
		idle:     idle,
		ln:       ln,
		slots:    make(chan struct{}, MaxTunnels),
		open:     map[net.Conn]struct{}{},
		served:   make(chan struct{}),
		now:      time.Now,
		live:     map[*flow]struct{}{},
	}
	if p.log == nil {
		p.log = slog.New(slog.DiscardHandler)
	}
	p.ctx, p.cancel = context.WithCancel(context.Background())
	quiet := log.New(io.Discard, "", 0)
	p.tr = &http.Transport{
		Proxy:                  nil, // never another proxy from the environment
		DialContext:            p.dialForward,
		MaxIdleConns:           64,
		IdleConnTimeout:        90 * time.Second,
		ResponseHeaderTimeout:  idle,
		MaxResponseHeaderBytes: maxResponseHeaderBytes,
		DisableCompression:     true, // pass the browser's encoding through untouched
		TLSNextProto:           map[string]func(string, *tls.Conn) http.RoundTripper{},
	}
	p.forward = &httputil.ReverseProxy{
		Rewrite:       rewrite,
		Transport:     p.tr,
		FlushInterval: -1, // stream: event streams and long polls must not wait for a buffer
		ErrorHandler:  p.forwardError,
		ErrorLog:      quiet,
	}
	p.srv = &http.Server{
		Handler:           http.HandlerFunc(p.serve),
		MaxHeaderBytes:    MaxHeaderBytes,
		ReadHeaderTimeout: 30 * time.Second,
		IdleTimeout:       idle,
		BaseContext:       func(net.Listener) context.Context { return p.ctx },
		ErrorLog:          quiet,
	}
	go func() {
		defer close(p.served)
		_ = p.srv.Serve(ln)
	}()
	return p, nil
}

// Addr is "127.0.0.1:PORT", for Chromium's --proxy-server=http://ADDR.
func (p *Proxy) Addr() string { return p.self.String() }

// Close stops listening and closes every open tunnel and request. It
// returns when all of them have ended. Calling it again does nothing.
func (p *Proxy) Close() error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil
	}
	p.closed = true
	for c := range p.open {
		c.Close()
	}
	p.mu.Unlock()
	p.cancel()
	err := p.srv.Close()
	<-p.served
	p.busy.Wait()
	p.tr.CloseIdleConnections()
	return err
}

// Refusals returns what it refused, oldest first (the last 64 at most).
func (p *Proxy) Refusals() []Refusal {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]Refusal(nil), p.refusals...)
}

// RefusalsSince returns the refusals after the one mark names (0: from
// the first), oldest first, among the last 64 kept, and the mark of the
// last one: a caller keeps the mark of before a navigation and asks for
// what came after it, however many the proxy has kept.
func (p *Proxy) RefusalsSince(mark uint64) ([]Refusal, uint64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	kept := p.refusals
	if n := p.refused - mark; n < uint64(len(kept)) {
		kept = kept[len(kept)-int(n):]
	}
	return append([]Refusal(nil), kept...), p.refused
}

// serve serves one request from the browser.
func (p *Proxy) serve(w http.ResponseWriter, r *http.Request) {
	if !p.enter() {
		http.Error(w, "agentsfleet browser proxy: closed", http.StatusServiceUnavailable)
		return
	}
	defer p.busy.Done()
	switch {
	case r.Method == http.MethodConnect:
		p.tunnel(w, r)
	case r.URL.IsAbs():
		p.forwardRequest(w, r)
	default:
		p.refuse(w, r, http.StatusBadRequest, r.Host, netip.AddrPort{}, run.RuleHost,
			"this is a forward proxy: it takes CONNECT host:port and absolute-form requests (GET http://host/path), not "+r.Method+" "+r.URL.Path)
	}
}

// enter counts a handler or tunnel as running, unless the proxy is closed.
func (p *Proxy) enter() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return false
	}
	p.busy.Add(1)
	return true
}

// check is the rule for one address, used for every address a name
// resolves to and again in the socket's Control hook.
func (p *Proxy) check(ap netip.AddrPort) error {
	a := netip.AddrPortFrom(ap.Addr().WithZone("").Unmap(), ap.Port())
	if a == p.self {
		return &egress.RefusedError{Rule: run.RuleAddress, Reason: a.String() + " is the browser's proxy itself"}
	}
	if p.allow.IsValid() && a == p.allow {
		return nil
	}
	if what, bad := classify(ap.Addr()); bad {
		return &egress.RefusedError{Rule: run.RuleAddress, Reason: fmt.Sprintf("%s is %s", ap.Addr().WithZone(""), what)}
	}
	own, err := ownAddress(ap.Addr())
	if err != nil {
		return &egress.RefusedError{Rule: run.RuleAddress, Reason: err.Error()}
	}
	if own {
		return &egress.RefusedError{Rule: run.RuleAddress, Reason: fmt.Sprintf("%s is an address of this machine, where the sandbox's own services listen", ap.Addr().WithZone(""))}
	}
	return nil
}

// dial connects to address (host:port) through the checked dialer. When it
// refuses, the error is a *egress.RefusedError and at is the address
// refused, if it got that far.
func (p *Proxy) dial(ctx context.Context, address string) (conn net.Conn, at netip.AddrPort, err error) {
	var mu sync.Mutex
	d := &egress.Dialer{
		Resolver: p.resolver,
		Timeout:  DialTimeout,
		Logger:   slog.New(slog.DiscardHandler), // the proxy logs each refused request once
		Check: func(ap netip.AddrPort) error {
			err := p.check(ap)
			if err != nil {
				mu.Lock()
				at = ap
				mu.Unlock()
			}
			return err
		},
	}
	ctx, cancel := context.WithTimeout(ctx, DialTimeout)
	defer cancel()
	conn, err = d.DialContext(ctx, "tcp", address)
	mu.Lock()
	defer mu.Unlock()
	return conn, at, err
}

// refuse answers a request the proxy will not carry, records it (in the
// refusals and, refused by rule, in the egress entries) and logs it.
func (p *Proxy) refuse(w http.ResponseWriter, r *http.Request, status int, host string, at netip.AddrPort, rule, reason string) {
	const most = 300 // a host the browser names may be long; a refusal is kept short
	if len(host) > most {
		host = host[:most] + "…"
	}
	rf := Refusal{Host: host, Reason: reason}
	if at.IsValid() {
		rf.Addr = at.String()
	}
	p.mu.Lock()
	if len(p.refusals) == keptRefusals {
		p.refusals = append(p.refusals[:0], p.refusals[1:]...)
	}
	p.refusals = append(p.refusals, rf)
	p.refused++
	p.mu.Unlock()
	p.refusedFlow(r.Method, host, rule)
	msg := "browser proxy refused"
	if at.IsValid() && egress.IsMetadata(at.Addr()) {
		msg = "browser proxy refused: cloud metadata address"
	}
	p.log.Warn(msg, "method", r.Method, "host", host, "addr", rf.Addr, "status", status, "reason", reason)
	http.Error(w, "agentsfleet browser proxy: "+reason, status)
}

// refuseErr answers for a failed dial or request: 403 when the rules
// refused it, 502 or 504 when the destination could not be reached (an
// egress entry with the reason as its error).
func (p *Proxy) refuseErr(w http.ResponseWriter, r *http.Request, host string, at netip.AddrPort, err error) {
	var re *egress.RefusedError
	if errors.As(err, &re) {
		rule := re.Rule
		if rule == "" {
			rule = run.RuleAddress
		}
		p.refuse(w, r, http.StatusForbidden, host, at, rule, re.Error())
		return
	}
	status, why := unreachable(host, err)
	p.unreachedFlow(r.Method, host, why)
	http.Error(w, "agentsfleet browser proxy: "+why, status)
}

// slot takes one of MaxTunnels places, or answers 503.
func (p *Proxy) slot(w http.ResponseWriter, r *http.Request, host string) bool {
	select {
	case p.slots <- struct{}{}:
		return true
	default:
		p.refuse(w, r, http.StatusServiceUnavailable, host, netip.AddrPort{}, run.RuleTunnelLimit,
			fmt.Sprintf("too many open tunnels (%d); close some and try again", MaxTunnels))
		return false
	}
}

func (p *Proxy) release() { <-p.slots }

// track records c as open so that Close ends it; it closes c and returns
// false when the proxy is already closed.
func (p *Proxy) track(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		c.Close()
		return false
	}
	p.open[c] = struct{}{}
	return true
}

func (p *Proxy) untrack(c net.Conn) {
	p.mu.Lock()
	delete(p.open, c)
	p.mu.Unlock()
	c.Close()
}

// withPort returns an absolute-form URL's authority with its port, port
// if it names none.
func withPort(host, port string) string {
	if h, p, err := net.SplitHostPort(host); err == nil && p != "" {
		return net.JoinHostPort(h, p)
	}
	return net.JoinHostPort(strings.TrimSuffix(strings.TrimPrefix(host, "["), "]"), port)
}
