package api_test

import (
	"bytes"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentsfleet/agentsfleet/shared/api"
	"github.com/agentsfleet/agentsfleet/shared/callback"
	"github.com/agentsfleet/agentsfleet/shared/runner"
	"github.com/agentsfleet/agentsfleet/shared/scope"
	"github.com/agentsfleet/agentsfleet/shared/web/egress"
)

// TestWebhookSecretNeedsRunsWrite: the webhook secret signs deliveries
// that start runs, so fleets:write alone does not get it (before, it did:
// a key that may not start runs could start them through the webhook).
func TestWebhookSecretNeedsRunsWrite(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.apply(opsTOML)
	for _, tt := range []struct {
		name    string
		scopes  []string
		lacking string
	}{
		{"fleets:write alone", []string{scope.FleetsWrite}, scope.RunsWrite},
		{"runs:write alone", []string{scope.RunsWrite}, scope.FleetsWrite},
		{"every scope but runs:write", without(scope.Names(), scope.RunsWrite), scope.RunsWrite},
	} {
		code, body := e.do("POST", "/v1/fleets/ops/webhook-secret", e.key(tt.name, tt.scopes), nil)
		if code != 403 || errCode(body) != "UZ-KEY-403" || !strings.Contains(errMessage(body), `"`+tt.lacking+`"`) || body["secret"] != nil {
			t.Errorf("%s: = %d %v; want 403 naming %s", tt.name, code, body, tt.lacking)
		}
	}
	// Nothing was created: the webhook still has no secret.
	if _, err := e.store.WebhookSecret(ctx, "ops"); err == nil {
		t.Fatal("a refused request created a webhook secret")
	}
	both := e.key("hooks", []string{scope.FleetsWrite, scope.RunsWrite})
	code, body := e.do("POST", "/v1/fleets/ops/webhook-secret", both, nil)
	if secret, _ := body["secret"].(string); code != 200 || secret == "" {
		t.Fatalf("fleets:write and runs:write = %d %v; want 200 with the secret", code, body)
	}
}

func without(list []string, drop string) []string {
	var out []string
	for _, s := range list {
		if s != drop {
			out = append(out, s)
		}
	}
	return out
}

// TestContinuingNeedsRunsRead: a run that continues another's conversation
// reads it, so conversation_id needs runs:read beside runs:write (before,
// runs:write alone continued any run's conversation), and the run must be
// of the same fleet.
func TestContinuingNeedsRunsRead(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.apply(opsTOML)
	if code, b := e.do("PUT", "/v1/fleets/dev", e.admin, strings.Replace(opsTOML, `"ops"`, `"dev"`, 1)); code != 200 {
		t.Fatal(code, b)
	}
	start := func(fleet, key, conversation string) (int, map[string]any) {
		req := map[string]any{"input": "go on"}
		if conversation != "" {
			req["conversation_id"] = conversation
		}
		return e.do("POST", "/v1/fleets/"+fleet+"/runs", key, req)
	}
	_, b := start("ops", e.admin, "")
	first := b["run_id"].(string)
	e.waitRun(first)
	_, b = start("dev", e.admin, "")
	other := b["run_id"].(string)
	e.waitRun(other)

	writer := e.key("writer", []string{scope.RunsWrite})
	code, b := start("ops", writer, first)
	if code != 403 || errCode(b) != "UZ-KEY-403" || !strings.Contains(errMessage(b), `"runs:read"`) {
		t.Fatalf("runs:write alone continuing = %d %v; want 403 naming runs:read", code, b)
	}
	if code, b := start("ops", writer, ""); code != 202 {
		t.Fatalf("runs:write alone, a new conversation = %d %v; want 202", code, b)
	}
	both := e.key("reader-writer", []string{scope.RunsWrite, scope.RunsRead})
	code, b = start("ops", both, first)
	if code != 202 {
		t.Fatalf("runs:write and runs:read continuing = %d %v; want 202", code, b)
	}
	if run, err := e.store.GetRun(ctx, b["run_id"].(string)); err != nil || run.Continues != first {
		t.Fatalf("the run continues %q (%v), want %s", run.Continues, err, first)
	}
	// Another fleet's run is not a conversation this fleet can go on with.
	code, b = start("ops", both, other)
	if code != 400 || !strings.Contains(errMessage(b), "no run "+other+" of fleet ops") {
		t.Fatalf("continuing another fleet's run = %d %v; want 400", code, b)
	}
	e.local.Wait()
}

// syncBuffer is a log's output, read once the writers are done.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestCallbackLogsNoQuery: the runner's log names a callback by its scheme,
// host and path, never its query, which may hold the receiver's token
// (before, it logged the whole URL).
func TestCallbackLogsNoQuery(t *testing.T) {
	t.Parallel()
	rc := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusBadRequest) // not retried; logged as not delivered
	}))
	defer rc.Close()
	var logs syncBuffer
	log := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	sender := callback.New(callback.Config{AllowAddr: netip.MustParseAddrPort(rc.Listener.Addr().String()),
		Resolver: egress.Hosts{}, BaseDelay: 10 * time.Millisecond, Logger: log})
	e := newEnv(t, func(r *runner.Config, a *api.Config) { r.Callbacks, a.Callbacks, r.Log = sender, sender, log })
	e.apply(opsTOML)
	e.do("POST", "/v1/fleets/ops/webhook-secret", e.admin, nil)
	const token = "tok3n-of-the-receiver"
	code, b := e.do("POST", "/v1/fleets/ops/runs", e.admin, map[string]any{"input": "x",
		"callback_url": rc.URL + "/hooks/done?token=" + token + "#frag-" + token})
	if code != 202 {
		t.Fatalf("start = %d %v", code, b)
	}
	e.waitRun(b["run_id"].(string))
	e.local.Wait()
	out := logs.String()
	if !strings.Contains(out, "the callback was not delivered") || !strings.Contains(out, rc.URL+"/hooks/done") {
		t.Fatalf("the log does not name the callback by its host and path:\n%s", out)
	}
	if strings.Contains(out, token) {
		t.Fatalf("the log holds the callback URL's query:\n%s", out)
	}
}
