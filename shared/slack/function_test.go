package slack_test

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/agentsfleet/agentsfleet/shared/invoke"
	"github.com/agentsfleet/agentsfleet/shared/slack"
	"github.com/agentsfleet/agentsfleet/shared/store"
)

// refusing is a secret store that cannot be read.
type refusing struct{}

func (refusing) SecretValue(_ context.Context, id string) (string, error) {
	return "", errors.New("no access to " + id)
}

func TestFromEnv(t *testing.T) {
	t.Parallel()
	st, inv := store.New(nil, "t"), invoke.NewLocal(nil)
	t.Cleanup(inv.Close)
	from := func(env map[string]string) (*slack.Function, bool, error) {
		return slack.FromEnv(func(k string) string { return env[k] }, refusing{}, st, inv, slog.New(slog.DiscardHandler))
	}
	if f, ok, err := from(map[string]string{slack.EnvDefaultFleet: "f"}); f != nil || ok || err != nil {
		t.Errorf("no secrets' settings: %v, %v, %v; want no Slack and no error", f, ok, err)
	}
	for _, tc := range []struct {
		env  map[string]string
		want string
	}{
		{map[string]string{slack.EnvSigningSecret: "s"}, "set AGENTSFLEET_SLACK_BOT_TOKEN_ARN"},
		{map[string]string{slack.EnvBotTokenARN: "arn:t"}, "set AGENTSFLEET_SLACK_SIGNING_SECRET_ARN"},
	} {
		if _, _, err := from(tc.env); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("FromEnv(%v) = %v, want an error with %q", tc.env, err, tc.want)
		}
	}
	// The secrets are read on the first request: one that cannot be read
	// is a 500 over HTTP that shows neither it nor its value.
	f, ok, err := from(map[string]string{slack.EnvSigningSecretARN: "arn:signing", slack.EnvBotToken: "xoxb-1"})
	if err != nil || !ok {
		t.Fatalf("FromEnv with both secrets = %v, %v", ok, err)
	}
	w := httptest.NewRecorder()
	f.ServeHTTP(w, httptest.NewRequest(http.MethodPost, slack.EventsPath, strings.NewReader("{}")))
	if w.Code != http.StatusInternalServerError || strings.Contains(w.Body.String(), "arn:signing") {
		t.Errorf("a request with an unreadable signing secret = %d %s, want 500 without the secret", w.Code, w.Body)
	}
	if _, err := f.Invoke(context.Background(), []byte(`{"requestContext": {}}`)); err == nil || !strings.Contains(err.Error(), "AGENTSFLEET_SLACK_SIGNING_SECRET_ARN") {
		t.Errorf("an API Gateway request with an unreadable signing secret = %v, want an error naming the setting", err)
	}
	// The secrets as they are: the Handler answers over HTTP (here, that
	// the request is not signed).
	f, _, err = from(map[string]string{slack.EnvSigningSecret: "s", slack.EnvBotToken: "xoxb-1"})
	if err != nil {
		t.Fatal(err)
	}
	w = httptest.NewRecorder()
	f.ServeHTTP(w, httptest.NewRequest(http.MethodPost, slack.EventsPath, strings.NewReader("{}")))
	if w.Code != http.StatusUnauthorized {
		t.Errorf("an unsigned request = %d %s, want 401", w.Code, w.Body)
	}
}
