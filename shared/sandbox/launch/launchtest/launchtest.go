// Package launchtest is a launch.Launcher for tests: each run's sandbox is
// sandboxd's own server (the same tools, confinement and HTTP API) served
// in this process on loopback, over a folder of the test's. Kill makes a
// run's sandbox stop answering, as a dead task does.
package launchtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"log/slog"
	"net/http/httptest"
	"net/netip"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/agentsfleet/agentsfleet/shared/sandbox"
	"github.com/agentsfleet/agentsfleet/shared/sandbox/client"
	"github.com/agentsfleet/agentsfleet/shared/sandbox/launch"
	"github.com/agentsfleet/agentsfleet/shared/sandbox/server"
	"github.com/agentsfleet/agentsfleet/shared/tool"
)

// Launcher serves every run's sandbox over the same roots.
type Launcher struct {
	dirs sandbox.Dirs
	mu   sync.Mutex
	runs map[string]*running
	// Started counts sandboxes started, for tests that check one is
	// reused or replaced.
	Started int
	// Chromium and BrowserAllow, set before the first Acquire, are
	// server.Config's Browser and BrowserAllow: the Chromium that the
	// sandboxes' browser_open and screenshot drive, and the one loopback
	// address it may reach (the test's page).
	Chromium     string
	BrowserAllow netip.AddrPort
	// Replace, set before the first Acquire, stands in for sandboxd's
	// tools of the same names, served by the same server over the same
	// HTTP API (a screenshot of a fixed image, say).
	Replace []tool.Tool
}

type running struct {
	nonce string // a Starter's sandbox's, and its token
	token string
	kind  launch.Kind // a Starter's sandbox's
	once  sync.Once
	srv   *httptest.Server
	tools []interface{ Close() error }
	sb    *launch.Sandbox
}

// replace is tools with each of by in place of the tool of its name.
func replace(tools, by []tool.Tool) []tool.Tool {
	out := slices.Clone(tools)
	for _, b := range by {
		i := slices.IndexFunc(out, func(t tool.Tool) bool { return t.Name() == b.Name() })
		if i < 0 {
			panic("launchtest: sandboxd has no tool " + b.Name() + " to replace")
		}
		out[i] = b
	}
	return out
}

var _ launch.Launcher = (*Launcher)(nil)
var _ launch.Placer = (*Launcher)(nil)

// New returns a Launcher over dirs; every sandbox still running stops when
// the test ends.
func New(t testing.TB, dirs sandbox.Dirs) *Launcher {
	l := &Launcher{dirs: dirs, runs: map[string]*running{}}
	t.Cleanup(func() {
		l.mu.Lock()
		ids := make([]string, 0, len(l.runs))
		for id := range l.runs {
			ids = append(ids, id)
		}
		l.mu.Unlock()
		for _, id := range ids {
			l.Release(context.Background(), id)
		}
	})
	return l
}

// Places are the folders the sandboxes serve.
func (l *Launcher) Places(launch.Spec) launch.Places {
	return launch.Places{Workdir: l.dirs.Workdir, Agent: l.dirs.Agent}
}

// Acquire returns the run's sandbox, starting one when it has none.
func (l *Launcher) Acquire(_ context.Context, spec launch.Spec) (*launch.Sandbox, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if r, ok := l.runs[spec.RunID]; ok {
		return r.sb, nil
	}
	roots, err := sandbox.New(l.dirs)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", launch.ErrStart, err)
	}
	token := make([]byte, 16)
	rand.Read(token)
	tok := hex.EncodeToString(token)
	tools := server.Tools(server.Config{Roots: roots, Timeout: spec.ToolTimeout, Browser: l.Chromium, BrowserAllow: l.BrowserAllow})
	tools = replace(tools, l.Replace)
	srv, err := server.New(server.Options{Token: tok, Tools: tools, Logger: slog.New(slog.DiscardHandler),
		Setup: server.SetupFor(server.Config{Roots: roots})})
	if err != nil {
		return nil, fmt.Errorf("%w: %v", launch.ErrStart, err)
	}
	ts := httptest.NewServer(srv)
	c, err := client.New(client.Config{URL: ts.URL, Token: tok, CallTimeout: client.CallTimeoutFor(spec.ToolTimeout), HealthTimeout: time.Second})
	if err != nil {
		ts.Close()
		return nil, fmt.Errorf("%w: %v", launch.ErrStart, err)
	}
	r := &running{srv: ts, sb: &launch.Sandbox{ID: "inprocess-" + spec.RunID, Client: c}}
	for _, t := range tools {
		if c, ok := t.(io.Closer); ok {
			r.tools = append(r.tools, c)
		}
	}
	l.runs[spec.RunID] = r
	l.Started++
	return r.sb, nil
}

// Release stops the run's sandbox.
func (l *Launcher) Release(_ context.Context, runID string) error {
	l.mu.Lock()
	r, ok := l.runs[runID]
	delete(l.runs, runID)
	l.mu.Unlock()
	if ok {
		r.stop()
	}
	return nil
}

// Kill makes the run's sandbox stop answering without forgetting it: its
// next call fails as a dead task's does.
func (l *Launcher) Kill(runID string) {
	l.mu.Lock()
	r, ok := l.runs[runID]
	l.mu.Unlock()
	if ok {
		r.stop()
	}
}

// Running reports whether the run has a sandbox.
func (l *Launcher) Running(runID string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	_, ok := l.runs[runID]
	return ok
}

func (r *running) stop() {
	r.once.Do(func() {
		r.srv.CloseClientConnections()
		r.srv.Close()
		for _, c := range r.tools {
			c.Close()
		}
	})
}
