//go:build linux

package runner_test

import (
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/agentsfleet/agentsfleet/shared/fleet"
	"github.com/agentsfleet/agentsfleet/shared/invoke"
	afrun "github.com/agentsfleet/agentsfleet/shared/run"
	"github.com/agentsfleet/agentsfleet/shared/secret"
	"github.com/agentsfleet/agentsfleet/shared/store"
	"github.com/agentsfleet/agentsfleet/shared/web"
	"github.com/agentsfleet/agentsfleet/shared/web/grants"
)

// secretHost is a listed host that notes the Authorization header of each
// request it gets.
type secretHost struct {
	*httptest.Server
	mu   sync.Mutex
	auth []string
}

func newSecretHost(t *testing.T) *secretHost {
	h := &secretHost{}
	h.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.mu.Lock()
		h.auth = append(h.auth, r.Header.Get("Authorization"))
		h.mu.Unlock()
		_, _ = w.Write([]byte("ok " + r.URL.Path))
	}))
	t.Cleanup(h.Close)
	return h
}

func (h *secretHost) got() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]string(nil), h.auth...)
}

// secretApprovalEnv is a runner whose webtools function is the real one
// (grants from the table), over a fleet whose TOKEN says approve = true.
func secretApprovalEnv(t *testing.T, script string) (*env, *secretHost, *fleet.Definition) {
	t.Helper()
	host := newSecretHost(t)
	e := newEnv(t, strings.ReplaceAll(script, "TARGET", host.URL))
	u, _ := url.Parse(host.URL)
	svc, err := web.NewService(web.Config{AllowAddr: netip.MustParseAddrPort(u.Host), Secrets: secret.Map{ghARN: egressToken},
		Grants: grants.New(e.store), Egress: e.store})
	if err != nil {
		t.Fatal(err)
	}
	e.local.Register(invoke.Webtools, svc.Invoke)
	d := e.fleet(definition("jit", "http_request") + "[x-agentsfleet.network]\nhosts = [\"127.0.0.1\"]\n" +
		"[x-agentsfleet.secrets]\nTOKEN = { id = \"" + ghARN + "\", approve = true }\n")
	return e, host, d
}

// waitsForSecret runs id until it waits, and returns its one approval,
// having checked that it names the secret, host and method and that
// nothing reached the host.
func waitsForSecret(t *testing.T, e *env, host *secretHost, id string) store.Approval {
	t.Helper()
	if err := e.runner.Run(ctx, id); err != nil {
		t.Fatal(err)
	}
	all, err := e.store.ListApprovals(ctx, id)
	if r, _ := e.store.GetRun(ctx, id); err != nil || r.Status != store.StatusWaiting || len(all) != 1 {
		t.Fatalf("run %s with approvals %+v, %v; want it waiting on one", r.Status, all, err)
	}
	a := all[0]
	if a.Secret != "TOKEN" || a.Host != "127.0.0.1" || a.Method != "GET" || a.Tool != "http_request" {
		t.Fatalf("approval %+v; want TOKEN for GET 127.0.0.1", a)
	}
	if got := host.got(); len(got) != 0 {
		t.Fatalf("the host got %d requests before anyone approved the secret", len(got))
	}
	return a
}

// TestSecretApprovedJustInTime: the first use of a secret that says
// approve = true waits for a person; approved, it is filled for that host
// and, later in the run, reused without asking.
func TestSecretApprovedJustInTime(t *testing.T) {
	t.Parallel()
	e, host, d := secretApprovalEnv(t, `
[[turn]]
[[turn.tool_call]]
name = "http_request"
arguments = { method = "GET", url = "TARGET/first", headers = { Authorization = "Bearer «secret:TOKEN»" } }
[[turn]]
[[turn.tool_call]]
name = "http_request"
arguments = { method = "GET", url = "TARGET/second", headers = { Authorization = "Bearer «secret:TOKEN»" } }
[[turn]]
text = "{{last_output}}"
`)
	id := e.start(d, "call twice")
	a := waitsForSecret(t, e, host, id)
	if _, resume, err := e.store.Decide(ctx, id, a.ID, afrun.DecisionApprove, "key:k_ops", ""); err != nil || !resume {
		t.Fatalf("Decide = %v, %v", resume, err)
	}
	if err := e.runner.Run(ctx, id); err != nil {
		t.Fatal(err)
	}
	run, end := e.ended(id)
	if run.Status != store.StatusSucceeded || !strings.Contains(end.Answer, "ok /second") {
		t.Fatalf("run %s, answer %q; want both calls made", run.Status, end.Answer)
	}
	if got := host.got(); len(got) != 2 || got[0] != "Bearer "+egressToken || got[1] != "Bearer "+egressToken {
		t.Fatalf("the host got %q, want the secret filled in both calls", got)
	}
	if all, _ := e.store.ListApprovals(ctx, id); len(all) != 1 {
		t.Fatalf("%d approvals, want the one: the second use was not asked about again", len(all))
	}
}

// TestSecretDeniedJustInTime: denied, the call is refused, the model told
// why with the note, and the host gets nothing; the grant of one run is
// not another's.
func TestSecretDeniedJustInTime(t *testing.T) {
	t.Parallel()
	e, host, d := secretApprovalEnv(t, `
[[turn]]
[[turn.tool_call]]
name = "http_request"
arguments = { method = "GET", url = "TARGET/first", headers = { Authorization = "Bearer «secret:TOKEN»" } }
[[turn]]
text = "{{last_error}}"
`)
	id := e.start(d, "call")
	a := waitsForSecret(t, e, host, id)
	if _, _, err := e.store.Decide(ctx, id, a.ID, afrun.DecisionDeny, "key:k_ops", "not that token"); err != nil {
		t.Fatal(err)
	}
	if err := e.runner.Run(ctx, id); err != nil {
		t.Fatal(err)
	}
	run, end := e.ended(id)
	if run.Status != store.StatusSucceeded || !strings.Contains(end.Answer, "denied the use of the secret TOKEN for GET 127.0.0.1") ||
		!strings.Contains(end.Answer, "not that token") {
		t.Fatalf("run %s, answer %q; want the model told of the denial and its note", run.Status, end.Answer)
	}
	if got := host.got(); len(got) != 0 {
		t.Fatalf("the host got %q after the denial", got)
	}
	// Another run of the fleet asks again, whatever the first was told.
	waitsForSecret(t, e, host, e.start(d, "call again"))
}
