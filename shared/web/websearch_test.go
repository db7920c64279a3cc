package web_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/agentsfleet/agentsfleet/shared/web"
	"github.com/agentsfleet/agentsfleet/shared/web/search"
	"github.com/agentsfleet/agentsfleet/shared/web/wire"
)

// searchFakes serves both backends' APIs on one server: SearXNG at
// /search?format=json and Brave at /res/v1/web/search. The query "fail"
// makes either answer 500; "nothing" finds nothing.
func searchFakes() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/search", func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query().Get("q")
		if r.URL.Query().Get("format") != "json" || q == "fail" {
			http.Error(w, "engine error", http.StatusInternalServerError)
			return
		}
		var results []map[string]string
		if q != "nothing" {
			for i := 1; i <= 10; i++ {
				results = append(results, map[string]string{"title": fmt.Sprintf("Searx hit %d", i), "url": fmt.Sprintf("https://s%d.example.org/", i), "content": "about " + q})
			}
		}
		json.NewEncoder(w).Encode(map[string]any{"query": q, "results": results, "unresponsive_engines": []any{}})
	})
	mux.HandleFunc("/res/v1/web/search", func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-Subscription-Token") != "brave-key" {
			http.Error(w, `{"error":"bad token"}`, http.StatusUnauthorized)
			return
		}
		q := r.URL.Query().Get("q")
		if q == "fail" {
			http.Error(w, `{"error":"boom"}`, http.StatusInternalServerError)
			return
		}
		var results []map[string]string
		for i := 1; i <= 3; i++ {
			results = append(results, map[string]string{"title": fmt.Sprintf("Brave <strong>hit</strong> %d", i), "url": fmt.Sprintf("https://b%d.example.org/", i), "description": "snippet for " + q})
		}
		json.NewEncoder(w).Encode(map[string]any{"web": map[string]any{"results": results}})
	})
	return mux
}

func TestWebSearchSearXNG(t *testing.T) {
	t.Parallel()
	srv := startServer(t, false, searchFakes())
	svc := newService(t, srv, func(c *web.Config) {
		c.Search = search.Config{Kind: search.KindSearXNG, URL: srv.url("search.example.com", "/")}
	})
	res := call(t, svc, wire.ToolWebSearch, map[string]any{"query": "tidal power"}, fleet{})
	wantOK(t, res, "<web_content source=\"websearch: tidal power\">\n[Untrusted text from the web:",
		"1. Searx hit 1\n   https://s1.example.org/\n   about tidal power", "8. Searx hit 8")
	if strings.Contains(res.Output, "Searx hit 9") {
		t.Fatalf("default max_results is 8, got more:\n%s", res.Output)
	}
	res = call(t, svc, wire.ToolWebSearch, map[string]any{"query": "tidal power", "max_results": 2}, fleet{})
	if strings.Contains(res.Output, "Searx hit 3") || !strings.Contains(res.Output, "Searx hit 2") {
		t.Fatalf("max_results 2 gave:\n%s", res.Output)
	}
	res = call(t, svc, wire.ToolWebSearch, map[string]any{"query": "nothing"}, fleet{})
	wantOK(t, res, "found no results")

	res = call(t, svc, wire.ToolWebSearch, map[string]any{"query": "fail"}, fleet{})
	wantError(t, res, "websearch failed", "SearXNG answered HTTP 500", "does not mean that nothing exists")
	if strings.Contains(res.Output, "no results") {
		t.Fatalf("a failed search reads like an empty one: %q", res.Output)
	}
}

func TestWebSearchBrave(t *testing.T) {
	t.Parallel()
	srv := startServer(t, true, searchFakes())
	svc := newService(t, srv, func(c *web.Config) {
		c.Search = search.Config{Kind: search.KindBrave, URL: srv.url("search.example.com", "/res/v1/web/search"), APIKey: "brave-key"}
	})
	res := call(t, svc, wire.ToolWebSearch, map[string]any{"query": "ferries", "max_results": 20}, fleet{})
	wantOK(t, res, "1. Brave hit 1\n   https://b1.example.org/\n   snippet for ferries", "3. Brave hit 3")
	res = call(t, svc, wire.ToolWebSearch, map[string]any{"query": "fail"}, fleet{})
	wantError(t, res, "Brave Search answered HTTP 500", "does not mean that nothing exists")
}

func TestWebSearchFailures(t *testing.T) {
	t.Parallel()
	srv := startServer(t, false, searchFakes())
	tests := []struct {
		name   string
		search search.Config
		args   map[string]any
		want   []string
	}{
		{"not configured", search.Config{}, map[string]any{"query": "x"}, []string{"no search backend is configured", "does not mean that nothing exists"}},
		{"private backend", search.Config{Kind: search.KindSearXNG, URL: "http://internal.example.com/"}, map[string]any{"query": "x"},
			[]string{"refused", "10.0.0.5", "does not mean that nothing exists"}},
		{"backend on another port", search.Config{Kind: search.KindSearXNG, URL: "http://public.example.com:8888/"}, map[string]any{"query": "x"},
			[]string{"port 8888 is not allowed", "does not mean that nothing exists"}},
		{"unreachable name", search.Config{Kind: search.KindSearXNG, URL: "http://nowhere.example.com/"}, map[string]any{"query": "x"},
			[]string{"not found", "does not mean that nothing exists"}},
		{"empty query", search.Config{Kind: search.KindSearXNG, URL: srv.url("search.example.com", "/")}, map[string]any{"query": "  "}, []string{`"query" must not be empty`}},
		{"too many", search.Config{Kind: search.KindSearXNG, URL: srv.url("search.example.com", "/")}, map[string]any{"query": "x", "max_results": 21}, []string{"between 1 and 20"}},
		{"zero", search.Config{Kind: search.KindSearXNG, URL: srv.url("search.example.com", "/")}, map[string]any{"query": "x", "max_results": 0}, []string{"between 1 and 20"}},
		{"fraction", search.Config{Kind: search.KindSearXNG, URL: srv.url("search.example.com", "/")}, map[string]any{"query": "x", "max_results": 2.5}, []string{"must be an integer"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			svc := newService(t, srv, func(c *web.Config) { c.Search = tt.search })
			wantError(t, call(t, svc, wire.ToolWebSearch, tt.args, fleet{}), tt.want...)
		})
	}
}

func TestWebSearchArgumentWording(t *testing.T) {
	t.Parallel()
	svc, err := web.NewService(web.Config{Logger: quietLog()})
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct{ args, want string }{
		{`{}`, `websearch: argument "query" is required`},
		{`{"query":"  "}`, `websearch: argument "query" must not be empty`},
		{`{"query":3}`, `websearch: argument "query" must be a string, not 3`},
		{`{"query":"x","max_results":21}`, `websearch: argument "max_results" must be between 1 and 20, not 21`},
		{`{"query":"x","max_results":0}`, `websearch: argument "max_results" must be between 1 and 20, not 0`},
		{`{"query":"x","max_results":2.5}`, `websearch: argument "max_results" must be an integer, not 2.5`},
		{`{"query":"x","max_results":"8"}`, `websearch: argument "max_results" must be an integer, not a string`},
		{`{"query":"x","lang":"en"}`, `websearch: unknown argument "lang"; the arguments are query and max_results`},
	} {
		res, err := svc.Call(t.Context(), wire.Request{Tool: wire.ToolWebSearch, Arguments: json.RawMessage(tt.args)})
		if err != nil || !res.IsError || res.Output != tt.want {
			t.Errorf("websearch(%s) = %q, %v; want the error result %q", tt.args, res.Output, err, tt.want)
		}
	}
}
