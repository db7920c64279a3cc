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
