package launchtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"log/slog"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentsfleet/agentsfleet/shared/sandbox"
	"github.com/agentsfleet/agentsfleet/shared/sandbox/client"
	"github.com/agentsfleet/agentsfleet/shared/sandbox/launch"
	"github.com/agentsfleet/agentsfleet/shared/sandbox/server"
)

// Starter is a launch.Starter for pool tests: each Start serves a fresh
// sandboxd (its own folder, a fresh token) in this process on loopback;
// Warm.URL is that address, and Warm.Nonce names the token, which the
// Starter keeps (Connect refuses a Warm whose nonce is not its sandbox's). Stop closes it, and so does Kill behind a
// pool's back, as a task that died does. It is safe for concurrent use.
type Starter struct {
	// Browsers makes the Starter one that can start sandboxes with a
	// browser (launch.Browsers): a pool test's, checking which kind a run
	// gets. Their sandboxd has no browser all the same; Kind tells them
	// apart.
	Browsers bool

	dir     string
	n       atomic.Int64
	started atomic.Int64
	stopped atomic.Int64

	mu  sync.Mutex
	all map[string]*running // by Warm.ID, until stopped
}

var (
	_ launch.Starter  = (*Starter)(nil)
	_ launch.Browsers = (*Starter)(nil)
)

// Browser is Starter.Browsers.
func (s *Starter) Browser() bool { return s.Browsers }

// NewStarter returns a Starter whose sandboxes serve folders under a
// temporary folder of the test's; the ones still running stop when the
// test ends.
func NewStarter(t testing.TB) *Starter {
	s := &Starter{dir: t.TempDir(), all: map[string]*running{}}
	t.Cleanup(func() {
		s.mu.Lock()
		rs := make([]*running, 0, len(s.all))
		for _, r := range s.all {
			rs = append(rs, r)
		}
		s.all = map[string]*running{}
		s.mu.Unlock()
		for _, r := range rs {
			r.stop()
		}
	})
	return s
}

// Start serves a new sandboxd of kind and returns it once it answers its
// health check. A kind with a browser, when Browsers is false, is an error
// wrapping launch.ErrNoBrowser.
func (s *Starter) Start(ctx context.Context, kind launch.Kind) (launch.Warm, error) {
	if kind.Browser && !s.Browsers {
		return launch.Warm{}, fmt.Errorf("%w: %w", launch.ErrStart, launch.ErrNoBrowser)
	}
	id := fmt.Sprintf("inprocess-%d", s.n.Add(1))
	dirs := sandbox.Dirs{Workdir: filepath.Join(s.dir, id, "work"), Agent: filepath.Join(s.dir, id, "agent")}
	for _, d := range []string{dirs.Workdir, dirs.Agent} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return launch.Warm{}, fmt.Errorf("%w: %v", launch.ErrStart, err)
		}
	}
	roots, err := sandbox.New(dirs)
	if err != nil {
		return launch.Warm{}, fmt.Errorf("%w: %v", launch.ErrStart, err)
	}
	b := make([]byte, 16)
	rand.Read(b)
	tok := hex.EncodeToString(b)
	tools := server.Tools(server.Config{Roots: roots})
	srv, err := server.New(server.Options{Token: tok, Tools: tools, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		return launch.Warm{}, fmt.Errorf("%w: %v", launch.ErrStart, err)
	}
	r := &running{srv: httptest.NewServer(srv)}
	for _, t := range tools {
		if c, ok := t.(io.Closer); ok {
			r.tools = append(r.tools, c)
		}
	}
	rand.Read(b)
	r.nonce, r.token, r.kind = hex.EncodeToString(b), tok, kind
	w := launch.Warm{ID: id, Size: kind.Size, Browser: kind.Browser, URL: r.srv.URL, Nonce: r.nonce, Started: time.Now()}
	s.mu.Lock()
	s.all[id] = r
	s.mu.Unlock()
	s.started.Add(1)
	if _, err := s.Connect(ctx, w); err != nil {
		s.Stop(ctx, w)
		return launch.Warm{}, fmt.Errorf("%w: %v", launch.ErrStart, err)
	}
	return w, nil
}

// Connect returns a client for w after a health check, with the token of
// the sandbox of w's id and nonce.
func (s *Starter) Connect(ctx context.Context, w launch.Warm) (*launch.Sandbox, error) {
	s.mu.Lock()
	r := s.all[w.ID]
	s.mu.Unlock()
	if r == nil || r.nonce != w.Nonce {
		return nil, fmt.Errorf("connect to sandbox %s: %w: not a sandbox of this Starter", w.ID, client.ErrUnavailable)
	}
	c, err := client.New(client.Config{URL: w.URL, Token: r.token, HealthTimeout: time.Second})
	if err != nil {
		return nil, fmt.Errorf("connect to sandbox %s: %w", w.ID, err)
	}
	if err := c.Health(ctx); err != nil {
		return nil, fmt.Errorf("connect to sandbox %s: %w", w.ID, err)
	}
	return &launch.Sandbox{ID: w.ID, Client: c}, nil
}

// Stop closes w's server; stopping one already stopped is not an error.
func (s *Starter) Stop(_ context.Context, w launch.Warm) error {
	s.mu.Lock()
	r, ok := s.all[w.ID]
	delete(s.all, w.ID)
	s.mu.Unlock()
	if ok {
		s.stopped.Add(1)
		r.stop()
	}
	return nil
}

// Kill closes sandbox id's server without counting it as stopped, as a
// task that dies on its own.
func (s *Starter) Kill(id string) {
	s.mu.Lock()
	r, ok := s.all[id]
	delete(s.all, id)
	s.mu.Unlock()
	if ok {
		r.stop()
	}
}

// Kind is the kind sandbox id was started as; ok is false once it is
// stopped or killed.
func (s *Starter) Kind(id string) (kind launch.Kind, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.all[id]
	if !ok {
		return launch.Kind{}, false
	}
	return r.kind, true
}

// Running reports whether sandbox id is serving.
func (s *Starter) Running(id string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.all[id]
	return ok
}

// Started returns how many sandboxes Start has started.
func (s *Starter) Started() int { return int(s.started.Load()) }

// Stopped returns how many Stop has stopped (Kill's not counted).
func (s *Starter) Stopped() int { return int(s.stopped.Load()) }
