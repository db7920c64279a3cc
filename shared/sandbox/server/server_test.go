package server_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentsfleet/agentsfleet/shared/sandbox/server"
	"github.com/agentsfleet/agentsfleet/shared/sandbox/wire"
	"github.com/agentsfleet/agentsfleet/shared/tool"
)

func quietLog() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// newAPI serves the tools over f's roots on an httptest server.
func newAPI(t *testing.T, f *fixture, o server.Options) (*server.Server, *client) {
	t.Helper()
	if o.Token == "" {
		o.Token = testToken
	}
	if o.Tools == nil {
		o.Tools = server.Tools(server.Config{Roots: f.roots, Timeout: time.Minute})
	}
	o.Logger = quietLog()
	srv, err := server.New(o)
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv)
	t.Cleanup(ts.Close)
	return srv, &client{base: ts.URL, token: testToken, http: ts.Client()}
}

func TestAPIStatuses(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	if err := os.WriteFile(filepath.Join(f.work, "a.txt"), []byte("hello\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, c := newAPI(t, f, server.Options{})
	if got := get(t, c.base+wire.HealthPath); got != http.StatusOK {
		t.Fatalf("GET /healthz = %d, want 200 without a token", got)
	}

	wantResult := func(res tool.Result, output string, isError bool) {
		t.Helper()
		if res.Output != output || res.IsError != isError {
			t.Fatalf("got %q (is_error=%v), want %q (is_error=%v)", res.Output, res.IsError, output, isError)
		}
	}
	wantResult(c.result(t, "read", `{"path":"a.txt"}`), "1\thello", false)
	wantResult(c.result(t, "read", ` {"path":"missing.txt"} `), "read: missing.txt does not exist", true)
	wantResult(c.result(t, "read", `{"path":"a.txt","bogus":1}`), `read: unknown argument "bogus"; the arguments are path, offset and limit`, true)
	wantResult(c.result(t, "bash", `{"command":"echo hi"}`), "hi\n[exit code 0]", false)
	wantResult(c.result(t, "bash", `{"command":"exit 7"}`), "[exit code 7]", true)
	wantResult(c.result(t, "list", `{}`), "a.txt", false)

	tests := []struct {
		name   string
		c      *client
		tool   string
		body   string
		header []string
		status int
		errMsg string
	}{
		{"no token", &client{base: c.base}, "read", `{}`, nil, 401, "missing or wrong bearer token"},
		{"wrong token", &client{base: c.base, token: testToken + "x"}, "read", `{}`, nil, 401, "missing or wrong bearer token"},
		{"token prefix", &client{base: c.base, token: testToken[:10]}, "read", `{}`, nil, 401, "missing or wrong bearer token"},
		{"not bearer", c, "read", `{}`, []string{"Authorization", "Basic " + testToken}, 401, "missing or wrong bearer token"},
		{"401 before 404", &client{base: c.base}, "nope", `{}`, nil, 401, "missing or wrong bearer token"},
		{"unknown tool", c, "nope", `{}`, nil, 404, `unknown tool "nope"`},
		{"array body", c, "read", `[]`, nil, 400, "the body must be a JSON object: the tool's arguments"},
		{"string body", c, "read", `"a.txt"`, nil, 400, "the body must be a JSON object"},
		{"empty body", c, "read", ``, nil, 400, "the body must be a JSON object"},
		{"broken JSON", c, "read", `{"path":`, nil, 400, "the body must be a JSON object"},
		{"two objects", c, "read", `{} {}`, nil, 400, "the body must be a JSON object"},
		{"long key", c, "read", `{}`, []string{wire.IdempotencyHeader, strings.Repeat("k", 256)}, 400, "Idempotency-Key header must be 1 to 255"},
		{"key with space", c, "read", `{}`, []string{wire.IdempotencyHeader, "a b"}, 400, "Idempotency-Key header"},
		{"too large", c, "bash", `{"command":"` + strings.Repeat("x", wire.MaxBodyBytes) + `"}`, nil, 413, "the body is larger than"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status, out := tt.c.call(t, tt.tool, tt.body, tt.header...)
			msg, _ := out["error"].(string)
			if status != tt.status || !strings.Contains(msg, tt.errMsg) || len(out) != 1 {
				t.Fatalf("got %d %v, want %d with error %q", status, out, tt.status, tt.errMsg)
			}
		})
	}
	if got := get(t, c.base+"/v1/other"); got != http.StatusNotFound {
		t.Fatalf("GET /v1/other = %d, want 404", got)
	}
}

// brokenTool fails the way a broken environment does.
type brokenTool struct{ *tool.Def[struct{}] }

var brokenSpec = tool.Define[struct{}](tool.About{Name: "broken", Description: "Fails."})

func (brokenTool) Run(context.Context, json.RawMessage) (tool.Result, error) {
	return tool.Result{}, errors.New("secret internal detail /etc/x")
}

func TestAPIHidesInternalErrors(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	_, c := newAPI(t, f, server.Options{Tools: []tool.Tool{brokenTool{brokenSpec}}})
	status, out := c.call(t, "broken", `{}`)
	if status != http.StatusInternalServerError || strings.Contains(fmt.Sprint(out), "secret internal") {
		t.Fatalf("got %d %v, want 500 without the internal error", status, out)
	}
}

func TestNewRefusesAShortToken(t *testing.T) {
	t.Parallel()
	if _, err := server.New(server.Options{Token: "short"}); err == nil {
		t.Fatal("New with a 5-byte token succeeded")
	}
}

// TestIdempotency: a call retried with the same key runs once, even while
// the first is still running, and a new HTTP client sees the same state.
func TestIdempotency(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	_, c := newAPI(t, f, server.Options{})
	appendOnce := `{"command":"echo run >> log.txt; sleep 0.5; wc -l < log.txt"}`

	var wg sync.WaitGroup
	results := make([]tool.Result, 3)
	for i := range results {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// Each retry on a client of its own, as after a lost connection.
			ci := &client{base: c.base, token: testToken, http: &http.Client{Transport: &http.Transport{}}}
			results[i] = ci.result(t, "bash", appendOnce, wire.IdempotencyHeader, "step-1")
		}()
		if i == 0 {
			// The retries come while the first call runs.
			awaitFile(t, filepath.Join(f.work, "log.txt"), "the first call")
		}
	}
	wg.Wait()
	for i, res := range results {
		if res.Output != "1\n[exit code 0]" || res.IsError {
			t.Fatalf("call %d = %q, want the first call's result", i, res.Output)
		}
	}
	// Later, from yet another client: the same answer, still one line.
	fresh := &client{base: c.base, token: testToken, http: &http.Client{Transport: &http.Transport{}}}
	if res := fresh.result(t, "bash", appendOnce, wire.IdempotencyHeader, "step-1"); res.Output != "1\n[exit code 0]" {
		t.Fatalf("replay = %q, want the first result", res.Output)
	}
	if b, _ := os.ReadFile(filepath.Join(f.work, "log.txt")); string(b) != "run\n" {
		t.Fatalf("log.txt = %q, want one run", b)
	}
	// A new key runs again, and the new client sees what the first wrote.
	if res := fresh.result(t, "bash", appendOnce, wire.IdempotencyHeader, "step-2"); res.Output != "2\n[exit code 0]" {
		t.Fatalf("new key = %q, want a second run", res.Output)
	}
	if res := fresh.result(t, "read", `{"path":"log.txt"}`); res.Output != "1\trun\n2\trun" {
		t.Fatalf("read from a new client = %q", res.Output)
	}
	// The same key for a different call is refused.
	status, out := fresh.call(t, "bash", `{"command":"echo other"}`, wire.IdempotencyHeader, "step-1")
	if status != http.StatusUnprocessableEntity {
		t.Fatalf("reused key: %d %v, want 422", status, out)
	}
	// Without a key, a call runs every time.
	for range 2 {
		fresh.result(t, "bash", `{"command":"echo run >> log.txt"}`)
	}
	if b, _ := os.ReadFile(filepath.Join(f.work, "log.txt")); strings.Count(string(b), "run") != 4 {
		t.Fatalf("log.txt = %q, want four runs", b)
	}
}

// TestIdempotentCallOutlivesItsRequest: the caller goes away while the call
// runs; the retry gets the result of that first run.
func TestIdempotentCallOutlivesItsRequest(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	_, c := newAPI(t, f, server.Options{})
	body := `{"command":"sleep 0.5; echo done >> out.txt; echo finished"}`
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, c.base+wire.ToolsPath+"bash", strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+testToken)
	req.Header.Set(wire.IdempotencyHeader, "k")
	if _, err := c.http.Do(req); err == nil {
		t.Fatal("the first request should have been cut off")
	}
	res := c.result(t, "bash", body, wire.IdempotencyHeader, "k")
	if res.Output != "finished\n[exit code 0]" {
		t.Fatalf("retry = %q", res.Output)
	}
	if b, _ := os.ReadFile(filepath.Join(f.work, "out.txt")); string(b) != "done\n" {
		t.Fatalf("out.txt = %q, want one run", b)
	}
}

// serveOn runs srv on a loopback listener until the returned stop is
// called; done receives Serve's error.
func serveOn(t *testing.T, srv *server.Server) (base string, stop context.CancelFunc, done chan error) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done = make(chan error, 1)
	go func() { done <- srv.Serve(ctx, ln, nil) }()
	t.Cleanup(cancel)
	return "http://" + ln.Addr().String(), cancel, done
}

func TestIdleExit(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	srv, err := server.New(server.Options{Token: testToken, Tools: server.Tools(server.Config{Roots: f.roots}), IdleTimeout: 300 * time.Millisecond, Logger: quietLog()})
	if err != nil {
		t.Fatal(err)
	}
	base, _, done := serveOn(t, srv)
	c := &client{base: base, token: testToken, http: &http.Client{}}
	start := time.Now()
	// A call longer than the idle timeout keeps the server up; health
	// checks do not count as calls.
	if res := c.result(t, "bash", `{"command":"sleep 0.6; echo ok"}`); res.Output != "ok\n[exit code 0]" {
		t.Fatalf("long call = %q", res.Output)
	}
	// Health checks keep coming until it stops: they do not keep it up.
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	timeout := time.After(10 * time.Second)
	for {
		select {
		case err := <-done:
			if !errors.Is(err, server.ErrIdle) {
				t.Fatalf("Serve = %v, want ErrIdle", err)
			}
			if since := time.Since(start); since < 900*time.Millisecond {
				t.Fatalf("stopped after %v, before the call had ended and 300ms passed", since)
			}
			return
		case <-timeout:
			t.Fatal("the idle server did not stop while only health checks came")
		case <-tick.C:
			if resp, err := http.Get(base + wire.HealthPath); err == nil {
				resp.Body.Close()
			}
		}
	}
}

func TestGracefulShutdown(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	srv, err := server.New(server.Options{Token: testToken, Tools: server.Tools(server.Config{Roots: f.roots}), ShutdownGrace: 10 * time.Second, Logger: quietLog()})
	if err != nil {
		t.Fatal(err)
	}
	base, stop, done := serveOn(t, srv)
	c := &client{base: base, token: testToken, http: &http.Client{}}
	got := make(chan tool.Result, 1)
	go func() { got <- c.result(t, "bash", `{"command":"touch began; sleep 0.5; echo finished"}`) }()
	awaitFile(t, filepath.Join(f.work, "began"), "the call in progress at shutdown")
	stop() // SIGTERM
	if res := <-got; res.Output != "finished\n[exit code 0]" {
		t.Fatalf("call in progress at shutdown = %q, want it finished", res.Output)
	}
	if err := <-done; err != nil {
		t.Fatalf("Serve = %v", err)
	}
}

func TestShutdownGraceEndsLongCalls(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	srv, err := server.New(server.Options{Token: testToken, Tools: server.Tools(server.Config{Roots: f.roots}), ShutdownGrace: 200 * time.Millisecond, Logger: quietLog()})
	if err != nil {
		t.Fatal(err)
	}
	base, stop, done := serveOn(t, srv)
	go func() {
		req, _ := http.NewRequest(http.MethodPost, base+wire.ToolsPath+"bash", strings.NewReader(`{"command":"touch began; sleep 60"}`))
		req.Header.Set("Authorization", "Bearer "+testToken)
		req.Header.Set(wire.IdempotencyHeader, "long")
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
		}
	}()
	awaitFile(t, filepath.Join(f.work, "began"), "the call that outlasts the grace")
	start := time.Now()
	stop()
	select {
	case <-done:
		if d := time.Since(start); d > 5*time.Second {
			t.Fatalf("shutdown took %v with a 200ms grace", d)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Serve did not return")
	}
}
