package server

import (
	"crypto/sha256"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"sync"

	"github.com/agentsfleet/agentsfleet/shared/sandbox/shell"
	"github.com/agentsfleet/agentsfleet/shared/sandbox/wire"
)

// SetupFor is the setup step's runner under cfg (Options.Setup): bash's
// roots and confinement.
func SetupFor(cfg Config) *shell.Setup {
	policy := cfg.Policy
	if policy == nil {
		policy = PolicyFor(cfg)
	}
	return shell.NewSetup(cfg.Roots, policy)
}

// setupOnce is the one setup step a sandboxd runs in its life.
type setupOnce struct {
	run *shell.Setup

	mu     sync.Mutex
	sum    [sha256.Size]byte // the first request's fingerprint
	done   chan struct{}     // closed once res and err are set
	res    wire.SetupResult
	failed bool
}

// setup serves POST wire.SetupPath. The first request runs the step in the
// server's own context, so that a runner that goes away and comes back
// (invoked again) gets its result; a later one with the same request waits
// for it and is told Already.
func (s *Server) setup(w http.ResponseWriter, r *http.Request) {
	if !s.authorized(r) {
		w.Header().Set("WWW-Authenticate", `Bearer realm="sandboxd"`)
		writeError(w, http.StatusUnauthorized, "missing or wrong bearer token")
		return
	}
	if s.setupStep == nil {
		writeError(w, http.StatusNotFound, "this sandboxd runs no setup step")
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, wire.MaxBodyBytes))
	if err != nil {
		writeError(w, http.StatusBadRequest, "the body could not be read")
		return
	}
	req, err := wire.DecodeSetup(body)
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	s.begin()
	defer s.end()
	// The fingerprint covers the values: a request that differs in any
	// way is not the same step. encoding/json sorts Env's keys.
	canon, _ := json.Marshal(req)
	sum := sha256.Sum256(canon)
	o := s.setupStep
	o.mu.Lock()
	first := o.done == nil
	if first {
		o.sum, o.done = sum, make(chan struct{})
		s.begin()
		s.detached.Add(1)
		go func() {
			defer s.detached.Done()
			defer s.end()
			res, err := s.runSetup(req)
			o.mu.Lock()
			o.res, o.failed = res, err != nil
			o.mu.Unlock()
			close(o.done)
		}()
	} else if o.sum != sum {
		o.mu.Unlock()
		writeError(w, http.StatusConflict, "this sandboxd ran a different setup step before: it runs one in its life")
		return
	}
	done := o.done
	o.mu.Unlock()
	select {
	case <-done:
	case <-r.Context().Done():
		return
	}
	o.mu.Lock()
	res, failed := o.res, o.failed
	o.mu.Unlock()
	if failed {
		writeError(w, http.StatusInternalServerError, "the setup command could not be started; sandboxd's log says why")
		return
	}
	res.Already = !first
	writeJSON(w, http.StatusOK, res)
}

// runSetup runs req, unless the fleet's folder records a setup that
// succeeded with its key, and records the key when the command exits 0.
func (s *Server) runSetup(req wire.SetupRequest) (wire.SetupResult, error) {
	o := s.setupStep
	if o.run.Recorded(req.Key) {
		s.log.Info("setup skipped: the fleet's folder records it with the same inputs")
		return wire.SetupResult{Skipped: true}, nil
	}
	res, err := o.run.Run(s.base, req)
	if err != nil {
		s.log.Error("setup", "err", err)
		return res, err
	}
	s.log.Info("setup", "exit_code", res.ExitCode, "timed_out", res.TimedOut, "ms", res.DurationMS)
	if res.ExitCode == 0 && !res.TimedOut {
		if err := o.run.Record(req.Key); err != nil {
			// The next run sets up again; this one goes on.
			s.log.Warn("the setup's key was not recorded in the fleet's folder", "err", errors.Unwrap(err))
		}
	}
	return res, nil
}
