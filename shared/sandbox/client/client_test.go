//go:build linux

package client_test

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentsfleet/agentsfleet/shared/sandbox"
	"github.com/agentsfleet/agentsfleet/shared/sandbox/client"
	"github.com/agentsfleet/agentsfleet/shared/sandbox/confine"
	"github.com/agentsfleet/agentsfleet/shared/sandbox/pin"
	"github.com/agentsfleet/agentsfleet/shared/sandbox/sandboxtest"
	"github.com/agentsfleet/agentsfleet/shared/sandbox/server"
	"github.com/agentsfleet/agentsfleet/shared/sandbox/wire"
	"github.com/agentsfleet/agentsfleet/shared/tool"
)

const token = "client-test-token-0123456789abcdef"

// sandboxd is a real sandboxd API (server.New over server.Tools) on
// loopback, with the same tools for direct calls and a count of the
// requests that reached it.
type sandboxd struct {
	url      string
	work     string
	tools    []tool.Tool
	requests atomic.Int64
}

func newSandboxd(t *testing.T, extra ...tool.Tool) *sandboxd {
	t.Helper()
	return startSandboxd(t, nil, extra...)
}

// startSandboxd is newSandboxd serving TLS with tlsConfig, when not nil.
func startSandboxd(t *testing.T, tlsConfig *tls.Config, extra ...tool.Tool) *sandboxd {
	t.Helper()
	work := filepath.Join(sandboxtest.Base(t), "work")
	sandboxtest.Mkdir(t, work)
	if err := confine.PrepareRoots([]string{work}, 0, 0); err != nil {
		t.Fatal(err)
	}
	roots, err := sandbox.New(sandbox.Dirs{Workdir: work})
	if err != nil {
		t.Fatal(err)
	}
	sd := &sandboxd{work: work, tools: append(server.Tools(server.Config{Roots: roots, Timeout: time.Minute}), extra...)}
	srv, err := server.New(server.Options{Token: token, Tools: sd.tools, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sd.requests.Add(1)
		srv.ServeHTTP(w, r)
	}))
	if tlsConfig != nil {
		ts.TLS = tlsConfig
		ts.Config.ErrorLog = log.New(io.Discard, "", 0) // the handshakes the tests make fail
		ts.StartTLS()
	} else {
		ts.Start()
	}
	t.Cleanup(func() {
		ts.Close()
		for _, tl := range sd.tools {
			if c, ok := tl.(io.Closer); ok {
				c.Close()
			}
		}
	})
	sd.url = ts.URL
	return sd
}

// direct is server.Call: what sandboxd answers for name and args.
func (sd *sandboxd) direct(t *testing.T, name, args string) tool.Result {
	t.Helper()
	res, err := server.Call(context.Background(), sd.tools, name, json.RawMessage(args))
	if err != nil {
		t.Fatalf("server.Call(%s, %s) = %v", name, args, err)
	}
	return res
}

func newClient(t *testing.T, cfg client.Config) *client.Client {
	t.Helper()
	if cfg.Token == "" {
		cfg.Token = token
	}
	c, err := client.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// wantError checks that err is a *client.Error matching kind, with status
// and a text that names the sandbox and contains every part, and never a
// token.
func wantError(t *testing.T, err, kind error, status int, parts ...string) *client.Error {
	t.Helper()
	var ce *client.Error
	if !errors.As(err, &ce) {
		t.Fatalf("got %T %v, want a *client.Error", err, err)
	}
	if !errors.Is(err, kind) {
		t.Errorf("got %v, want it to match %v", err, kind)
	}
	if ce.Status != status {
		t.Errorf("got status %d, want %d (%v)", ce.Status, status, err)
	}
	for _, p := range append([]string{"sandbox at " + ce.URL + " "}, parts...) {
		if !strings.Contains(err.Error(), p) {
			t.Errorf("got %q, want it to contain %q", err, p)
		}
	}
	noToken(t, err)
	t.Log(err)
	return ce
}

// noToken fails if the token shows in any printing of err.
func noToken(t *testing.T, err error) {
	t.Helper()
	for _, s := range []string{err.Error(), fmt.Sprintf("%+v", err), fmt.Sprintf("%#v", err)} {
		if strings.Contains(s, token[:16]) {
			t.Errorf("the token shows in the error: %s", s)
		}
	}
}

func TestCallRoundTrip(t *testing.T) {
	t.Parallel()
	sd := newSandboxd(t)
	sandboxtest.Write(t, filepath.Join(sd.work, "a.txt"), "hello\nworld\n")
	c := newClient(t, client.Config{URL: sd.url})
	ctx := context.Background()
	if err := c.Health(ctx); err != nil {
		t.Fatalf("Health = %v", err)
	}
	for _, tt := range []struct{ name, args string }{
		{"read", `{"path":"a.txt"}`},
		{"read", `{"path":"a.txt","offset":2}`},
		{"read", `{"path":"missing.txt"}`}, // the tool's own error: a result
		{"bash", `{"command":"echo hi; echo err >&2"}`},
		{"bash", `{"command":"exit 7"}`},
		{"list", `{}`},
	} {
		got, err := c.Call(ctx, tt.name, json.RawMessage(tt.args), "")
		if err != nil {
			t.Fatalf("Call(%s, %s) = %v", tt.name, tt.args, err)
		}
		if want := sd.direct(t, tt.name, tt.args); !reflect.DeepEqual(got, want) {
			t.Errorf("Call(%s, %s) = %+v, want server.Call's %+v", tt.name, tt.args, got, want)
		}
	}
	// No arguments are {}.
	got, err := c.Call(ctx, "list", nil, "")
	if want := sd.direct(t, "list", `{}`); err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("Call(list, nil) = %+v, %v; want %+v", got, err, want)
	}
	if got, _ := c.Call(ctx, "read", json.RawMessage(`{"path":"missing.txt"}`), ""); !got.IsError {
		t.Errorf("read of a missing file = %+v, want an error result", got)
	}
}

// TestIdempotentRetry: a retry with the same key gets the first result and
// the tool runs once, even when the first call timed out on the client's
// side while sandboxd went on with it.
func TestIdempotentRetry(t *testing.T) {
	t.Parallel()
	sd := newSandboxd(t)
	c := newClient(t, client.Config{URL: sd.url})
	ctx := context.Background()
	appendOnce := json.RawMessage(`{"command":"echo run >> log.txt; wc -l < log.txt"}`)
	runs := func() int {
		b, _ := os.ReadFile(filepath.Join(sd.work, "log.txt"))
		return strings.Count(string(b), "run\n")
	}

	first, err := c.Call(ctx, "bash", appendOnce, "step-1")
	if err != nil || first.Output != "1\n[exit code 0]" {
		t.Fatalf("first call = %+v, %v", first, err)
	}
	again, err := c.Call(ctx, "bash", appendOnce, "step-1")
	if err != nil || !reflect.DeepEqual(again, first) {
		t.Fatalf("retry = %+v, %v; want the first result %+v", again, err, first)
	}
	if n := runs(); n != 1 {
		t.Fatalf("bash ran %d times for one key, want 1", n)
	}
	if res, err := c.Call(ctx, "bash", appendOnce, "step-2"); err != nil || res.Output != "2\n[exit code 0]" {
		t.Fatalf("a new key = %+v, %v; want a second run", res, err)
	}

	// The same key for another call: 422.
	_, err = c.Call(ctx, "bash", json.RawMessage(`{"command":"echo other"}`), "step-1")
	wantError(t, err, client.ErrKeyReused, http.StatusUnprocessableEntity,
		"answered 422 Unprocessable Entity: call bash: the Idempotency-Key was already used for a different call")

	// The caller gives up (call timeout) while the tool still runs; the
	// retry with the key waits for that run instead of starting another.
	slow := json.RawMessage(`{"command":"sleep 0.6; echo slow >> slow.txt; echo finished"}`)
	impatient := newClient(t, client.Config{URL: sd.url, CallTimeout: 100 * time.Millisecond})
	_, err = impatient.Call(ctx, "bash", slow, "slow-1")
	wantError(t, err, client.ErrUnavailable, 0, "did not answer within 100ms: call bash")
	res, err := c.Call(ctx, "bash", slow, "slow-1")
	if err != nil || res.Output != "finished\n[exit code 0]" {
		t.Fatalf("retry after the timeout = %+v, %v", res, err)
	}
	if b, _ := os.ReadFile(filepath.Join(sd.work, "slow.txt")); string(b) != "slow\n" {
		t.Fatalf("slow.txt = %q, want one run", b)
	}
}

// brokenTool fails the way a broken environment does.
type brokenTool struct{ *tool.Def[struct{}] }

func (brokenTool) Run(context.Context, json.RawMessage) (tool.Result, error) {
	return tool.Result{}, errors.New("internal detail /etc/x")
}

// TestSandboxdStatuses: each status the real sandboxd answers gives its
// sentinel and sandboxd's words.
func TestSandboxdStatuses(t *testing.T) {
	t.Parallel()
	sd := newSandboxd(t, brokenTool{tool.Define[struct{}](tool.About{Name: "broken", Description: "Fails."})})
	c := newClient(t, client.Config{URL: sd.url})
	wrong := newClient(t, client.Config{URL: sd.url, Token: token + "x"})
	huge := json.RawMessage(`{"command":"` + strings.Repeat("x", wire.MaxBodyBytes) + `"}`)
	tests := []struct {
		name   string
		c      *client.Client
		tool   string
		args   json.RawMessage
		kind   error
		status int
		text   string
	}{
		{"wrong token", wrong, "read", json.RawMessage(`{}`), client.ErrUnauthorized, 401,
			"answered 401 Unauthorized: call read: missing or wrong bearer token"},
		{"unknown tool", c, "nope", json.RawMessage(`{}`), client.ErrUnknownTool, 404,
			`answered 404 Not Found: call nope: unknown tool "nope"`},
		{"too large", c, "bash", huge, client.ErrTooLarge, 413,
			fmt.Sprintf("answered 413 Request Entity Too Large: call bash: the body is larger than %d bytes", wire.MaxBodyBytes)},
		{"tool failed", c, "broken", json.RawMessage(`{}`), client.ErrToolFailed, 500,
			"answered 500 Internal Server Error: call broken: tool broken failed inside sandboxd; its log says why"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := tt.c.Call(context.Background(), tt.tool, tt.args, "")
			ce := wantError(t, err, tt.kind, tt.status, tt.text)
			if ce.Tool != tt.tool || ce.Op != "call" || ce.Message == "" {
				t.Errorf("got %+v, want op call, tool %s and sandboxd's message", ce, tt.tool)
			}
			if strings.Contains(err.Error(), "internal detail") {
				t.Errorf("an internal error reached the caller: %v", err)
			}
		})
	}
}

// TestCallRefusesBeforeSending: what sandboxd would answer 400 to (and
// names no tool can have) never leaves the client.
func TestCallRefusesBeforeSending(t *testing.T) {
	t.Parallel()
	sd := newSandboxd(t)
	c := newClient(t, client.Config{URL: sd.url})
	tests := []struct {
		name, tool, args, key string
		kind                  error
		text                  string
	}{
		{"array", "read", `[]`, "", client.ErrBadRequest, "was not called: call read: the arguments must be a JSON object"},
		{"string", "read", `"a.txt"`, "", client.ErrBadRequest, "the arguments must be a JSON object"},
		{"null", "read", `null`, "", client.ErrBadRequest, "the arguments must be a JSON object"},
		{"white space", "read", `  `, "", client.ErrBadRequest, "the arguments must be a JSON object"},
		{"broken", "read", `{"path":`, "", client.ErrBadRequest, "the arguments must be a JSON object"},
		{"two objects", "read", `{} {}`, "", client.ErrBadRequest, "the arguments must be a JSON object"},
		{"key with space", "read", `{}`, "a b", client.ErrBadRequest, "the Idempotency-Key must be 1 to 255 visible ASCII characters"},
		{"long key", "read", `{}`, strings.Repeat("k", wire.MaxIdempotencyKey+1), client.ErrBadRequest, "the Idempotency-Key must be 1 to 255"},
		{"path in the name", "../healthz", `{}`, "", client.ErrUnknownTool, `was not called: call ../healthz: no sandbox tool can be named "../healthz"`},
		{"empty name", "", `{}`, "", client.ErrUnknownTool, "no sandbox tool can be named"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := c.Call(context.Background(), tt.tool, json.RawMessage(tt.args), tt.key)
			wantError(t, err, tt.kind, 0, tt.text)
		})
	}
	if n := sd.requests.Load(); n != 0 {
		t.Fatalf("%d requests reached sandboxd, want none", n)
	}
	// The longest key is fine.
	if _, err := c.Call(context.Background(), "list", nil, strings.Repeat("k", wire.MaxIdempotencyKey)); err != nil {
		t.Fatalf("a %d-character key: %v", wire.MaxIdempotencyKey, err)
	}
}

// TestAnswers: the client reads sandboxd's error shape for every status it
// answers, and takes anything else for a sandbox that is not there.
func TestAnswers(t *testing.T) {
	t.Parallel()
	sandboxdError := func(status int, msg string) http.HandlerFunc {
		return func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", wire.ContentType)
			w.WriteHeader(status)
			json.NewEncoder(w).Encode(wire.ErrorBody{Error: msg})
		}
	}
	raw := func(status int, contentType, body string) http.HandlerFunc {
		return func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", contentType)
			w.WriteHeader(status)
			io.WriteString(w, body)
		}
	}
	tests := []struct {
		name    string
		handler http.HandlerFunc
		kind    error
		status  int
		text    string
	}{
		{"400", sandboxdError(400, "the body must be a JSON object: the tool's arguments"), client.ErrBadRequest, 400,
			"answered 400 Bad Request: call bash: the body must be a JSON object"},
		{"401", sandboxdError(401, "missing or wrong bearer token"), client.ErrUnauthorized, 401, "answered 401 Unauthorized"},
		{"404", sandboxdError(404, `unknown tool "bash"`), client.ErrUnknownTool, 404, "answered 404 Not Found"},
		{"413", sandboxdError(413, "too large"), client.ErrTooLarge, 413, "answered 413 Request Entity Too Large"},
		{"422", sandboxdError(422, "reused"), client.ErrKeyReused, 422, "answered 422 Unprocessable Entity"},
		{"500", sandboxdError(500, "failed"), client.ErrToolFailed, 500, "answered 500 Internal Server Error"},
		{"echoes the token", sandboxdError(401, "bad token Bearer "+token), client.ErrUnauthorized, 401, "bad token Bearer [token]"},
		{"a proxy's 502", raw(502, "text/html", "<html>bad gateway</html>"), client.ErrUnavailable, 502,
			"gave an answer that is not sandboxd's: call bash: 502 Bad Gateway (text/html)"},
		{"another server's 404", raw(404, "text/html", "<html>not found</html>"), client.ErrUnavailable, 404,
			"gave an answer that is not sandboxd's: call bash: 404 Not Found"},
		{"a status sandboxd never answers", sandboxdError(409, "conflict"), client.ErrUnavailable, 409, "409 Conflict"},
		{"200 without a result", raw(200, wire.ContentType, `{"status":"ok"}`), client.ErrUnavailable, 200,
			`200 OK, the body is not a tool result {"output", "is_error"}`},
		{"200 HTML", raw(200, "text/html", "<html></html>"), client.ErrUnavailable, 200, "not sandboxd's"},
		{"an image that is not PNG", raw(200, wire.ContentType, `{"output":"x","is_error":false,"image":{"media_type":"image/svg+xml","data":"PHN2Zz4=","width":1,"height":1}}`),
			client.ErrUnavailable, 200, `the result's image is "image/svg+xml", not image/png`},
		{"an image without data", raw(200, wire.ContentType, `{"output":"x","is_error":false,"image":{"media_type":"image/png","data":"","width":1,"height":1}}`),
			client.ErrUnavailable, 200, "the result's image has no data"},
		{"an image without size", raw(200, wire.ContentType, `{"output":"x","is_error":false,"image":{"media_type":"image/png","data":"iVBORw==","width":0,"height":5}}`),
			client.ErrUnavailable, 200, "the result's image is 0×5 pixels"},
		{"an image that is not base64", raw(200, wire.ContentType, `{"output":"x","is_error":false,"image":{"media_type":"image/png","data":"%%%","width":1,"height":1}}`),
			client.ErrUnavailable, 200, "the body is not a tool result"},
		{"a redirect", func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, "http://127.0.0.1:1/elsewhere", http.StatusTemporaryRedirect)
		}, client.ErrUnavailable, 307, "307 Temporary Redirect"},
		{"too long", func(w http.ResponseWriter, _ *http.Request) {
			io.WriteString(w, `{"is_error":false,"output":"`)
			chunk := strings.Repeat("x", 1<<20)
			for range wire.MaxAnswerBytes>>20 + 1 {
				io.WriteString(w, chunk)
			}
			io.WriteString(w, `"}`)
		}, client.ErrUnavailable, 200, fmt.Sprintf("200 OK, the answer is longer than %d bytes", wire.MaxAnswerBytes)},
		{"broken off", func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Length", "100")
			io.WriteString(w, `{"output":`)
		}, client.ErrUnavailable, 200, "broke off its answer: call bash: 200 OK: unexpected EOF"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var auth atomic.Value
			ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				auth.Store(r.Header.Get("Authorization"))
				tt.handler(w, r)
			}))
			defer ts.Close()
			c := newClient(t, client.Config{URL: ts.URL})
			_, err := c.Call(context.Background(), "bash", json.RawMessage(`{"command":"true"}`), "")
			wantError(t, err, tt.kind, tt.status, tt.text)
			if got := auth.Load(); got != "Bearer "+token {
				t.Errorf("Authorization = %q, want the bearer token", got)
			}
		})
	}
}

func TestUnavailable(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	url := "http://" + ln.Addr().String()
	ln.Close()
	c := newClient(t, client.Config{URL: url})
	_, err = c.Call(context.Background(), "bash", json.RawMessage(`{"command":"true"}`), "")
	wantError(t, err, client.ErrUnavailable, 0, "sandbox at "+url+" did not answer: call bash: ", "connection refused")
	wantError(t, c.Health(context.Background()), client.ErrUnavailable, 0, "did not answer: health check: ", "connection refused")

	// A name that does not resolve.
	c = newClient(t, client.Config{URL: "https://sandbox.invalid:8443"})
	_, err = c.Call(context.Background(), "bash", json.RawMessage(`{"command":"true"}`), "")
	wantError(t, err, client.ErrUnavailable, 0, "sandbox at https://sandbox.invalid:8443 did not answer: call bash: ", "sandbox.invalid")
}

// TestTimeout: a sandbox that never answers ends in ErrUnavailable after
// the call timeout, which the error names.
func TestTimeout(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// The server sees the caller go away only once it has read the body.
		io.Copy(io.Discard, r.Body)
		select {
		case <-r.Context().Done():
		case <-release:
		}
	}))
	defer ts.Close()
	defer close(release)
	c := newClient(t, client.Config{URL: ts.URL, CallTimeout: 150 * time.Millisecond, HealthTimeout: 100 * time.Millisecond})
	start := time.Now()
	_, err := c.Call(context.Background(), "bash", json.RawMessage(`{"command":"true"}`), "k")
	wantError(t, err, client.ErrUnavailable, 0, "sandbox at "+ts.URL+" did not answer within 150ms: call bash")
	if elapsed := time.Since(start); elapsed > 5*time.Second {
		t.Errorf("Call returned after %v, want about 150ms", elapsed)
	}
	wantError(t, c.Health(context.Background()), client.ErrUnavailable, 0, "did not answer within 100ms: health check")

	// The caller's own end is not the sandbox's fault.
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	_, err = c.Call(ctx, "bash", json.RawMessage(`{"command":"true"}`), "")
	ce := wantError(t, err, context.DeadlineExceeded, 0, "was not waited for: call bash: context deadline exceeded")
	if errors.Is(ce, client.ErrUnavailable) {
		t.Errorf("%v matches ErrUnavailable; the caller stopped waiting", err)
	}
	ctx, cancel = context.WithCancel(context.Background())
	cancel()
	wantError(t, c.Health(ctx), context.Canceled, 0, "was not waited for: health check: context canceled")
}

func TestHealthNotSandboxd(t *testing.T) {
	t.Parallel()
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "<html>hello</html>")
	}))
	defer ts.Close()
	c := newClient(t, client.Config{URL: ts.URL})
	wantError(t, c.Health(context.Background()), client.ErrUnavailable, 200, "gave an answer that is not sandboxd's: health check: 200 OK")
}

func TestNew(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name string
		cfg  client.Config
		want string // "" for a client
	}{
		{"loopback", client.Config{URL: "http://127.0.0.1:7070"}, ""},
		{"loopback with slash", client.Config{URL: "http://127.0.0.1:7070/"}, ""},
		{"localhost", client.Config{URL: "http://localhost:7070"}, ""},
		{"IPv6 loopback", client.Config{URL: "http://[::1]:7070"}, ""},
		{"https", client.Config{URL: "https://10.0.1.5:8443"}, ""},
		{"plain http allowed", client.Config{URL: "http://10.0.1.5:8080", PlainHTTP: true}, ""},
		{"plain http", client.Config{URL: "http://10.0.1.5:8080"}, "plain http to 10.0.1.5:8080 would send the token in clear text"},
		{"no scheme", client.Config{URL: "10.0.1.5:8443"}, "must be http(s)://host:port"},
		{"other scheme", client.Config{URL: "ftp://10.0.1.5"}, "must be http(s)://host:port"},
		{"no host", client.Config{URL: "https://"}, "must be http(s)://host:port"},
		{"a path", client.Config{URL: "https://10.0.1.5:8443/v1"}, "without a path or query"},
		{"a query", client.Config{URL: "https://10.0.1.5:8443?a=b"}, "without a path or query"},
		{"credentials", client.Config{URL: "https://user:" + token + "@10.0.1.5:8443"}, "must not carry credentials"},
		{"does not parse", client.Config{URL: "https://10.0.1.5:8443/%zz" + token}, "must be http(s)://host:port"},
		{"short token", client.Config{URL: "https://10.0.1.5:8443", Token: "short"}, "the token must be at least 16 bytes"},
		{"token with a space", client.Config{URL: "https://10.0.1.5:8443", Token: token[:10] + " " + token[10:]}, "visible ASCII"},
		{"negative timeout", client.Config{URL: "https://10.0.1.5:8443", CallTimeout: -time.Second}, "cannot be negative"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if tt.cfg.Token == "" {
				tt.cfg.Token = token
			}
			c, err := client.New(tt.cfg)
			if tt.want == "" {
				if err != nil {
					t.Fatalf("New = %v", err)
				}
				if s := fmt.Sprintf("%v %+v %#v %s", c, c, c, c.URL()); strings.Contains(s, token[:16]) || strings.HasSuffix(c.URL(), "/") {
					t.Fatalf("the client prints as %s", s)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("New = %v, want an error containing %q", err, tt.want)
			}
			noToken(t, err)
		})
	}
}

func TestCallTimeoutFor(t *testing.T) {
	t.Parallel()
	if got, want := client.CallTimeoutFor(0), client.DefaultCallTimeout; got != want {
		t.Errorf("CallTimeoutFor(0) = %v, want %v", got, want)
	}
	if got, want := client.DefaultCallTimeout, 2*time.Minute+10*time.Second; got != want {
		t.Errorf("DefaultCallTimeout = %v, want the default tool timeout plus the margin, %v", got, want)
	}
	if got, want := client.CallTimeoutFor(5*time.Minute), 5*time.Minute+client.CallMargin; got != want {
		t.Errorf("CallTimeoutFor(5m) = %v, want %v", got, want)
	}
}

// TestNoCgo: the runner is a CGO_ENABLED=0 Lambda, so nothing the client
// imports may need cgo (confine does; server imports it). The standard
// library's cgo files (net, runtime/cgo) have pure-Go fallbacks.
func TestNoCgo(t *testing.T) {
	t.Parallel()
	goCmd, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command")
	}
	for _, pkg := range []string{"github.com/agentsfleet/agentsfleet/shared/sandbox/client", "github.com/agentsfleet/agentsfleet/shared/sandbox/wire",
		"github.com/agentsfleet/agentsfleet/shared/sandbox/pin"} {
		cmd := exec.Command(goCmd, "list", "-deps", "-f", "{{if and .CgoFiles (not .Standard)}}{{.ImportPath}}{{end}}", pkg)
		// With cgo on, go list shows which packages have cgo files.
		cmd.Env = append(os.Environ(), "CGO_ENABLED=1")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("go list: %v\n%s", err, out)
		}
		if s := strings.TrimSpace(string(out)); s != "" {
			t.Errorf("%s depends on packages that use cgo:\n%s", pkg, s)
		}
	}
}

// pinnedTLS is sandboxd's TLS for tok (sandboxd serve --tls-from-token).
func pinnedTLS(t *testing.T, tok string) *tls.Config {
	t.Helper()
	cfg, err := pin.ServerTLS(tok)
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// TestPinned: the pinned client calls a sandboxd serving the key of its
// token, through Pinned and through Config.Transport = pin.Transport, and
// refuses a sandboxd of another token before it sends anything.
func TestPinned(t *testing.T) {
	t.Parallel()
	sd := startSandboxd(t, pinnedTLS(t, token))
	sandboxtest.Write(t, filepath.Join(sd.work, "a.txt"), "over pinned TLS\n")
	ctx := context.Background()
	pinned, err := client.Pinned(client.Config{URL: sd.url, Token: token, CallTimeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	viaConfig := newClient(t, client.Config{URL: sd.url, Token: token, Transport: pin.Transport(token)})
	for _, c := range []*client.Client{pinned, viaConfig} {
		if err := c.Health(ctx); err != nil {
			t.Fatalf("Health = %v", err)
		}
		for _, tt := range []struct{ name, args, want string }{
			{"read", `{"path":"a.txt"}`, "1\tover pinned TLS"},
			{"bash", `{"command":"echo hi"}`, "hi\n[exit code 0]"},
		} {
			got, err := c.Call(ctx, tt.name, json.RawMessage(tt.args), "")
			if err != nil || got.Output != tt.want || got.IsError {
				t.Errorf("Call(%s, %s) = %+v, %v; want %q", tt.name, tt.args, got, err, tt.want)
			}
		}
	}
	if got := sd.requests.Load(); got != 6 {
		t.Errorf("sandboxd saw %d requests, want 6", got)
	}

	// A sandboxd whose key is another token's: the client sees it is not
	// its sandbox during the handshake, and sends nothing.
	impostor := startSandboxd(t, pinnedTLS(t, "another-token-0123456789abcdef"))
	c, err := client.Pinned(client.Config{URL: impostor.url, Token: token})
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Call(ctx, "bash", json.RawMessage(`{"command":"true"}`), "")
	wantError(t, err, client.ErrUnavailable, 0, "did not answer: call bash: ", "does not hold the sandbox's key")
	if !errors.Is(err, pin.ErrWrongKey) {
		t.Errorf("%v does not match pin.ErrWrongKey", err)
	}
	wantError(t, c.Health(ctx), client.ErrUnavailable, 0, "does not hold the sandbox's key")
	if got := impostor.requests.Load(); got != 0 {
		t.Errorf("the impostor saw %d requests, want 0", got)
	}

	// The same with the unpinned default: a self-signed certificate the
	// system roots do not know.
	plain := newClient(t, client.Config{URL: sd.url})
	wantError(t, plain.Health(ctx), client.ErrUnavailable, 0, "certificate")
}

func TestPinnedRefuses(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name string
		cfg  client.Config
		want string
	}{
		{"plain http", client.Config{URL: "http://127.0.0.1:7070"}, "a pinned key needs an https URL"},
		{"plain http allowed", client.Config{URL: "http://10.0.1.5:8080", PlainHTTP: true}, "a pinned key needs an https URL"},
		{"a transport", client.Config{URL: "https://10.0.1.5:8443", Transport: http.DefaultTransport}, "brings its own transport"},
		{"credentials", client.Config{URL: "https://user:" + token + "@10.0.1.5:8443"}, "must not carry credentials"},
		{"does not parse", client.Config{URL: "https://10.0.1.5:8443/%zz" + token}, "must be http(s)://host:port"},
		{"short token", client.Config{URL: "https://10.0.1.5:8443", Token: "short"}, "the token must be at least 16 bytes"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if tt.cfg.Token == "" {
				tt.cfg.Token = token
			}
			_, err := client.Pinned(tt.cfg)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Pinned = %v, want an error containing %q", err, tt.want)
			}
			noToken(t, err)
		})
	}
}
