package web_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/agentsfleet/agentsfleet/shared/web"
	"github.com/agentsfleet/agentsfleet/shared/web/search"
)

// keySource is a secret.Source that counts its reads and fails while
// fail is set.
type keySource struct {
	reads atomic.Int32
	fail  atomic.Bool
}

func (c *keySource) SecretValue(_ context.Context, id string) (string, error) {
	c.reads.Add(1)
	if c.fail.Load() || id != "search/brave" {
		return "", errors.New("throttled reading " + id)
	}
	return "brave-key-from-secret", nil
}

// TestSearchKeyReadOnFirstSearch: the search key's secret is read on the
// first search, not when the configuration is made (a cold start makes no
// AWS call), once it has been read, and again after a failed read.
func TestSearchKeyReadOnFirstSearch(t *testing.T) {
	t.Parallel()
	var tokens []string
	brave := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tokens = append(tokens, r.Header.Get("X-Subscription-Token"))
		io.WriteString(w, `{"web": {"results": [{"title": "Go", "url": "https://go.dev/", "description": "The Go language"}]}}`)
	}))
	t.Cleanup(brave.Close)
	env := map[string]string{web.EnvSearchBackend: search.KindBrave, web.EnvSearchURL: brave.URL, web.EnvSearchKeySecret: "search/brave"}
	src := &keySource{}
	cfg, err := web.ConfigFromEnv(func(k string) string { return env[k] }, src, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	backend, err := search.New(cfg.Search, brave.Client())
	if err != nil {
		t.Fatal(err)
	}
	if n := src.reads.Load(); n != 0 {
		t.Fatalf("the configuration read the key %d times; it is for the first search", n)
	}
	src.fail.Store(true)
	if _, err := backend.Search(context.Background(), "go", 5); err == nil || !strings.Contains(err.Error(), web.EnvSearchKeySecret) {
		t.Fatalf("a search whose key cannot be read = %v, want an error naming %s", err, web.EnvSearchKeySecret)
	}
	src.fail.Store(false)
	for range 2 {
		if res, err := backend.Search(context.Background(), "go", 5); err != nil || len(res) != 1 {
			t.Fatalf("Search = %v, %v", res, err)
		}
	}
	if n := src.reads.Load(); n != 2 || len(tokens) != 2 || tokens[0] != "brave-key-from-secret" || tokens[1] != tokens[0] {
		t.Errorf("%d reads and tokens %q; want the failed read, one good read, and the secret's key sent twice", n, tokens)
	}
}
