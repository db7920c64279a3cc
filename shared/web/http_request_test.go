package web_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/agentsfleet/agentsfleet/shared/web/wire"
)

// apiFake is a small JSON API: /echo answers with what it received,
// /status/{code} with that status, /big with 2 MiB, /bin with bytes.
func apiFake() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/echo", func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("X-RateLimit-Remaining", "41")
		w.Header().Set("X-Request-Id", "req-7")
		w.Header().Set("Set-Cookie", "session=abc")
		w.Header().Set("Server", "fake/1.0")
		json.NewEncoder(w).Encode(map[string]any{
			"method": r.Method, "path": r.URL.Path, "query": r.URL.RawQuery, "body": string(body),
			"content_type": r.Header.Get("Content-Type"), "x_custom": r.Header.Get("X-Custom"), "user_agent": r.Header.Get("User-Agent"),
		})
	})
	mux.HandleFunc("/status/{code}", func(w http.ResponseWriter, r *http.Request) {
		var code int
		fmt.Sscan(r.PathValue("code"), &code)
		w.Header().Set("Content-Type", "text/plain")
		w.Header().Set("Retry-After", "30")
		w.WriteHeader(code)
		fmt.Fprintf(w, "status %d body", code)
	})
	mux.HandleFunc("/big", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		w.Write([]byte(strings.Repeat("z", 2<<20)))
	})
	mux.HandleFunc("/bin", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/zip")
		w.Write([]byte("PK\x03\x04\x00\xff\xfe"))
	})
	mux.HandleFunc("/to", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, r.URL.Query().Get("u"), http.StatusFound)
	})
	return mux
}

func TestHTTPRequest(t *testing.T) {
	t.Parallel()
	srv := startServer(t, true, apiFake())
	svc := newService(t, srv)
	f := fleet{hosts: []string{"api.example.com"}}

	res := call(t, svc, wire.ToolHTTPRequest, map[string]any{"url": srv.url("api.example.com", "/echo?a=1"), "headers": map[string]string{"X-Custom": "yes"}}, f)
	wantOK(t, res, "HTTP 200 OK\ncontent-type: application/json\n", "x-ratelimit-remaining: 41", "x-request-id: req-7",
		`"method":"GET"`, `"query":"a=1"`, `"x_custom":"yes"`, `"user_agent":"agentsfleet-http_request/1.0"`)
	if strings.Contains(res.Output, "session=abc") || strings.Contains(res.Output, "fake/1.0") {
		t.Fatalf("output shows headers that are not useful: %s", res.Output)
	}

	res = call(t, svc, wire.ToolHTTPRequest, map[string]any{"method": "post", "url": srv.url("api.example.com", "/echo"), "body": json.RawMessage(`{"name": "x", "n": 2}`)}, f)
	wantOK(t, res, `"method":"POST"`, `"body":"{\"name\":\"x\",\"n\":2}"`, `"content_type":"application/json"`)

	res = call(t, svc, wire.ToolHTTPRequest, map[string]any{"method": "PUT", "url": srv.url("api.example.com", "/echo"), "body": "plain text", "headers": map[string]string{"Content-Type": "text/plain"}}, f)
	wantOK(t, res, `"method":"PUT"`, `"body":"plain text"`, `"content_type":"text/plain"`)

	res = call(t, svc, wire.ToolHTTPRequest, map[string]any{"url": srv.url("api.example.com", "/status/429")}, f)
	wantError(t, res, "HTTP 429 Too Many Requests", "retry-after: 30", "status 429 body")
	res = call(t, svc, wire.ToolHTTPRequest, map[string]any{"url": srv.url("api.example.com", "/status/204")}, f)
	wantOK(t, res, "HTTP 204 No Content", "[empty body]")

	res = call(t, svc, wire.ToolHTTPRequest, map[string]any{"method": "HEAD", "url": srv.url("api.example.com", "/echo")}, f)
	wantOK(t, res, "HTTP 200 OK")

	res = call(t, svc, wire.ToolHTTPRequest, map[string]any{"url": srv.url("api.example.com", "/big")}, f)
	wantOK(t, res, "[body cut at 1 MiB: the response was longer]")
	if len(res.Output) > 1<<20+1024 {
		t.Fatalf("output is %d bytes, want at most 1 MiB of body", len(res.Output))
	}
	res = call(t, svc, wire.ToolHTTPRequest, map[string]any{"url": srv.url("api.example.com", "/bin")}, f)
	wantOK(t, res, "[binary body: 7 bytes of application/zip, not shown]")

	res = call(t, svc, wire.ToolHTTPRequest, map[string]any{"url": srv.url("api.example.com", "/to?u=/echo")}, f)
	wantOK(t, res, "[after redirects, from https://api.example.com:"+srv.port()+"/echo]")
}

func TestHTTPRequestRefusals(t *testing.T) {
	t.Parallel()
	srv := startServer(t, true, apiFake())
	svc := newService(t, srv)
	f := fleet{hosts: []string{"api.example.com", "internal.example.com", "169.254.169.254", "localhost"}}
	tests := []struct {
		args map[string]any
		want string
	}{
		{map[string]any{"url": srv.url("evil.example.com", "/echo")}, "host evil.example.com is not in the fleet's network host list"},
		{map[string]any{"url": "https://internal.example.com/"}, "resolves to 10.0.0.5"},
		{map[string]any{"url": "http://169.254.169.254/latest/meta-data/"}, "cloud metadata"},
		{map[string]any{"url": "http://2852039166/latest/meta-data/"}, "cloud metadata"}, // the listed address, spelled as a number
		{map[string]any{"url": srv.url("api.example.com", "/to?u=https://evil.example.com/")}, "evil.example.com is not in the fleet's network host list"},
		{map[string]any{"url": srv.url("api.example.com", "/to?u=https://internal.example.com/")}, "resolves to 10.0.0.5"},
		{map[string]any{"url": "ftp://api.example.com/"}, `scheme "ftp"`},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprint(tt.args["url"]), func(t *testing.T) {
			t.Parallel()
			wantError(t, call(t, svc, wire.ToolHTTPRequest, tt.args, f), "refused", tt.want)
		})
	}
	t.Cleanup(func() { // after the parallel subtests
		if n := srv.hitsFor("evil.example.com"); n != 0 {
			t.Errorf("unlisted host got %d requests", n)
		}
	})
}

func TestHTTPRequestArguments(t *testing.T) {
	t.Parallel()
	srv := startServer(t, true, apiFake())
	svc := newService(t, srv)
	f := fleet{hosts: []string{"api.example.com"}}
	u := srv.url("api.example.com", "/echo")
	tests := []struct {
		args map[string]any
		want string
	}{
		{map[string]any{}, `"url" is required`},
		{map[string]any{"url": u, "method": "TRACE"}, `argument "method" must be one of GET, HEAD, POST, PUT, PATCH, DELETE or OPTIONS, not "TRACE"`},
		{map[string]any{"url": u, "headers": map[string]any{"Host": "evil.example.com"}}, "header Host cannot be set"},
		{map[string]any{"url": u, "headers": map[string]any{"Bad Name": "x"}}, "not a valid header name"},
		{map[string]any{"url": u, "headers": map[string]any{"X-A": "a\r\nX-B: b"}}, "not valid in a header"},
		{map[string]any{"url": u, "headers": map[string]any{"X-N": 3}}, `argument "headers.X-N" must be a string, not 3`},
		{map[string]any{"url": u, "body": strings.Repeat("b", 1<<20+1)}, `argument "body" must be at most 1048576 bytes, not 1048577`},
		{map[string]any{"url": u, "timeout": 3}, `unknown argument "timeout"`},
	}
	for _, tt := range tests {
		wantError(t, call(t, svc, wire.ToolHTTPRequest, tt.args, f), tt.want)
	}
	if n := srv.hitsFor("api.example.com"); n != 0 {
		t.Errorf("invalid requests reached the server %d times", n)
	}
}

func TestHTTPRequestArgumentWording(t *testing.T) {
	t.Parallel()
	srv := startServer(t, true, apiFake())
	svc := newService(t, srv)
	f := fleet{hosts: []string{"api.example.com"}}
	u := srv.url("api.example.com", "/echo")
	for _, tt := range []struct {
		args map[string]any
		want string
	}{
		{map[string]any{}, `http_request: argument "url" is required`},
		{map[string]any{"url": ""}, `http_request: argument "url" must not be empty`},
		{map[string]any{"url": u, "timeout": 3}, `http_request: unknown argument "timeout"; the arguments are method, url, headers and body`},
		{map[string]any{"url": u, "method": "TRACE"}, `http_request: argument "method" must be one of GET, HEAD, POST, PUT, PATCH, DELETE or OPTIONS, not "TRACE"`},
		{map[string]any{"url": u, "method": 7}, `http_request: argument "method" must be a string, not 7`},
		{map[string]any{"url": u, "headers": map[string]any{"X-N": 3}}, `http_request: argument "headers.X-N" must be a string, not 3`},
		{map[string]any{"url": u, "headers": []string{"X-N: 3"}}, `http_request: argument "headers" must be an object of strings, not an array`},
		{map[string]any{"url": u, "body": strings.Repeat("b", 1<<20+1)}, `http_request: argument "body" must be at most 1048576 bytes, not 1048577`},
		// Checks made after decoding keep their own words.
		{map[string]any{"url": u, "headers": map[string]any{"Bad Name": "x"}}, `http_request GET ` + u + `: "Bad Name" is not a valid header name`},
	} {
		wantText(t, call(t, svc, wire.ToolHTTPRequest, tt.args, f), tt.want)
	}
	// The method is read in any case, around white space.
	for _, m := range []string{"post", " Post ", "POST"} {
		wantOK(t, call(t, svc, wire.ToolHTTPRequest, map[string]any{"url": u, "method": m}, f), `"method":"POST"`)
	}
	if n := srv.hitsFor("api.example.com"); n != 3 {
		t.Errorf("the server got %d requests, want the 3 valid ones", n)
	}
}
