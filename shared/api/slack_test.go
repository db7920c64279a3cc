package api_test

import (
	"strings"
	"testing"

	"github.com/agentsfleet/agentsfleet/shared/scope"
)

func TestSlackRoutes(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.apply(opsTOML)
	code, body := e.do("PUT", "/v1/slack/routes/C0123ABCD", e.admin, map[string]any{"fleet": "ops"})
	if code != 200 || body["channel"] != "C0123ABCD" || body["fleet"] != "ops" || body["updated_at"] == nil {
		t.Fatalf("PUT route = %d %v", code, body)
	}
	if r, ok, err := e.store.SlackRoute(ctx, "C0123ABCD"); err != nil || !ok || r.Fleet != "ops" {
		t.Fatalf("stored route = %+v, %v, %v", r, ok, err)
	}
	for _, tt := range []struct {
		path string
		body any
		code int
		want string
	}{
		{"/v1/slack/routes/C0123ABCD", map[string]any{"fleet": "ghost"}, 404, "UZ-AGT-404"},
		{"/v1/slack/routes/C0123ABCD", map[string]any{}, 400, "UZ-REQ-400"},
		{"/v1/slack/routes/C0123ABCD", map[string]any{"fleet": "ops", "channel": "x"}, 400, "UZ-REQ-400"},
		{"/v1/slack/routes/general", map[string]any{"fleet": "ops"}, 400, "UZ-REQ-400"},
	} {
		code, body := e.do("PUT", tt.path, e.admin, tt.body)
		if code != tt.code || errCode(body) != tt.want {
			t.Errorf("PUT %s %v = %d %v, want %d %s", tt.path, tt.body, code, body, tt.code, tt.want)
		}
	}
	if _, body := e.do("PUT", "/v1/slack/routes/general", e.admin, map[string]any{"fleet": "ops"}); !strings.Contains(errMessage(body), "channel's id") {
		t.Errorf("a channel name is refused with %q; want it to ask for the channel's id", errMessage(body))
	}
	// The route needs slack:admin, and a key at all.
	_, k := e.do("POST", "/v1/keys", e.admin, map[string]any{"name": "runs", "scopes": []string{scope.RunsWrite}})
	if code, body := e.do("PUT", "/v1/slack/routes/C0123ABCD", k["key"].(string), map[string]any{"fleet": "ops"}); code != 403 {
		t.Errorf("without slack:admin = %d %v, want 403", code, body)
	}
	if code, _ := e.do("PUT", "/v1/slack/routes/C0123ABCD", "", map[string]any{"fleet": "ops"}); code != 401 {
		t.Errorf("without a key = %d, want 401", code)
	}
}
