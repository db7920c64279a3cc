package web_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/agentsfleet/agentsfleet/shared/web"
	"github.com/agentsfleet/agentsfleet/shared/web/wire"
)

func TestWebFetchTLS(t *testing.T) {
	t.Parallel()
	mux := http.NewServeMux()
	mux.HandleFunc("/doc", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, "<html><head><title>Runbook</title></head><body><nav>Menu</nav><main><h1>Runbook</h1><p>Restart the worker with care.</p></main></body></html>")
	})
	mux.HandleFunc("/to", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, r.URL.Query().Get("u"), http.StatusFound)
	})
	mux.HandleFunc("/big", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		w.Write([]byte(strings.Repeat("y", 2<<20)))
	})
	srv := startServer(t, true, mux)
	svc := newService(t, srv)
	listed := fleet{hosts: []string{"https://api.example.com:443/repos", "internal.example.com", "www.example.com"}}

	res := call(t, svc, wire.ToolWebFetchTLS, map[string]any{"url": srv.url("api.example.com", "/doc")}, listed)
	wantOK(t, res, "<web_content source=\"https://api.example.com:"+srv.port()+"/doc\">", "Restart the worker with care.")

	tests := []struct {
		url  string
		want string
	}{
		{strings.Replace(srv.url("api.example.com", "/doc"), "https:", "http:", 1), "web_fetch requires https"},
		{srv.url("evil.example.com", "/doc"), "host evil.example.com is not in the fleet's network host list"},
		{"https://internal.example.com/", "resolves to 10.0.0.5"}, // listed, but private
		{srv.url("127.0.0.1", "/doc"), "host 127.0.0.1 is not in the fleet's network host list"},
		{srv.url("api.example.com", "/to?u=https://evil.example.com:"+srv.port()+"/doc"), "evil.example.com is not in the fleet's network host list"},
		{srv.url("api.example.com", "/to?u=http://www.example.com:"+srv.port()+"/doc"), "requires https"},
		{srv.url("api.example.com", "/to?u=https://internal.example.com/"), "resolves to 10.0.0.5"},
		{srv.url("api.example.com", "/doc?t=«secret:TOKEN»"), "does not fill secret references"},
	}
	for _, tt := range tests {
		wantError(t, call(t, svc, wire.ToolWebFetchTLS, map[string]any{"url": tt.url}, listed), "refused", tt.want)
	}
	if n := srv.hitsFor("evil.example.com"); n != 0 {
		t.Errorf("unlisted host got %d requests, want 0", n)
	}

	res = call(t, svc, wire.ToolWebFetchTLS, map[string]any{"url": srv.url("api.example.com", "/big")}, listed)
	wantOK(t, res, "[cut: the page is larger than 1 MiB")
	if len(res.Output) > 1<<20+1024 {
		t.Fatalf("output is %d bytes, want at most 1 MiB of page", len(res.Output))
	}

	// No host list, nothing allowed.
	wantError(t, call(t, svc, wire.ToolWebFetchTLS, map[string]any{"url": srv.url("api.example.com", "/doc")}, fleet{}), "not in the fleet's network host list")
}

func TestWebFetchTLSChecksCertificates(t *testing.T) {
	t.Parallel()
	srv := startServer(t, true, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "hello") }))
	svc := newService(t, srv, func(c *web.Config) { c.RootCAs = nil }) // system roots do not know the test CA
	res := call(t, svc, wire.ToolWebFetchTLS, map[string]any{"url": srv.url("api.example.com", "/")}, fleet{hosts: []string{"api.example.com"}})
	wantError(t, res, "TLS certificate")
}

func TestWebFetchTLSArgumentWording(t *testing.T) {
	t.Parallel()
	svc, err := web.NewService(web.Config{Logger: quietLog()})
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct{ args, want string }{
		{`{"url":7}`, `web_fetch: argument "url" must be a string, not 7`},
		{`{}`, `web_fetch: argument "url" is required`},
		{`{"url":"https://api.example.com/","depth":2}`, `web_fetch: unknown argument "depth"; the arguments are url`},
	} {
		res, err := svc.Call(t.Context(), wire.Request{Tool: wire.ToolWebFetchTLS, Arguments: json.RawMessage(tt.args), Hosts: []string{"api.example.com"}})
		if err != nil || !res.IsError || res.Output != tt.want {
			t.Errorf("web_fetch(%s) = %q, %v; want the error result %q", tt.args, res.Output, err, tt.want)
		}
	}
}
