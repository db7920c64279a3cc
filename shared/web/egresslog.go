package web

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"time"

	"github.com/agentsfleet/agentsfleet/shared/run"
	"github.com/agentsfleet/agentsfleet/shared/web/egress"
)

// EgressLog keeps a run's egress log (store.Store does). Implementations
// are safe for concurrent use.
type EgressLog interface {
	// RecordEgress appends entries to the log of run runID.
	RecordEgress(ctx context.Context, runID string, entries []run.Egress) error
}

// recorder collects the egress entries of one Service.Call: every request
// the call's transports send (each redirect hop) and every one it refuses.
// Service.Call writes them to the EgressLog when the call ends. It is safe
// for concurrent use.
type recorder struct {
	mu      sync.Mutex
	tool    string
	entries []run.Egress
	started []time.Time // of entries still open (a body not closed yet); zero once closed
	drained bool        // the entries were handed on: later requests are not recorded
	now     func() time.Time
}

func newRecorder(tool string) *recorder { return &recorder{tool: tool, now: time.Now} }

// recorderKey holds a call's *recorder in a request's context;
// secretsKey the names of the secrets filled into the request.
type (
	recorderKey struct{}
	secretsKey  struct{}
)

func withRecorder(ctx context.Context, rec *recorder) context.Context {
	return context.WithValue(ctx, recorderKey{}, rec)
}

func recorderFrom(ctx context.Context) *recorder {
	rec, _ := ctx.Value(recorderKey{}).(*recorder)
	return rec
}

// withSecretNames marks the requests sent under ctx as carrying the
// secrets named (their names, never their values, go in the log).
func withSecretNames(ctx context.Context, names []string) context.Context {
	if len(names) == 0 {
		return ctx
	}
	return context.WithValue(ctx, secretsKey{}, names)
}

// setTool names the entries after a tool other than the call's (an MCP
// call records the server's tool, mcp__<server>__<tool>).
func (r *recorder) setTool(name string) {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.tool = name
}

// refuse records a request to u refused before it was sent, by err's rule
// (an *egress.RefusedError's Rule; rule when err carries none).
func (r *recorder) refuse(ctx context.Context, method string, u *url.URL, rule string, err error) {
	if r == nil {
		return
	}
	var re *egress.RefusedError
	if errors.As(err, &re) && re.Rule != "" {
		rule = re.Rule
	}
	e := r.entry(ctx, method, u)
	e.Refused, e.Rule = true, rule
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.drained {
		r.entries = append(r.entries, e)
		r.started = append(r.started, time.Time{})
	}
}

// entry is the start of an entry for a request to u under ctx.
func (r *recorder) entry(ctx context.Context, method string, u *url.URL) run.Egress {
	names, _ := ctx.Value(secretsKey{}).([]string)
	if method == "" {
		method = http.MethodGet
	}
	r.mu.Lock()
	tool := r.tool
	r.mu.Unlock()
	return run.Egress{Time: r.now().UTC(), Tool: tool, Method: method, Host: u.Hostname(), Port: urlPort(u),
		Secrets: append([]string{}, names...)}
}

func urlPort(u *url.URL) int {
	if p, err := strconv.Atoi(u.Port()); err == nil {
		return p
	}
	if u.Scheme == "http" {
		return 80
	}
	return 443
}

// open starts the entry of a request being sent and returns its index.
func (r *recorder) open(e run.Egress) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.drained {
		return -1 // update and close ignore it
	}
	r.entries = append(r.entries, e)
	r.started = append(r.started, r.now())
	return len(r.entries) - 1
}

// update changes the open entry i as f says. After drain it does
// nothing: a stream the call left open (an MCP session's) may be read or
// closed after the call has ended and its entries were written.
func (r *recorder) update(i int, f func(*run.Egress)) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if i >= 0 && i < len(r.entries) {
		f(&r.entries[i])
	}
}

// close ends entry i: its duration is from its start until now. After
// drain it does nothing, as update.
func (r *recorder) close(i int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if i < 0 || i >= len(r.started) {
		return
	}
	if t := r.started[i]; !t.IsZero() {
		r.entries[i].DurationMS = r.now().Sub(t).Milliseconds()
		r.started[i] = time.Time{}
	}
}

// drain returns the entries recorded, closing any still open, and forgets
// them.
func (r *recorder) drain() []run.Egress {
	for i := range r.started {
		r.close(i)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.entries
	r.entries, r.started = nil, nil
	r.drained = true
	return out
}

// roundTrip sends req through rt, recording it in the recorder of its
// context, if any: method, host, port, the secret names, the body bytes
// each way, the status and the time until the response body is closed. A
// refusal of the egress dialer is recorded with its rule; another failure
// with its error.
func roundTrip(rt http.RoundTripper, req *http.Request) (*http.Response, error) {
	rec := recorderFrom(req.Context())
	if rec == nil {
		return rt.RoundTrip(req)
	}
	e := rec.entry(req.Context(), req.Method, req.URL)
	e.BytesOut = max(req.ContentLength, 0)
	i := rec.open(e)
	if req.ContentLength < 0 && req.Body != nil && req.Body != http.NoBody {
		req = req.WithContext(req.Context()) // a shallow copy: RoundTrip must not change its request
		req.Body = &countedBody{rc: req.Body, add: func(n int64) { rec.update(i, func(e *run.Egress) { e.BytesOut += n }) }}
	}
	resp, err := rt.RoundTrip(req)
	if err != nil {
		rec.update(i, func(e *run.Egress) { failed(e, err) })
		rec.close(i)
		return nil, err
	}
	rec.update(i, func(e *run.Egress) { e.Status = resp.StatusCode })
	resp.Body = &countedBody{rc: resp.Body, add: func(n int64) { rec.update(i, func(e *run.Egress) { e.BytesIn += n }) },
		closed: func() { rec.close(i) }}
	return resp, nil
}

// failed records err on e: a refusal by its rule, anything else as a short
// reason (Service.Call screens it before it is written).
func failed(e *run.Egress, err error) {
	var re *egress.RefusedError
	var dnsErr *net.DNSError
	switch {
	case errors.As(err, &re):
		e.Refused, e.Rule = true, re.Rule
		if e.Rule == "" {
			e.Rule = run.RuleAddress
		}
	case errors.As(err, &dnsErr):
		e.Error = "host not found (DNS)"
	case errors.Is(err, context.DeadlineExceeded):
		e.Error = "timed out"
	case errors.Is(err, context.Canceled):
		e.Error = "canceled"
	default:
		e.Error = err.Error()
	}
}

// countedBody counts the bytes read through it and says when it is closed.
type countedBody struct {
	rc     io.ReadCloser
	add    func(int64)
	closed func()
	once   sync.Once
}

func (c *countedBody) Read(p []byte) (int, error) {
	n, err := c.rc.Read(p)
	if n > 0 {
		c.add(int64(n))
	}
	return n, err
}

func (c *countedBody) Close() error {
	if c.closed != nil {
		c.once.Do(c.closed)
	}
	return c.rc.Close()
}

// recordEgress writes what the call recorded to the Service's EgressLog,
// with every error text screened of the secret values the call read. A
// failure to write is logged, not returned: the requests have been sent,
// and the call's result stands.
func (s *Service) recordEgress(ctx context.Context, runID string, rec *recorder, inv *invocation) {
	entries := rec.drain()
	if s.egress == nil || runID == "" || len(entries) == 0 {
		return
	}
	for i := range entries {
		if entries[i].Error != "" {
			entries[i].Error = inv.Secrets.RedactLoaded(entries[i].Error)
		}
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	if err := s.egress.RecordEgress(ctx, runID, entries); err != nil {
		s.net.log.Error("egress log not written", "run_id", runID, "entries", len(entries), "error", err)
	}
}
