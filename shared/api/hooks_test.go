package api_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/agentsfleet/agentsfleet/shared/api"
	"github.com/agentsfleet/agentsfleet/shared/api/webhook"
	"github.com/agentsfleet/agentsfleet/shared/callback"
	"github.com/agentsfleet/agentsfleet/shared/runner"
	"github.com/agentsfleet/agentsfleet/shared/store"
	"github.com/agentsfleet/agentsfleet/shared/web/egress"
)

// TestCallbackIsNotAWebhook receives a run's completion callback, as
// anyone at its callback_url does, and posts it to the fleet's webhook
// within the 5 minutes: as it came, and with its signature moved into the
// webhook's header. Neither may start a run.
func TestCallbackIsNotAWebhook(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var got http.Header
	var body []byte
	rc := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		got, body = r.Header.Clone(), b
		mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	}))
	defer rc.Close()
	sender := callback.New(callback.Config{AllowAddr: netip.MustParseAddrPort(rc.Listener.Addr().String()), Resolver: egress.Hosts{}})
	e := newEnv(t, func(r *runner.Config, a *api.Config) { r.Callbacks, a.Callbacks = sender, sender })
	e.apply(opsTOML)
	if code, b := e.do("POST", "/v1/fleets/ops/webhook-secret", e.admin, nil); code != 200 {
		t.Fatal(code, b)
	}
	code, b := e.do("POST", "/v1/fleets/ops/runs", e.admin, map[string]any{"input": "x", "callback_url": rc.URL + "/done"})
	if code != 202 {
		t.Fatalf("start = %d %v", code, b)
	}
	e.waitRun(b["run_id"].(string))
	e.local.Wait()
	mu.Lock()
	h, cb := got, body
	mu.Unlock()
	if h == nil {
		t.Fatal("no callback arrived")
	}

	// The callback's own headers, and each of its signature values in the
	// webhook's signature header.
	replays := map[string][]string{"as received": nil}
	var sigs []string
	for k, v := range h {
		if strings.HasPrefix(k, "X-Agentsfleet-") {
			replays["as received"] = append(replays["as received"], k, v[0])
			if strings.HasSuffix(k, "Signature") {
				sigs = append(sigs, v[0])
			}
		}
	}
	for i, s := range sigs {
		replays["signature moved "+strconv.Itoa(i)] = []string{webhook.TimestampHeader, h.Get(webhook.TimestampHeader), webhook.SignatureHeader, s}
	}
	for name, hs := range replays {
		code, b := e.do("POST", "/v1/hooks/ops", "", cb, hs...)
		if code != 401 || errCode(b) != "UZ-HOOK-401" {
			t.Errorf("the callback replayed %s as a webhook = %d %v, want 401 UZ-HOOK-401", name, code, b)
		}
	}
	page, err := e.store.ListRuns(ctx, "ops", "", 100)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range page.Runs {
		if r.Source == store.SourceWebhook {
			t.Errorf("a replayed callback started run %s", r.ID)
		}
	}
	e.local.Wait()
}
