package web_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/agentsfleet/agentsfleet/shared/secret"
	"github.com/agentsfleet/agentsfleet/shared/web"
	"github.com/agentsfleet/agentsfleet/shared/web/wire"
)

const (
	pushToken = "azGDORePK8gMaC0QOYAMyEEuzJnyUi"
	pushUser  = "uQiRzpo4DXghDmr9QzzfQu27cmVRsG"
)

// pushoverFake is Pushover's POST /1/messages.json: it checks the token and
// user like the real API and answers with its JSON. A bad user key answers
// 400 with the key echoed in an error, as some APIs do.
type pushoverFake struct {
	mu   sync.Mutex
	last map[string]string
}

func (p *pushoverFake) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || r.URL.Path != "/1/messages.json" {
		http.NotFound(w, r)
		return
	}
	r.ParseForm()
	p.mu.Lock()
	p.last = map[string]string{}
	for k := range r.PostForm {
		p.last[k] = r.PostForm.Get(k)
	}
	p.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	switch {
	case r.PostForm.Get("token") != pushToken:
		w.WriteHeader(http.StatusBadRequest)
		json.NewEncoder(w).Encode(map[string]any{"token": "invalid", "errors": []string{"application token is invalid"}, "status": 0, "request": "r-bad"})
	case r.PostForm.Get("user") != pushUser:
		w.WriteHeader(http.StatusBadRequest)
		json.NewEncoder(w).Encode(map[string]any{"user": "invalid", "errors": []string{"user identifier " + r.PostForm.Get("user") + " is not a valid user"}, "status": 0, "request": "r-bad"})
	default:
		out := map[string]any{"status": 1, "request": "647d2300-702c-4b38-8b2f-d56326ae460b"}
		if r.PostForm.Get("priority") == "2" {
			out["receipt"] = "rcpt-1"
		}
		json.NewEncoder(w).Encode(out)
	}
}

func (p *pushoverFake) form() map[string]string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.last
}

func TestPushover(t *testing.T) {
	t.Parallel()
	fake := &pushoverFake{}
	srv := startServer(t, true, fake)
	values := &countingSource{src: secret.Map{"po/token": pushToken, "po/user": pushUser, "po/wrong-user": "uWRONGWRONGWRONGWRONG"}}
	svc := newService(t, srv, func(c *web.Config) {
		c.PushoverURL = srv.url("pushover.example.com", "/1/messages.json")
		c.Secrets = values
	})
	f := fleet{
		hosts:   []string{"pushover.example.com"},
		secrets: map[string]string{web.PushoverTokenSecret: "po/token", web.PushoverUserSecret: "po/user"},
	}

	res := call(t, svc, wire.ToolPushover, map[string]any{"message": "deploy done", "title": "CI", "priority": 1, "url": "https://ci.example.org/run/9"}, f)
	wantOK(t, res, "Notification sent (Pushover request 647d2300-702c-4b38-8b2f-d56326ae460b).")
	got := fake.form()
	if got["token"] != pushToken || got["user"] != pushUser || got["message"] != "deploy done" || got["title"] != "CI" || got["priority"] != "1" || got["url"] != "https://ci.example.org/run/9" {
		t.Fatalf("Pushover got form %v", got)
	}
	res = call(t, svc, wire.ToolPushover, map[string]any{"message": "pager", "priority": 2}, f)
	wantOK(t, res, "Emergency receipt rcpt-1")
	if got := fake.form(); got["retry"] != "60" || got["expire"] != "3600" {
		t.Fatalf("emergency priority sent %v, want retry and expire", got)
	}

	// A rejected key comes back as an error, the echoed key screened.
	wrong := fleet{hosts: f.hosts, secrets: map[string]string{web.PushoverTokenSecret: "po/token", web.PushoverUserSecret: "po/wrong-user"}}
	res = call(t, svc, wire.ToolPushover, map[string]any{"message": "x"}, wrong)
	wantError(t, res, "not sent", "HTTP 400", "user identifier «secret:PUSHOVER_USER» is not a valid user")
	if strings.Contains(res.Output, "uWRONG") {
		t.Fatalf("output leaks the user key: %q", res.Output)
	}
}

func TestPushoverRefusals(t *testing.T) {
	t.Parallel()
	fake := &pushoverFake{}
	srv := startServer(t, true, fake)
	values := &countingSource{src: secret.Map{"po/token": pushToken, "po/user": pushUser}}
	svc := newService(t, srv, func(c *web.Config) {
		c.PushoverURL = srv.url("pushover.example.com", "/1/messages.json")
		c.Secrets = values
	})
	both := map[string]string{web.PushoverTokenSecret: "po/token", web.PushoverUserSecret: "po/user"}
	tests := []struct {
		name string
		args map[string]any
		f    fleet
		want string
	}{
		{"host not listed", map[string]any{"message": "x"}, fleet{hosts: []string{"api.example.com"}, secrets: both}, "host pushover.example.com is not in the fleet's network host list"},
		{"no secrets", map[string]any{"message": "x"}, fleet{hosts: []string{"pushover.example.com"}}, "the fleet has no secret PUSHOVER_TOKEN"},
		{"no user", map[string]any{"message": "x"}, fleet{hosts: []string{"pushover.example.com"}, secrets: map[string]string{web.PushoverTokenSecret: "po/token"}}, "no secret PUSHOVER_USER"},
		{"no message", map[string]any{"title": "x"}, fleet{hosts: []string{"pushover.example.com"}, secrets: both}, `"message" is required`},
		{"long message", map[string]any{"message": strings.Repeat("m", 1025)}, fleet{hosts: []string{"pushover.example.com"}, secrets: both}, "at most 1024"},
		{"priority", map[string]any{"message": "x", "priority": 3}, fleet{hosts: []string{"pushover.example.com"}, secrets: both}, "between -2 and 2"},
		{"reference", map[string]any{"message": "token is «secret:PUSHOVER_TOKEN»"}, fleet{hosts: []string{"pushover.example.com"}, secrets: both}, "not filled in notifications"},
	}
	for _, tt := range tests {
		wantError(t, call(t, svc, wire.ToolPushover, tt.args, tt.f), tt.want)
	}
	if n := srv.hitsFor("pushover.example.com"); n != 0 {
		t.Errorf("refused notifications reached Pushover %d times", n)
	}
	if n := values.count(); n != 0 {
		t.Errorf("refused notifications read %d secrets, want 0", n)
	}
}

func TestPushoverArgumentWording(t *testing.T) {
	t.Parallel()
	svc, err := web.NewService(web.Config{Logger: quietLog()})
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct{ args, want string }{
		{`{}`, `pushover: argument "message" is required`},
		{`{"message":" "}`, `pushover: argument "message" must not be empty`},
		{`{"message":"` + strings.Repeat("m", 1025) + `"}`, `pushover: argument "message" must be at most 1024 characters, not 1025`},
		{`{"message":"x","title":"` + strings.Repeat("t", 251) + `"}`, `pushover: argument "title" must be at most 250 characters, not 251`},
		{`{"message":"x","url":"` + strings.Repeat("u", 513) + `"}`, `pushover: argument "url" must be at most 512 characters, not 513`},
		{`{"message":"x","priority":3}`, `pushover: argument "priority" must be between -2 and 2, not 3`},
		{`{"message":"x","priority":"high"}`, `pushover: argument "priority" must be an integer, not a string`},
		{`{"message":"x","sound":"siren"}`, `pushover: unknown argument "sound"; the arguments are message, title, priority and url`},
		// A check made after decoding keeps its own words.
		{`{"message":"token «secret:PUSHOVER_TOKEN»"}`, `pushover: refused: secret references are not filled in notifications, which leave agentsfleet`},
	} {
		res, err := svc.Call(t.Context(), wire.Request{Tool: wire.ToolPushover, Arguments: json.RawMessage(tt.args)})
		if err != nil || !res.IsError || res.Output != tt.want {
			t.Errorf("pushover(%s) = %q, %v; want the error result %q", tt.args, res.Output, err, tt.want)
		}
	}
}
