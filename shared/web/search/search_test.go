package search_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/agentsfleet/agentsfleet/shared/web/search"
)

const braveKey = "BSA-test-key-123"

// braveFake serves the Brave Search API's web search as documented: the
// token in X-Subscription-Token, q and count in the query, results under
// web.results with <strong> decorations when text_decorations is on.
func braveFake(t *testing.T) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/res/v1/web/search" {
			http.NotFound(w, r)
			return
		}
		if r.Header.Get("X-Subscription-Token") != braveKey {
			w.WriteHeader(http.StatusUnauthorized)
			fmt.Fprintf(w, `{"type":"ErrorResponse","error":{"code":"SUBSCRIPTION_TOKEN_INVALID","detail":"The provided subscription token %s is invalid."}}`, r.Header.Get("X-Subscription-Token"))
			return
		}
		q := r.URL.Query()
		count, _ := strconv.Atoi(q.Get("count"))
		if count < 1 || count > 20 {
			w.WriteHeader(http.StatusUnprocessableEntity)
			return
		}
		if q.Get("q") == "ratelimited" {
			w.WriteHeader(http.StatusTooManyRequests)
			fmt.Fprint(w, `{"type":"ErrorResponse","error":{"code":"RATE_LIMITED","detail":"Request rate limit exceeded."}}`)
			return
		}
		type result struct {
			Title       string `json:"title"`
			URL         string `json:"url"`
			Description string `json:"description"`
		}
		var results []result
		for i := 1; i <= 25 && len(results) < count; i++ {
			results = append(results, result{
				Title:       fmt.Sprintf("Result %d for <strong>%s</strong> &amp; more", i, q.Get("q")),
				URL:         fmt.Sprintf("https://site%d.example/page", i),
				Description: fmt.Sprintf("Snippet <strong>%d</strong> about &quot;%s&quot;", i, q.Get("q")),
			})
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{"type": "search", "web": map[string]any{"type": "search", "results": results}})
	}))
	t.Cleanup(srv.Close)
	return srv
}

func TestBrave(t *testing.T) {
	t.Parallel()
	srv := braveFake(t)
	b, err := search.New(search.Config{Kind: search.KindBrave, URL: srv.URL + "/res/v1/web/search", APIKey: braveKey}, srv.Client())
	if err != nil {
		t.Fatal(err)
	}
	got, err := b.Search(context.Background(), "go generics", 3)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 {
		t.Fatalf("got %d results, want 3", len(got))
	}
	want := search.Result{Title: "Result 1 for go generics & more", URL: "https://site1.example/page", Snippet: `Snippet 1 about "go generics"`}
	if got[0] != want {
		t.Fatalf("got[0] = %+v, want %+v", got[0], want)
	}
}

func TestBraveErrors(t *testing.T) {
	t.Parallel()
	srv := braveFake(t)
	bad := &search.Brave{Endpoint: srv.URL + "/res/v1/web/search", APIKey: "wrong-key-456", Client: srv.Client()}
	_, err := bad.Search(context.Background(), "x", 5)
	var se *search.StatusError
	if !errors.As(err, &se) || se.Status != http.StatusUnauthorized {
		t.Fatalf("Search with a bad key = %v, want a 401 StatusError", err)
	}
	if strings.Contains(err.Error(), "wrong-key-456") {
		t.Fatalf("error %q contains the API key", err)
	}
	good := &search.Brave{Endpoint: srv.URL + "/res/v1/web/search", APIKey: braveKey, Client: srv.Client()}
	if _, err := good.Search(context.Background(), "ratelimited", 5); !errors.As(err, &se) || se.Status != http.StatusTooManyRequests {
		t.Fatalf("Search = %v, want a 429 StatusError", err)
	}
	down := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "<html>not json</html>") }))
	defer down.Close()
	odd := &search.Brave{Endpoint: down.URL, APIKey: braveKey, Client: down.Client()}
	if _, err := odd.Search(context.Background(), "x", 5); err == nil || !strings.Contains(err.Error(), "not the expected JSON") {
		t.Fatalf("Search = %v, want a JSON error", err)
	}
}

// searxFake serves a SearXNG instance's /search?format=json with 10
// results a page for three pages; "empty" finds nothing, "broken" has every
// engine fail, and a server with json=false answers 403 like an instance
// whose search.formats lacks json.
func searxFake(t *testing.T, json_ bool) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		if r.URL.Path != "/search" {
			http.NotFound(w, r)
			return
		}
		if q.Get("format") != "json" || !json_ {
			http.Error(w, "403 Forbidden", http.StatusForbidden)
			return
		}
		page, _ := strconv.Atoi(q.Get("pageno"))
		type result struct {
			Title   string `json:"title"`
			URL     string `json:"url"`
			Content string `json:"content"`
			Engine  string `json:"engine"`
		}
		resp := map[string]any{"query": q.Get("q"), "number_of_results": 0, "results": []result{}, "unresponsive_engines": []any{}}
		switch q.Get("q") {
		case "empty":
		case "broken":
			resp["unresponsive_engines"] = [][]string{{"google", "timeout"}, {"duckduckgo", "CAPTCHA"}}
		default:
			var rs []result
			for i := 1; i <= 10 && page <= 3; i++ {
				n := (page-1)*10 + i
				rs = append(rs, result{Title: fmt.Sprintf("Hit %d", n), URL: fmt.Sprintf("https://hit%d.example/", n), Content: "about &lt;" + q.Get("q") + "&gt;", Engine: "bing"})
			}
			if page == 2 { // engines repeat hits across pages
				rs = append(rs, result{Title: "Hit 1 again", URL: "https://hit1.example/"})
			}
			resp["results"] = rs
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(resp)
	}))
	t.Cleanup(srv.Close)
	return srv
}

func TestSearXNG(t *testing.T) {
	t.Parallel()
	srv := searxFake(t, true)
	b, err := search.New(search.Config{Kind: search.KindSearXNG, URL: srv.URL + "/"}, srv.Client())
	if err != nil {
		t.Fatal(err)
	}
	got, err := b.Search(context.Background(), "rust", 15)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 15 {
		t.Fatalf("got %d results, want 15 (two pages)", len(got))
	}
	seen := map[string]bool{}
	for _, r := range got {
		if seen[r.URL] {
			t.Fatalf("duplicate result %s", r.URL)
		}
		seen[r.URL] = true
	}
	if got[0].Snippet != "about <rust>" || got[14].Title != "Hit 15" {
		t.Fatalf("got[0] = %+v, got[14] = %+v", got[0], got[14])
	}
	empty, err := b.Search(context.Background(), "empty", 8)
	if err != nil || len(empty) != 0 {
		t.Fatalf("Search(empty) = %v, %v; want no results and no error", empty, err)
	}
}

func TestSearXNGFailures(t *testing.T) {
	t.Parallel()
	srv := searxFake(t, true)
	b := &search.SearXNG{BaseURL: srv.URL, Client: srv.Client()}
	if _, err := b.Search(context.Background(), "broken", 8); err == nil || !strings.Contains(err.Error(), "google: timeout") {
		t.Fatalf("Search(broken) = %v, want an error naming the failed engines", err)
	}
	noJSON := searxFake(t, false)
	b = &search.SearXNG{BaseURL: noJSON.URL, Client: noJSON.Client()}
	if _, err := b.Search(context.Background(), "x", 8); err == nil || !strings.Contains(err.Error(), "403") || !strings.Contains(err.Error(), "search.formats") {
		t.Fatalf("Search on a json-less instance = %v, want a 403 error that explains", err)
	}
}

func TestNew(t *testing.T) {
	t.Parallel()
	tests := []struct {
		cfg     search.Config
		wantNil bool
		wantErr bool
	}{
		{cfg: search.Config{}, wantNil: true},
		{cfg: search.Config{Kind: "brave"}, wantErr: true},
		{cfg: search.Config{Kind: "searxng"}, wantErr: true},
		{cfg: search.Config{Kind: "bing", APIKey: "k"}, wantErr: true},
		{cfg: search.Config{Kind: "brave", APIKey: "k"}},
		{cfg: search.Config{Kind: "searxng", URL: "https://searx.example"}},
	}
	for _, tt := range tests {
		b, err := search.New(tt.cfg, http.DefaultClient)
		if (err != nil) != tt.wantErr || (b == nil) != (tt.wantNil || tt.wantErr) {
			t.Errorf("New(%+v) = %v, %v", tt.cfg, b, err)
		}
	}
}
