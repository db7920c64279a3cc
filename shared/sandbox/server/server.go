package server

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/agentsfleet/agentsfleet/shared/sandbox"
	"github.com/agentsfleet/agentsfleet/shared/sandbox/session"
	"github.com/agentsfleet/agentsfleet/shared/sandbox/shell"
	"github.com/agentsfleet/agentsfleet/shared/sandbox/wire"
	"github.com/agentsfleet/agentsfleet/shared/tool"
)

// Options configure a Server.
type Options struct {
	// Token is the bearer token callers must present (wire.CheckToken: at
	// least wire.MinTokenLength bytes of visible ASCII).
	Token string
	// Tools are the tools served, by name (see Tools).
	Tools []tool.Tool
	// IdleTimeout makes Serve return after this long without an
	// authenticated call, so that an abandoned Fargate task stops. Health
	// checks do not count as calls. Zero disables it.
	IdleTimeout time.Duration
	// ShutdownGrace is how long Serve waits for calls in progress when it
	// stops before it cancels them. Zero means 20 seconds (Fargate gives a
	// task 30 seconds between SIGTERM and SIGKILL by default).
	ShutdownGrace time.Duration
	// Idempotency bounds the Idempotency-Key cache.
	Idempotency IdempotencyLimits
	// Logger receives one line per call (never its arguments); nil means
	// slog.Default().
	Logger *slog.Logger
	// Agent is the fleet's folder (the Agent root) that POST
	// wire.AgentRestorePath and wire.AgentSavePath restore and save; empty
	// means this sandboxd serves no folder (they answer 404).
	Agent string
	// Setup runs the fleet's setup step, POST wire.SetupPath (SetupFor);
	// nil means this sandboxd runs none (it answers 404).
	Setup *shell.Setup
}

// Server is sandboxd's HTTP API. It is an http.Handler; Serve runs it on a
// listener with idle exit and graceful shutdown. Safe for concurrent use.
type Server struct {
	token   [sha256.Size]byte
	tools   map[string]tool.Tool
	closers []io.Closer
	idem    *idemCache
	log     *slog.Logger
	mux     *http.ServeMux
	idle    time.Duration
	grace   time.Duration

	// base is the context of calls made with an Idempotency-Key, which
	// outlive their request so that a retry can wait for them; Serve
	// cancels it when it stops.
	base       context.Context
	cancelBase context.CancelFunc

	detached sync.WaitGroup // calls with a key still running

	folder *agentFolder // nil without Options.Agent

	setupStep *setupOnce // nil without Options.Setup

	mu     sync.Mutex
	active int       // authenticated calls in progress
	last   time.Time // when the last one ended
}

// New returns a server for o.
func New(o Options) (*Server, error) {
	if err := wire.CheckToken(o.Token); err != nil {
		return nil, fmt.Errorf("sandboxd: %w", err)
	}
	s := &Server{
		token: sha256.Sum256([]byte(o.Token)),
		tools: map[string]tool.Tool{},
		idem:  newIdemCache(o.Idempotency),
		log:   o.Logger,
		idle:  o.IdleTimeout,
		grace: o.ShutdownGrace,
		last:  time.Now(),
	}
	if s.log == nil {
		s.log = slog.Default()
	}
	if s.grace <= 0 {
		s.grace = 20 * time.Second
	}
	for _, t := range o.Tools {
		if _, dup := s.tools[t.Name()]; dup {
			return nil, fmt.Errorf("sandboxd: two tools are named %q", t.Name())
		}
		s.tools[t.Name()] = t
		if c, ok := t.(io.Closer); ok {
			s.closers = append(s.closers, c)
		}
	}
	if o.Agent != "" {
		s.folder = newAgentFolder(o.Agent)
	}
	if o.Setup != nil {
		s.setupStep = &setupOnce{run: o.Setup}
	}
	s.base, s.cancelBase = context.WithCancel(context.Background())
	s.mux = http.NewServeMux()
	s.mux.HandleFunc("POST "+wire.AgentRestorePath, s.agentRestore)
	s.mux.HandleFunc("POST "+wire.AgentSavePath, s.agentSave)
	s.mux.HandleFunc("GET "+wire.HealthPath, s.health)
	s.mux.HandleFunc("POST "+wire.ToolPath("{name}"), s.call)
	s.mux.HandleFunc("POST "+wire.SessionsClosePath, s.sessionsClose)
	s.mux.HandleFunc("POST "+wire.SetupPath, s.setup)
	s.mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, "no such endpoint: sandboxd serves GET "+wire.HealthPath+" and POST "+wire.ToolPath("{name}"))
	})
	return s, nil
}

// ServeHTTP serves the API.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.mux.ServeHTTP(w, r) }

func (s *Server) health(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, wire.HealthBody{Status: wire.HealthOK})
}

func (s *Server) call(w http.ResponseWriter, r *http.Request) {
	if !s.authorized(r) {
		w.Header().Set("WWW-Authenticate", `Bearer realm="sandboxd"`)
		writeError(w, http.StatusUnauthorized, "missing or wrong bearer token")
		return
	}
	s.begin()
	defer s.end()

	name := r.PathValue("name")
	tool, ok := s.tools[name]
	if !ok {
		writeError(w, http.StatusNotFound, fmt.Sprintf("unknown tool %q", name))
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, wire.MaxBodyBytes))
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			writeError(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("the body is larger than %d bytes", wire.MaxBodyBytes))
			return
		}
		writeError(w, http.StatusBadRequest, "the body could not be read")
		return
	}
	if !wire.IsObject(body) {
		writeError(w, http.StatusBadRequest, "the body must be a JSON object: the tool's arguments")
		return
	}
	agent, err := callAgent(r)
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	timeout, err := wire.ParseToolTimeout(r.Header.Values(wire.ToolTimeoutHeader))
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	// The call's own context: who makes it, and its tool timeout, which
	// wins over the one the tools were built with (sandboxd --timeout).
	callCtx := func(ctx context.Context) context.Context {
		return sandbox.WithToolTimeout(session.WithAgent(ctx, agent), timeout)
	}

	key := r.Header.Get(wire.IdempotencyHeader)
	if key == "" {
		// Without a key the call is the request's: it stops when the
		// caller goes away or the server stops.
		ctx, cancel := context.WithCancel(r.Context())
		defer context.AfterFunc(s.base, cancel)()
		defer cancel()
		s.respond(w, name, s.run(callCtx(ctx), tool, body), false)
		return
	}
	if !wire.ValidIdempotencyKey(key) {
		writeError(w, http.StatusBadRequest, fmt.Sprintf("the %s header must be 1 to %d visible ASCII characters", wire.IdempotencyHeader, wire.MaxIdempotencyKey))
		return
	}
	e, first, conflict := s.idem.claim(idemKey(agent, key), fingerprint(name, timeout, body))
	if conflict {
		writeError(w, http.StatusUnprocessableEntity, fmt.Sprintf("the %s was already used for a different call", wire.IdempotencyHeader))
		return
	}
	if first {
		// The call belongs to the key, not to this request: it goes on if
		// the caller disconnects, so that its retry gets the result.
		done := make(chan struct{})
		s.begin()
		s.detached.Add(1)
		go func() {
			defer close(done)
			defer s.detached.Done()
			defer s.end()
			out := s.run(callCtx(s.base), tool, body)
			s.idem.finish(e, out.res, out.err != nil)
		}()
		select {
		case <-done:
		case <-r.Context().Done():
			return
		}
	}
	select {
	case <-e.done:
	case <-r.Context().Done():
		return
	}
	if e.failed {
		s.respond(w, name, outcome{err: errors.New("the first call with this key failed")}, !first)
		return
	}
	s.respond(w, name, outcome{res: e.res}, !first)
}

type outcome struct {
	res     tool.Result
	err     error
	elapsed time.Duration
}

func (s *Server) run(ctx context.Context, tool tool.Tool, body []byte) (out outcome) {
	start := time.Now()
	defer func() {
		out.elapsed = time.Since(start)
		if p := recover(); p != nil {
			out.err = fmt.Errorf("panic: %v", p)
		}
	}()
	res, err := tool.Run(ctx, body)
	return outcome{res: res, err: err}
}

func (s *Server) respond(w http.ResponseWriter, name string, out outcome, replay bool) {
	if out.err != nil {
		s.log.Error("tool failed", "tool", name, "err", out.err, "replay", replay)
		writeError(w, http.StatusInternalServerError, fmt.Sprintf("tool %s failed inside sandboxd; its log says why", name))
		return
	}
	s.log.Info("tool", "tool", name, "ms", out.elapsed.Milliseconds(), "is_error", out.res.IsError, "replay", replay)
	writeJSON(w, http.StatusOK, out.res)
}

// authorized compares the bearer token in constant time (hashes of equal
// length, so not even the length leaks).
func (s *Server) authorized(r *http.Request) bool {
	tok, ok := wire.BearerToken(r.Header.Get(wire.AuthorizationHeader))
	if !ok {
		return false
	}
	got := sha256.Sum256([]byte(tok))
	return subtle.ConstantTimeCompare(got[:], s.token[:]) == 1
}

func (s *Server) begin() {
	s.mu.Lock()
	s.active++
	s.mu.Unlock()
}

func (s *Server) end() {
	s.mu.Lock()
	s.active--
	s.last = time.Now()
	s.mu.Unlock()
}

// idleFor is how long the server has had no call in progress.
func (s *Server) idleFor() time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.active > 0 {
		return 0
	}
	return time.Since(s.last)
}

// LoadTLS reads a PEM certificate (chain) and its key for Serve. sandboxd
// reads them before it stops acting as root (confine.ActAs), so that they
// may be readable by root only.
func LoadTLS(certFile, keyFile string) (*tls.Config, error) {
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return nil, fmt.Errorf("TLS certificate: %w", err)
	}
	return &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}, nil
}

// ErrIdle is returned by Serve when it stopped after IdleTimeout without a
// call.
var ErrIdle = errors.New("sandboxd: idle timeout")

// Serve serves on ln until ctx is done (nil error) or the server has been
// idle for IdleTimeout (ErrIdle). Either way it stops gracefully: it stops
// accepting, waits up to ShutdownGrace for calls in progress, then cancels
// them (killing their processes) and closes the tools that hold state.
// A non-nil tlsConfig serves TLS (LoadTLS). A Server serves once.
func (s *Server) Serve(ctx context.Context, ln net.Listener, tlsConfig *tls.Config) error {
	hs := &http.Server{
		Handler:           s,
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       2 * time.Minute,
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelWarn),
		BaseContext:       func(net.Listener) context.Context { return context.WithoutCancel(ctx) },
		TLSConfig:         tlsConfig,
	}
	served := make(chan error, 1)
	go func() {
		if tlsConfig != nil {
			served <- hs.ServeTLS(ln, "", "")
			return
		}
		served <- hs.Serve(ln)
	}()
	s.mu.Lock()
	s.last = time.Now()
	s.mu.Unlock()

	var tick <-chan time.Time
	if s.idle > 0 {
		t := time.NewTicker(min(max(s.idle/4, 10*time.Millisecond), 10*time.Second))
		defer t.Stop()
		tick = t.C
	}
	var result error
loop:
	for {
		select {
		case err := <-served:
			s.cancelBase()
			s.closeTools()
			return fmt.Errorf("sandboxd: serve: %w", err)
		case <-ctx.Done():
			s.log.Info("stopping", "reason", context.Cause(ctx).Error())
			break loop
		case <-tick:
			if idle := s.idleFor(); idle >= s.idle {
				s.log.Info("stopping", "reason", "idle", "idle_for", idle.Round(time.Millisecond).String())
				result = ErrIdle
				break loop
			}
		}
	}
	graceCtx, cancel := context.WithTimeout(context.Background(), s.grace)
	defer cancel()
	err := hs.Shutdown(graceCtx)
	if err == nil {
		err = waitCtx(graceCtx, &s.detached)
	}
	if err != nil {
		s.log.Warn("calls still running after the shutdown grace; cancelling them", "grace", s.grace.String())
	}
	s.cancelBase()
	_ = hs.Close()
	s.closeTools()
	return result
}

// waitCtx waits for wg or ctx, whichever comes first.
func waitCtx(ctx context.Context, wg *sync.WaitGroup) error {
	done := make(chan struct{})
	go func() {
		wg.Wait()
		close(done)
	}()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (s *Server) closeTools() {
	for _, c := range s.closers {
		if err := c.Close(); err != nil {
			s.log.Warn("close tool", "err", err)
		}
	}
}

func writeError(w http.ResponseWriter, status int, msg string) {
	writeJSON(w, status, wire.ErrorBody{Error: msg})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", wire.ContentType)
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
}
