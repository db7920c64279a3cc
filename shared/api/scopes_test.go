package api_test

import (
	"strings"
	"testing"

	"github.com/agentsfleet/agentsfleet/shared/scope"
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
