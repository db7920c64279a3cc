package callback_test

import (
	"context"
	"crypto/x509"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentsfleet/agentsfleet/shared/api/webhook"
	"github.com/agentsfleet/agentsfleet/shared/callback"
	"github.com/agentsfleet/agentsfleet/shared/run"
	"github.com/agentsfleet/agentsfleet/shared/web/egress"
)

const secret = "afw_c2VjcmV0c2VjcmV0c2VjcmV0c2VjcmV0c2VjcmV0c2U"

var result = callback.Result{
	RunID: "run_01hx0000000000000000000000", Fleet: "ops", Source: "api",
	Result: run.Result{Status: run.StatusSucceeded, Answer: "deployed main", Usage: callback.Usage{InputTokens: 1200, OutputTokens: 300, ToolCalls: 4}},
}

// delivery is one request a receiver saw.
type delivery struct {
	header http.Header
	body   []byte
	at     time.Time
}

// receiver is an httptest server that answers with answer(n) for its n-th
// request (from 1) and keeps every request.
type receiver struct {
	*httptest.Server
	mu   sync.Mutex
	seen []delivery
}

func newReceiver(t *testing.T, tls bool, answer func(n int, w http.ResponseWriter)) *receiver {
	t.Helper()
	rc := &receiver{}
	rc.Server = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		rc.mu.Lock()
		rc.seen = append(rc.seen, delivery{r.Header.Clone(), b, time.Now()})
		n := len(rc.seen)
		rc.mu.Unlock()
		answer(n, w)
	}))
	if tls {
		rc.StartTLS()
	} else {
		rc.Start()
	}
	t.Cleanup(rc.Close)
	return rc
}

func (rc *receiver) deliveries() []delivery {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]delivery(nil), rc.seen...)
}

func status(code int) func(int, http.ResponseWriter) {
	return func(_ int, w http.ResponseWriter) { w.WriteHeader(code) }
}

// failThen answers code for the first n requests, then 200.
func failThen(n, code int) func(int, http.ResponseWriter) {
	return func(i int, w http.ResponseWriter) {
		if i <= n {
			w.WriteHeader(code)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	}
}

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// sender admits exactly rc (the escape hatch), with fast retries.
func sender(t *testing.T, rc *receiver, mutate ...func(*callback.Config)) *callback.Sender {
	t.Helper()
	cfg := callback.Config{
		Attempts: 5, BaseDelay: time.Millisecond, MaxDelay: 5 * time.Millisecond, MaxElapsed: 10 * time.Second,
		AttemptTimeout: 5 * time.Second, Logger: quiet(),
		Resolver:  egress.Hosts{"example.com": {netip.MustParseAddr("127.0.0.1")}},
		AllowAddr: netip.MustParseAddrPort(rc.Listener.Addr().String()),
	}
	if rc.TLS != nil {
		pool := x509.NewCertPool()
		pool.AddCert(rc.Certificate())
		cfg.RootCAs = pool
	}
	for _, m := range mutate {
		m(&cfg)
	}
	return callback.New(cfg)
}

func TestDeliverSignsTheResult(t *testing.T) {
	t.Parallel()
	rc := newReceiver(t, true, status(http.StatusOK))
	s := sender(t, rc)
	_, port, _ := net.SplitHostPort(rc.Listener.Addr().String())
	url := "https://example.com:" + port + "/hooks/agentsfleet?token=abc"
	if err := s.Check(url); err != nil {
		t.Fatalf("Check(%s) = %v", url, err)
	}
	if err := s.Deliver(context.Background(), url, secret, result); err != nil {
		t.Fatalf("Deliver: %v", err)
	}
	got := rc.deliveries()
	if len(got) != 1 {
		t.Fatalf("receiver saw %d requests, want 1", len(got))
	}
	d := got[0]
	if _, err := webhook.VerifyCallback(secret, d.header, d.body, time.Now()); err != nil {
		t.Fatalf("webhook.VerifyCallback of the delivery: %v", err)
	}
	// Whoever receives it cannot pass it off as a webhook of the fleet.
	if _, err := webhook.Verify(secret, d.header, d.body, time.Now()); !errors.Is(err, webhook.ErrMissing) {
		t.Fatalf("webhook.Verify of the callback = %v, want ErrMissing", err)
	}
	moved := http.Header{}
	moved.Set(webhook.TimestampHeader, d.header.Get(webhook.TimestampHeader))
	moved.Set(webhook.SignatureHeader, d.header.Get(webhook.CallbackSignatureHeader))
	if _, err := webhook.Verify(secret, moved, d.body, time.Now()); !errors.Is(err, webhook.ErrSignature) {
		t.Fatalf("webhook.Verify of the callback's signature in the webhook header = %v, want ErrSignature", err)
	}
	if ct := d.header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type = %q, want application/json", ct)
	}
	var m map[string]any
	if err := json.Unmarshal(d.body, &m); err != nil {
		t.Fatalf("body %s: %v", d.body, err)
	}
	for _, k := range []string{"run_id", "fleet", "status", "source", "answer", "error", "usage"} {
		if _, ok := m[k]; !ok {
			t.Errorf("body %s lacks %s", d.body, k)
		}
	}
	if m["error"] != nil {
		t.Errorf("error = %v, want null for a run that succeeded", m["error"])
	}
	if u := m["usage"].(map[string]any); u["input_tokens"] != 1200.0 || u["tool_calls"] != 4.0 {
		t.Errorf("usage = %v", u)
	}
	var back callback.Result
	if err := json.Unmarshal(d.body, &back); err != nil || back.RunID != result.RunID || back.Answer != result.Answer {
		t.Errorf("round trip = %+v, %v", back, err)
	}
}

func TestDeliverRetries(t *testing.T) {
	t.Parallel()
	failed := result
	failed.Status, failed.Answer, failed.Error = "failed", "", &callback.Error{Code: "UZ-RUN-402", Message: "the run's budget is spent"}
	tests := []struct {
		name      string
		answer    func(int, http.ResponseWriter)
		wantCalls int
		wantCode  int // 0: success
	}{
		{"500 twice, then success", failThen(2, http.StatusInternalServerError), 3, 0},
		{"429 then success", failThen(1, http.StatusTooManyRequests), 2, 0},
		{"always 503: gives up after 5", status(http.StatusServiceUnavailable), 5, http.StatusServiceUnavailable},
		{"400 is not retried", status(http.StatusBadRequest), 1, http.StatusBadRequest},
		{"404 is not retried", status(http.StatusNotFound), 1, http.StatusNotFound},
		{"a redirect is not followed", func(_ int, w http.ResponseWriter) {
			w.Header().Set("Location", "http://169.254.169.254/latest/meta-data/")
			w.WriteHeader(http.StatusFound)
		}, 1, http.StatusFound},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			rc := newReceiver(t, false, tt.answer)
			err := sender(t, rc).Deliver(context.Background(), rc.URL+"/cb", secret, failed)
			var se *callback.StatusError
			switch {
			case tt.wantCode == 0 && err != nil:
				t.Fatalf("Deliver = %v, want nil", err)
			case tt.wantCode != 0 && (!errors.As(err, &se) || se.StatusCode != tt.wantCode):
				t.Fatalf("Deliver = %v, want a StatusError %d", err, tt.wantCode)
			}
			got := rc.deliveries()
			if len(got) != tt.wantCalls {
				t.Fatalf("receiver saw %d requests, want %d", len(got), tt.wantCalls)
			}
			// Every attempt is signed afresh and carries the same body.
			for i, d := range got {
				if _, err := webhook.VerifyCallback(secret, d.header, d.body, time.Now()); err != nil {
					t.Errorf("attempt %d: %v", i+1, err)
				}
				if string(d.body) != string(got[0].body) {
					t.Errorf("attempt %d body %s, want %s", i+1, d.body, got[0].body)
				}
			}
		})
	}
}

func TestDeliverRetriesNetworkErrors(t *testing.T) {
	t.Parallel()
	rc := newReceiver(t, false, func(n int, w http.ResponseWriter) {
		if n == 1 { // drop the connection without an answer
			conn, _, err := w.(http.Hijacker).Hijack()
			if err == nil {
				_ = conn.Close()
			}
			return
		}
		w.WriteHeader(http.StatusOK)
	})
	if err := sender(t, rc).Deliver(context.Background(), rc.URL, secret, result); err != nil {
		t.Fatalf("Deliver = %v, want success on the second attempt", err)
	}
	if n := len(rc.deliveries()); n != 2 {
		t.Fatalf("receiver saw %d requests, want 2", n)
	}
}

func TestDeliverHonoursRetryAfter(t *testing.T) {
	t.Parallel()
	rc := newReceiver(t, false, func(n int, w http.ResponseWriter) {
		if n == 1 {
			w.Header().Set("Retry-After", "1")
			w.WriteHeader(http.StatusTooManyRequests)
			return
		}
		w.WriteHeader(http.StatusOK)
	})
	if err := sender(t, rc).Deliver(context.Background(), rc.URL, secret, result); err != nil {
		t.Fatal(err)
	}
	got := rc.deliveries()
	if len(got) != 2 {
		t.Fatalf("receiver saw %d requests, want 2", len(got))
	}
	if gap := got[1].at.Sub(got[0].at); gap < time.Second {
		t.Fatalf("second attempt %s after the first, want at least the 1s Retry-After (backoff alone is 5ms)", gap)
	}
}

func TestDeliverBoundsTotalTime(t *testing.T) {
	t.Parallel()
	rc := newReceiver(t, false, status(http.StatusBadGateway))
	s := sender(t, rc, func(c *callback.Config) {
		c.Attempts, c.BaseDelay, c.MaxDelay, c.MaxElapsed = 1000, 40*time.Millisecond, 40*time.Millisecond, 300*time.Millisecond
	})
	start := time.Now()
	err := s.Deliver(context.Background(), rc.URL, secret, result)
	if el := time.Since(start); el > time.Second {
		t.Fatalf("Deliver took %s, want at most about MaxElapsed (300ms)", el)
	}
	var se *callback.StatusError
	if !errors.As(err, &se) || se.StatusCode != http.StatusBadGateway || !strings.Contains(err.Error(), "limit") {
		t.Fatalf("Deliver = %v, want giving up at the time limit with the last 502", err)
	}
	if n := len(rc.deliveries()); n < 3 || n > 20 {
		t.Fatalf("receiver saw %d requests, want several (about 300ms / 20-40ms)", n)
	}
	// A Retry-After beyond the limit is not waited for.
	rc2 := newReceiver(t, false, func(_ int, w http.ResponseWriter) {
		w.Header().Set("Retry-After", "3600")
		w.WriteHeader(http.StatusServiceUnavailable)
	})
	start = time.Now()
	err = sender(t, rc2).Deliver(context.Background(), rc2.URL, secret, result)
	if el := time.Since(start); el > time.Second || err == nil || len(rc2.deliveries()) != 1 {
		t.Fatalf("Deliver with Retry-After: 3600 = %v after %s and %d requests; want giving up at once", err, el, len(rc2.deliveries()))
	}
}

func TestDeliverStopsWhenCancelled(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	var calls atomic.Int32
	rc := newReceiver(t, false, func(_ int, w http.ResponseWriter) {
		calls.Add(1)
		cancel()
		w.WriteHeader(http.StatusInternalServerError)
	})
	s := sender(t, rc, func(c *callback.Config) { c.BaseDelay, c.MaxDelay = time.Hour, time.Hour })
	start := time.Now()
	err := s.Deliver(ctx, rc.URL, secret, result)
	if !errors.Is(err, context.Canceled) || time.Since(start) > 5*time.Second {
		t.Fatalf("Deliver = %v after %s, want context.Canceled at once", err, time.Since(start))
	}
	if n := calls.Load(); n != 1 {
		t.Fatalf("receiver saw %d requests, want 1", n)
	}
}

func TestRefusesPrivateAddresses(t *testing.T) {
	t.Parallel()
	rc := newReceiver(t, true, status(http.StatusOK))
	_, port, _ := net.SplitHostPort(rc.Listener.Addr().String())
	pool := x509.NewCertPool()
	pool.AddCert(rc.Certificate())
	// No escape hatch: the production policy.
	s := callback.New(callback.Config{
		Attempts: 5, BaseDelay: time.Millisecond, Logger: quiet(), RootCAs: pool,
		Resolver: egress.Hosts{
			"example.com":  {netip.MustParseAddr("127.0.0.1")},
			"internal.com": {netip.MustParseAddr("10.0.0.7")},
			"mixed.com":    {netip.MustParseAddr("93.184.215.14"), netip.MustParseAddr("169.254.169.254")},
		},
	})
	for _, url := range []string{
		"https://example.com:" + port + "/cb", // a name resolving to loopback
		"https://internal.com/cb",             // to a private address
		"https://mixed.com/cb",                // to public and metadata
	} {
		start := time.Now()
		err := s.Deliver(context.Background(), url, secret, result)
		var re *egress.RefusedError
		if !errors.As(err, &re) {
			t.Errorf("Deliver(%s) = %v, want a RefusedError", url, err)
		}
		if el := time.Since(start); el > 2*time.Second {
			t.Errorf("Deliver(%s) took %s: a refusal must not be retried", url, el)
		}
	}
	if n := len(rc.deliveries()); n != 0 {
		t.Fatalf("the loopback receiver saw %d requests, want 0", n)
	}
}

func TestCheck(t *testing.T) {
	t.Parallel()
	prod := callback.New(callback.Config{Logger: quiet()})
	dev := callback.New(callback.Config{Logger: quiet(), AllowAddr: netip.MustParseAddrPort("127.0.0.1:8080")})
	tests := []struct {
		url       string
		prod, dev bool // allowed
	}{
		{"https://hooks.example.com/agentsfleet?token=x", true, true},
		{"https://hooks.example.com:8443/cb", true, true},
		{"https://93.184.215.14/cb", true, true},
		{"http://hooks.example.com/cb", false, true},
		{"http://127.0.0.1:8080/cb", false, true},
		{"http://127.0.0.1:8081/cb", false, false},
		{"https://127.0.0.1/cb", false, false},
		{"https://[::1]/cb", false, false},
		{"https://10.1.2.3/cb", false, false},
		{"https://169.254.169.254/latest/meta-data/", false, false},
		{"https://[::ffff:169.254.169.254]/", false, false},
		{"https://2130706433/cb", false, false}, // 127.0.0.1 as a legacy literal
		{"https://0x7f.1/cb", false, false},
		{"https://user:pass@hooks.example.com/cb", false, false},
		{"ftp://hooks.example.com/cb", false, false},
		{"hooks.example.com/cb", false, false},
		{"/cb", false, false},
		{"https:///cb", false, false},
		{"https://hooks.example.com:0/cb", false, false},
		{"https://hooks.example.com:99999/cb", false, false},
		{"https://hooks.example.com/" + strings.Repeat("a", 2048), false, false},
		{"", false, false},
	}
	for _, tt := range tests {
		for _, c := range []struct {
			name string
			s    *callback.Sender
			want bool
		}{{"prod", prod, tt.prod}, {"dev", dev, tt.dev}} {
			err := c.s.Check(tt.url)
			var re *egress.RefusedError
			if c.want && err != nil || !c.want && !errors.As(err, &re) {
				t.Errorf("%s Check(%.60q) = %v, want allowed %v", c.name, tt.url, err, c.want)
			}
		}
	}
}

// TestDeliverRecordedLogsEachAttempt: each attempt is an egress entry with
// the receiver's answer; a refused URL is one refused entry; none names
// the URL's path or query.
func TestDeliverRecordedLogsEachAttempt(t *testing.T) {
	t.Parallel()
	rc := newReceiver(t, true, failThen(1, http.StatusServiceUnavailable))
	s := sender(t, rc)
	_, port, _ := net.SplitHostPort(rc.Listener.Addr().String())
	var got []run.Egress
	rec := func(e run.Egress) { got = append(got, e) }
	if err := s.DeliverRecorded(context.Background(), "https://example.com:"+port+"/hook?token=abc", secret, result, rec); err != nil {
		t.Fatalf("DeliverRecorded: %v", err)
	}
	if len(got) != 2 || got[0].Status != http.StatusServiceUnavailable || got[1].Status != http.StatusNoContent {
		t.Fatalf("entries = %+v, want a 503 then a 204", got)
	}
	for _, e := range got {
		if e.Tool != run.ToolCallback || e.Method != "POST" || e.Host != "example.com" || e.Port == 0 || e.BytesOut == 0 || e.Refused {
			t.Errorf("entry %+v, want a POST callback to example.com with its bytes out", e)
		}
	}
	got = nil
	if err := s.DeliverRecorded(context.Background(), "https://10.0.0.1/hook?token=abc", secret, result, rec); err == nil {
		t.Fatal("DeliverRecorded to a private address: nil error, want a refusal")
	}
	if len(got) != 1 || !got[0].Refused || got[0].Rule != run.RuleAddress || got[0].Host != "10.0.0.1" {
		t.Errorf("entries of a refused URL = %+v, want one refused by %s", got, run.RuleAddress)
	}
	b, _ := json.Marshal(got)
	if strings.Contains(string(b), "token") || strings.Contains(string(b), "/hook") {
		t.Errorf("entries name the URL's path or query: %s", b)
	}
}
