package callback

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	mrand "math/rand/v2"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"time"

	"github.com/agentsfleet/agentsfleet/shared/api/webhook"
	"github.com/agentsfleet/agentsfleet/shared/run"
	"github.com/agentsfleet/agentsfleet/shared/web/egress"
)

// Result is the body of a completion callback: the run as GET /v1/runs/{id}
// shows it once it has ended, its result (status succeeded, failed or
// cancelled; error null unless it failed) beside its id, fleet and source
// (api, webhook, schedule, slack).
type Result struct {
	RunID  string `json:"run_id"`
	Fleet  string `json:"fleet"`
	Source string `json:"source"`
	run.Result
}

// Error is why a run failed: a product code (package fault) or one of
// package run's codes, and a message for a person.
type Error = run.Error

// Usage is what a run spent.
type Usage = run.Usage

// MaxURLBytes is the longest callback_url Check accepts.
const MaxURLBytes = 2048

// The defaults of Config's zero fields.
const (
	DefaultAttempts       = 6
	DefaultMaxElapsed     = 5 * time.Minute
	DefaultBaseDelay      = time.Second
	DefaultMaxDelay       = time.Minute
	DefaultAttemptTimeout = 10 * time.Second
)

// Config configures a Sender. Zero fields take the defaults above.
type Config struct {
	// Attempts is how many times a delivery is tried, the first included.
	Attempts int
	// MaxElapsed bounds a whole delivery, attempts and waits together; a
	// wait that would end after it is not started.
	MaxElapsed time.Duration
	// BaseDelay is the wait after the first failed attempt; each later one
	// doubles, up to MaxDelay, and is jittered to between half and all of
	// that. A longer Retry-After wins.
	BaseDelay, MaxDelay time.Duration
	// AttemptTimeout bounds one attempt: connecting, sending and reading
	// the answer's headers.
	AttemptTimeout time.Duration

	// Resolver looks names up for the egress dialer; nil means the system
	// resolver. Tests map names to addresses with egress.Hosts.
	Resolver egress.Resolver
	// AllowAddr is the test-only egress escape hatch (egress.Policy.Allow),
	// which also lets Check accept http URLs. Set it only from
	// egress.AllowFromEnv or in Go tests.
	AllowAddr netip.AddrPort
	// RootCAs verifies servers' certificates; nil means the system pool.
	RootCAs *x509.CertPool
	// Logger receives a line for each failed attempt; nil means
	// slog.Default().
	Logger *slog.Logger
	// Now is the clock deliveries are signed with; nil means time.Now.
	Now func() time.Time
}

// Sender delivers completion callbacks. It is safe for concurrent use.
type Sender struct {
	cfg    Config
	policy egress.Policy
	client *http.Client
	log    *slog.Logger
}

// New returns a Sender for cfg.
func New(cfg Config) *Sender {
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	if cfg.Attempts <= 0 {
		cfg.Attempts = DefaultAttempts
	}
	def(&cfg.MaxElapsed, DefaultMaxElapsed)
	def(&cfg.BaseDelay, DefaultBaseDelay)
	def(&cfg.MaxDelay, DefaultMaxDelay)
	def(&cfg.AttemptTimeout, DefaultAttemptTimeout)
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	log := cfg.Logger
	if log == nil {
		log = slog.Default()
	}
	// Any port: a receiver may listen on 8443. The addresses are what the
	// policy guards.
	policy := egress.Policy{Allow: cfg.AllowAddr}
	dialer := &egress.Dialer{Policy: policy, Resolver: cfg.Resolver, Timeout: cfg.AttemptTimeout, Logger: log}
	transport := &http.Transport{
		Proxy:                  nil, // an environment proxy would dial in the egress dialer's place
		DialContext:            dialer.DialContext,
		TLSClientConfig:        &tls.Config{RootCAs: cfg.RootCAs, MinVersion: tls.VersionTLS12},
		ForceAttemptHTTP2:      true,
		TLSHandshakeTimeout:    cfg.AttemptTimeout,
		ResponseHeaderTimeout:  cfg.AttemptTimeout,
		MaxResponseHeaderBytes: 64 << 10,
		MaxIdleConns:           16,
		IdleConnTimeout:        30 * time.Second,
	}
	client := &http.Client{
		Transport:     transport,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	return &Sender{cfg: cfg, policy: policy, client: client, log: log}
}

// Check returns a *egress.RefusedError when rawURL cannot be a callback_url:
// longer than MaxURLBytes, not absolute, not https (http only with
// Config.AllowAddr set), with user information, without a host, or with a
// host that is an IP address the egress policy refuses. A host name is
// checked for syntax only; the address it resolves to is checked when the
// callback is sent, since that is the address that counts.
func (s *Sender) Check(rawURL string) error {
	_, err := s.check(rawURL)
	return err
}

func (s *Sender) check(rawURL string) (*url.URL, error) {
	if len(rawURL) > MaxURLBytes {
		return nil, &egress.RefusedError{Reason: fmt.Sprintf("the callback_url is longer than %d bytes", MaxURLBytes)}
	}
	u, err := url.Parse(rawURL)
	if err != nil || !u.IsAbs() || u.Opaque != "" {
		return nil, &egress.RefusedError{Reason: "the callback_url is not an absolute URL"}
	}
	port := "443"
	switch u.Scheme {
	case "https":
	case "http":
		if !s.policy.Allow.IsValid() {
			return nil, &egress.RefusedError{Rule: run.RuleScheme, Reason: "the callback_url must be https"}
		}
		port = "80"
	default:
		return nil, &egress.RefusedError{Rule: run.RuleScheme, Reason: fmt.Sprintf("the callback_url's scheme %q is not allowed: it must be https", u.Scheme)}
	}
	if u.User != nil {
		return nil, &egress.RefusedError{Reason: "the callback_url cannot carry a user name or password"}
	}
	if u.Hostname() == "" {
		return nil, &egress.RefusedError{Reason: "the callback_url has no host"}
	}
	if p := u.Port(); p != "" {
		port = p
	}
	n, err := strconv.ParseUint(port, 10, 16)
	if err != nil || n == 0 {
		return nil, &egress.RefusedError{Rule: run.RulePort, Reason: fmt.Sprintf("the callback_url's port %q is not a valid port", port)}
	}
	ip, _, err := egress.ParseHost(u.Hostname())
	if err != nil {
		return nil, &egress.RefusedError{Reason: err.Error()}
	}
	if ip.IsValid() {
		if err := s.policy.Check(netip.AddrPortFrom(ip, uint16(n))); err != nil {
			return nil, err
		}
	}
	return u, nil
}

// StatusError is a delivery the receiver answered outside 2xx.
type StatusError struct {
	StatusCode int
}

func (e *StatusError) Error() string {
	return fmt.Sprintf("the receiver answered %d %s", e.StatusCode, http.StatusText(e.StatusCode))
}

// Deliver POSTs r as JSON to callbackURL, signed with the callback key of
// secret (the fleet's webhook secret: webhook.CallbackKey), under
// webhook.CallbackSignatureHeader, never as a webhook; and retries as the package comment says until the
// receiver answers 2xx (nil), the answer or error is not worth retrying, the
// attempts or MaxElapsed are spent, or ctx is done. The error says which and
// wraps the last attempt's: a *StatusError, a *egress.RefusedError, the
// network's error, or ctx.Err(). Messages name the URL's host and path,
// never its query, which may hold the receiver's token.
func (s *Sender) Deliver(ctx context.Context, callbackURL, secret string, r Result) error {
	return s.DeliverRecorded(ctx, callbackURL, secret, r, nil)
}

// DeliverRecorded is Deliver, calling record (when not nil) with an egress
// log entry for each attempt, or for the refusal of the URL: tool
// run.ToolCallback, the receiver's status, the bytes each way and the
// attempt's time. The entries name the URL's host and port, never its path
// or query.
func (s *Sender) DeliverRecorded(ctx context.Context, callbackURL, secret string, r Result, record func(run.Egress)) error {
	if record == nil {
		record = func(run.Egress) {}
	}
	u, err := s.check(callbackURL)
	if err != nil {
		record(refusal(callbackURL, err, s.cfg.Now()))
		return fmt.Errorf("deliver callback of run %s: %w", r.RunID, err)
	}
	where := u.Scheme + "://" + u.Host + u.EscapedPath()
	body, err := json.Marshal(r)
	if err != nil {
		return fmt.Errorf("deliver callback of run %s: %w", r.RunID, err)
	}
	caller := ctx
	ctx, cancel := context.WithTimeout(ctx, s.cfg.MaxElapsed)
	defer cancel()
	deadline, _ := ctx.Deadline()

	var last error
	for attempt := 1; ; attempt++ {
		retryAfter, err := s.attempt(ctx, u, secret, body, record)
		if err == nil {
			return nil
		}
		if ctx.Err() != nil {
			if caller.Err() == nil && last != nil {
				// The delivery's own limit passed during this attempt: the
				// answer of the one before says why it kept failing.
				return fmt.Errorf("deliver callback of run %s to %s: gave up after %d attempts, the %s limit passing during the last: %w",
					r.RunID, where, attempt, s.cfg.MaxElapsed, last)
			}
			return fmt.Errorf("deliver callback of run %s to %s: attempt %d: %w", r.RunID, where, attempt, errors.Join(ctx.Err(), err))
		}
		last = err
		if !retryable(err) {
			return fmt.Errorf("deliver callback of run %s to %s: %w", r.RunID, where, err)
		}
		if attempt >= s.cfg.Attempts {
			return fmt.Errorf("deliver callback of run %s to %s: gave up after %d attempts: %w", r.RunID, where, attempt, last)
		}
		wait := max(s.backoff(attempt), retryAfter)
		if time.Until(deadline) < wait {
			return fmt.Errorf("deliver callback of run %s to %s: gave up after %d attempts, waiting %s more would pass the %s limit: %w",
				r.RunID, where, attempt, wait.Round(time.Millisecond), s.cfg.MaxElapsed, last)
		}
		s.log.Warn("callback attempt failed; retrying", "run", r.RunID, "to", where, "attempt", attempt, "wait", wait, "error", err.Error())
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			if caller.Err() == nil {
				return fmt.Errorf("deliver callback of run %s to %s: gave up after %d attempts, the %s limit passing while it waited: %w",
					r.RunID, where, attempt, s.cfg.MaxElapsed, last)
			}
			return fmt.Errorf("deliver callback of run %s to %s: waiting to retry: %w", r.RunID, where, errors.Join(ctx.Err(), last))
		case <-t.C:
		}
	}
}

// attempt sends once. retryAfter is what a 429 or 5xx answer's Retry-After
// header asked for (0 if nothing).
func (s *Sender) attempt(ctx context.Context, u *url.URL, secret string, body []byte, record func(run.Egress)) (retryAfter time.Duration, err error) {
	ctx, cancel := context.WithTimeout(ctx, s.cfg.AttemptTimeout)
	defer cancel()
	e := entry(u, s.cfg.Now())
	e.BytesOut = int64(len(body))
	defer func() {
		e.DurationMS = s.cfg.Now().Sub(e.Time).Milliseconds()
		if e.Status == 0 && err != nil {
			markFailed(&e, err)
		}
		record(e)
	}()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u.String(), bytes.NewReader(body))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "agentsfleet-callback/1.0")
	webhook.SetCallbackHeaders(req.Header, secret, s.cfg.Now(), body)
	resp, err := s.client.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // its message repeats the whole URL, query included
		}
		return 0, err
	}
	e.Status = resp.StatusCode
	e.BytesIn, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10)) // lets the connection be reused
	_ = resp.Body.Close()
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		return 0, nil
	}
	if resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode >= 500 {
		retryAfter = parseRetryAfter(resp.Header.Get("Retry-After"), s.cfg.Now())
	}
	return retryAfter, &StatusError{StatusCode: resp.StatusCode}
}

// entry is the egress log entry of a POST to u begun at t.
func entry(u *url.URL, t time.Time) run.Egress {
	port := 443
	if u.Scheme == "http" {
		port = 80
	}
	if p, err := strconv.Atoi(u.Port()); err == nil {
		port = p
	}
	return run.Egress{Time: t.UTC(), Tool: run.ToolCallback, Method: http.MethodPost, Host: u.Hostname(), Port: port, Secrets: []string{}}
}

// refusal is the entry of a callback_url Check refused: nothing was sent.
func refusal(rawURL string, err error, t time.Time) run.Egress {
	u, perr := url.Parse(rawURL)
	if perr != nil || len(rawURL) > MaxURLBytes {
		u = &url.URL{}
	}
	e := entry(u, t)
	markFailed(&e, err)
	return e
}

// markFailed records on e why an attempt got no answer: a refusal by its
// rule (the callback_url's own checks name none: run.RuleHost), anything
// else as the error's text, which names no URL.
func markFailed(e *run.Egress, err error) {
	var re *egress.RefusedError
	if errors.As(err, &re) {
		e.Refused, e.Rule = true, re.Rule
		if e.Rule == "" {
			e.Rule = run.RuleHost
		}
		return
	}
	e.Error = err.Error()
}

// retryable reports whether a failed attempt is worth another: a 429 or
// 5xx answer, or a network error other than a refusal by the policy or a
// certificate that does not verify (neither changes by waiting).
func retryable(err error) bool {
	var se *StatusError
	if errors.As(err, &se) {
		return se.StatusCode == http.StatusTooManyRequests || se.StatusCode >= 500
	}
	var re *egress.RefusedError
	var ce *tls.CertificateVerificationError
	return !errors.As(err, &re) && !errors.As(err, &ce)
}

// backoff is the wait after failed attempt n (1, 2, …): BaseDelay·2^(n-1)
// up to MaxDelay, jittered to between half and all of it.
func (s *Sender) backoff(n int) time.Duration {
	d := s.cfg.BaseDelay
	for i := 1; i < n && d < s.cfg.MaxDelay; i++ {
		d *= 2
	}
	d = min(d, s.cfg.MaxDelay)
	return d/2 + mrand.N(d/2+1)
}

// parseRetryAfter reads delay-seconds or an HTTP date; 0 for anything else
// or a time already past.
func parseRetryAfter(v string, now time.Time) time.Duration {
	if v == "" {
		return 0
	}
	if n, err := strconv.ParseInt(v, 10, 64); err == nil {
		return time.Duration(min(max(n, 0), 24*60*60)) * time.Second // a day is past any MaxElapsed worth having
	}
	if t, err := http.ParseTime(v); err == nil && t.After(now) {
		return t.Sub(now)
	}
	return 0
}
