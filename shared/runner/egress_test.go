//go:build linux

package runner_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/agentsfleet/agentsfleet/shared/callback"
	"github.com/agentsfleet/agentsfleet/shared/invoke"
	afrun "github.com/agentsfleet/agentsfleet/shared/run"
	"github.com/agentsfleet/agentsfleet/shared/runner"
	"github.com/agentsfleet/agentsfleet/shared/secret"
	"github.com/agentsfleet/agentsfleet/shared/store"
	"github.com/agentsfleet/agentsfleet/shared/web"
	"github.com/agentsfleet/agentsfleet/shared/web/egress"
	"github.com/agentsfleet/agentsfleet/shared/web/grants"
)

const egressToken = "tok_E5gR3ssV4lu3x"

// TestEgressLogOfARun: a run that fetches a page, is redirected, is
// refused by the host list and sends a callback has each of those in its
// egress log, in order, through the runner and the real webtools handler
// (grants and log in the table); the secret filled is named there and its
// value is nowhere in it; the summary counts it all.
func TestEgressLogOfARun(t *testing.T) {
	t.Parallel()
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/moved" {
			http.Redirect(w, r, "/page", http.StatusFound)
			return
		}
		w.Header().Set("Content-Type", "text/html")
		_, _ = w.Write([]byte("<html><body><p>the page</p></body></html>"))
	}))
	defer target.Close()
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) }))
	defer receiver.Close()
	e := newEnv(t, `
[[turn]]
[[turn.tool_call]]
name = "webfetch"
arguments = { url = "`+target.URL+`/page" }
[[turn]]
[[turn.tool_call]]
name = "http_request"
arguments = { method = "GET", url = "`+target.URL+`/moved", headers = { Authorization = "Bearer «secret:TOKEN»" } }
[[turn]]
[[turn.tool_call]]
name = "http_request"
arguments = { method = "POST", url = "https://unlisted.example/collect", body = "x" }
[[turn]]
text = "done"
`, func(c *runner.Config) {
		c.Callbacks = callback.New(callback.Config{AllowAddr: netip.MustParseAddrPort(receiver.Listener.Addr().String()), Resolver: egress.Hosts{}})
	})
	u, _ := url.Parse(target.URL)
	svc, err := web.NewService(web.Config{AllowAddr: netip.MustParseAddrPort(u.Host), Secrets: secret.Map{ghARN: egressToken},
		Grants: grants.New(e.store), Egress: e.store})
	if err != nil {
		t.Fatal(err)
	}
	e.local.Register(invoke.Webtools, svc.Invoke)
	d := e.fleet(definition("egress", "webfetch", "http_request") + "[x-agentsfleet.network]\nhosts = [\"127.0.0.1\"]\n" +
		"[x-agentsfleet.secrets]\nTOKEN = \"" + ghARN + "\"\n")
	if _, err := e.store.RotateWebhookSecret(ctx, d.Name); err != nil {
		t.Fatal(err)
	}
	r, _, err := e.store.CreateRun(ctx, store.NewRun{Fleet: d.Name, Source: store.SourceAPI, Input: []byte("fetch"), CallbackURL: receiver.URL + "/done?token=abc"})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.runner.Run(ctx, r.ID); err != nil {
		t.Fatal(err)
	}
	if run, _ := e.ended(r.ID); run.Status != store.StatusSucceeded {
		t.Fatalf("run %s, want succeeded", run.Status)
	}
	page, err := e.store.ListEgress(ctx, r.ID, "", 0)
	if err != nil {
		t.Fatal(err)
	}
	type row struct {
		Tool, Method, Host string
		Status             int
		Rule, Secrets      string
	}
	var got []row
	for _, en := range page.Egress {
		got = append(got, row{en.Tool, en.Method, en.Host, en.Status, en.Rule, strings.Join(en.Secrets, ",")})
	}
	want := []row{
		{"webfetch", "GET", "127.0.0.1", 200, "", ""},
		{"http_request", "GET", "127.0.0.1", 302, "", "TOKEN"},
		{"http_request", "GET", "127.0.0.1", 200, "", "TOKEN"},
		{"http_request", "POST", "unlisted.example", 0, afrun.RuleHostList, ""},
		{afrun.ToolCallback, "POST", "127.0.0.1", 204, "", ""},
	}
	if !slices.Equal(got, want) {
		t.Fatalf("egress log\n%+v\nwant\n%+v", got, want)
	}
	if en := page.Egress[0]; en.BytesIn == 0 || strconv.Itoa(en.Port) != u.Port() {
		t.Errorf("the page's entry %+v counts no bytes in or no port", en)
	}
	b, _ := json.Marshal(page)
	if strings.Contains(string(b), egressToken) || strings.Contains(string(b), "token=abc") {
		t.Errorf("the egress log holds the secret value or the callback's query: %s", b)
	}
	sum, err := e.store.EgressSummary(ctx, r.ID)
	if err != nil || sum.Requests != 5 || sum.Refused != 1 || sum.BytesIn == 0 || sum.BytesOut == 0 {
		t.Errorf("summary %+v, %v; want 5 requests, 1 refused, bytes both ways", sum, err)
	}
}
