package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/agentsfleet/agentsfleet/shared/api"
	"github.com/agentsfleet/agentsfleet/shared/api/apitest"
	"github.com/agentsfleet/agentsfleet/shared/api/webhook"
	"github.com/agentsfleet/agentsfleet/shared/awstest"
	"github.com/agentsfleet/agentsfleet/shared/callback"
	"github.com/agentsfleet/agentsfleet/shared/invoke"
	"github.com/agentsfleet/agentsfleet/shared/runner"
	"github.com/agentsfleet/agentsfleet/shared/scope"
	"github.com/agentsfleet/agentsfleet/shared/store"
	"github.com/agentsfleet/agentsfleet/shared/web/egress"
)

func TestMain(m *testing.M) { awstest.Main(m) }

var ctx = context.Background()

// env is the API (apitest) over a fresh table, with a real runner on a
// scripted model (each run answers "done: INPUT") and no sandboxes.
type env struct {
	t     testing.TB
	store *store.Store
	local *invoke.Local
	srv   *apitest.Server
	admin string // a key with every scope
}

func newEnv(t testing.TB, opts ...func(*runner.Config, *api.Config)) *env {
	t.Helper()
	var rcfg *runner.Config
	s := apitest.New(t, apitest.Options{
		Runner: func(c *runner.Config) {
			rcfg = c
		},
		API: func(c *api.Config) {
			for _, o := range opts {
				o(rcfg, c)
			}
		},
	})
	return &env{t: t, store: s.Store, local: s.Local, srv: s, admin: s.Admin}
}

// do sends a request with key ("" for none) and decodes the JSON answer.
func (e *env) do(method, path, key string, body any, header ...string) (int, map[string]any) {
	e.t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	case []byte:
		rd = bytes.NewReader(b)
	default:
		j, _ := json.Marshal(b)
		rd = bytes.NewReader(j)
	}
	req, _ := http.NewRequest(method, e.srv.URL+path, rd)
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var out map[string]any
	if len(raw) > 0 && json.Unmarshal(raw, &out) != nil {
		e.t.Fatalf("%s %s answered %d with a body that is not a JSON object: %s", method, path, resp.StatusCode, raw)
	}
	return resp.StatusCode, out
}

// errCode is the code of an error answer.
func errCode(body map[string]any) string {
	e, _ := body["error"].(map[string]any)
	c, _ := e["code"].(string)
	return c
}

func errMessage(body map[string]any) string {
	e, _ := body["error"].(map[string]any)
	m, _ := e["message"].(string)
	return m
}

const opsTOML = `name = "ops"
instructions = "Keep things running."
[x-agentsfleet]
tools = ["read", "bash"]
`

func (e *env) apply(def string) {
	e.t.Helper()
	if code, body := e.do("PUT", "/v1/fleets/ops", e.admin, def, "Content-Type", "application/toml"); code != 200 {
		e.t.Fatalf("apply = %d %v", code, body)
	}
}

// waitRun waits for a run to end and returns GET /v1/runs/{id}.
func (e *env) waitRun(id string) map[string]any {
	e.t.Helper()
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		code, body := e.do("GET", "/v1/runs/"+id, e.admin, nil)
		if code != 200 {
			e.t.Fatalf("GET run = %d %v", code, body)
		}
		if s := body["status"]; s == "succeeded" || s == "failed" || s == "cancelled" {
			return body
		}
	}
	e.t.Fatalf("run %s did not end", id)
	return nil
}

func TestFleetsAndRuns(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.apply(opsTOML)
	// The same Definition again changes nothing; another is a new revision.
	if code, body := e.do("PUT", "/v1/fleets/ops", e.admin, opsTOML); code != 200 || body["revision"] != 1.0 || body["unchanged"] != true {
		t.Fatalf("same apply = %d %v, want revision 1 unchanged", code, body)
	}
	code, body := e.do("PUT", "/v1/fleets/ops", e.admin, strings.Replace(opsTOML, "Keep", "Keep on", 1))
	if code != 200 || body["revision"] != 2.0 {
		t.Fatalf("second apply = %d %v, want revision 2", code, body)
	}
	code, body = e.do("GET", "/v1/fleets/ops", e.admin, nil)
	if code != 200 || body["revision"] != 2.0 || body["definition"].(map[string]any)["name"] != "ops" {
		t.Fatalf("GET fleet = %d %v", code, body)
	}
	code, body = e.do("GET", "/v1/fleets", e.admin, nil)
	if code != 200 || len(body["fleets"].([]any)) != 1 {
		t.Fatalf("GET fleets = %d %v", code, body)
	}

	code, body = e.do("POST", "/v1/fleets/ops/runs", e.admin, map[string]any{"input": "check the disks"})
	if code != 202 || body["status"] != "queued" {
		t.Fatalf("start = %d %v", code, body)
	}
	id := body["run_id"].(string)
	got := e.waitRun(id)
	if got["status"] != "succeeded" || got["answer"] != "done: check the disks" || got["source"] != "api" || got["error"] != nil {
		t.Fatalf("run = %v", got)
	}
	code, body = e.do("GET", "/v1/runs/"+id+"/events?after=0", e.admin, nil)
	evs, _ := body["events"].([]any)
	if code != 200 || len(evs) < 2 || evs[0].(map[string]any)["type"] != "run.started" {
		t.Fatalf("events = %d %v", code, body)
	}
	last := evs[len(evs)-1].(map[string]any)
	if last["type"] != "run.ended" || body["next"] != last["seq"] {
		t.Fatalf("last event %v, next %v", last, body["next"])
	}
	code, body = e.do("GET", fmt.Sprintf("/v1/runs/%s/events?after=%v", id, body["next"]), e.admin, nil)
	if code != 200 || len(body["events"].([]any)) != 0 || body["next"] != last["seq"] {
		t.Fatalf("events after the last = %d %v", code, body)
	}
	code, body = e.do("GET", "/v1/fleets/ops/runs", e.admin, nil)
	if code != 200 || len(body["runs"].([]any)) != 1 {
		t.Fatalf("runs = %d %v", code, body)
	}
	// An ended run cannot be cancelled.
	code, body = e.do("POST", "/v1/runs/"+id+"/cancel", e.admin, nil)
	if code != 409 || !strings.Contains(errMessage(body), "succeeded") {
		t.Fatalf("cancel an ended run = %d %v", code, body)
	}

	// Pause refuses runs; resume lets them in again.
	if code, _ := e.do("POST", "/v1/fleets/ops/pause", e.admin, nil); code != 200 {
		t.Fatal(code)
	}
	code, body = e.do("POST", "/v1/fleets/ops/runs", e.admin, map[string]any{"input": "x"})
	if code != 409 || errCode(body) != "UZ-AGT-012" {
		t.Fatalf("start while paused = %d %v", code, body)
	}
	if code, _ := e.do("POST", "/v1/fleets/ops/resume", e.admin, nil); code != 200 {
		t.Fatal(code)
	}
}

func TestBadRequestsSayWhatIsWrong(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.apply(opsTOML)
	tests := []struct {
		name, method, path string
		body               any
		status             int
		code, message      string
	}{
		{"no input", "POST", "/v1/fleets/ops/runs", `{}`, 400, "UZ-REQ-400", `field "input" is required`},
		{"input not a string", "POST", "/v1/fleets/ops/runs", `{"input": 3}`, 400, "UZ-REQ-400", `field "input" must be a string, not number`},
		{"unknown field", "POST", "/v1/fleets/ops/runs", `{"input": "x", "inptu": 1}`, 400, "UZ-REQ-400", `unknown field "inptu"`},
		{"not JSON", "POST", "/v1/fleets/ops/runs", `{"input": `, 400, "UZ-REQ-400", "not what POST"},
		{"trailing data", "POST", "/v1/fleets/ops/runs", `{"input": "x"} {}`, 400, "UZ-REQ-400", "nothing after it"},
		{"unknown conversation", "POST", "/v1/fleets/ops/runs", `{"input": "x", "conversation_id": "run_nope"}`, 400, "UZ-REQ-400", "no run run_nope of fleet ops to continue"},
		{"callback without sender", "POST", "/v1/fleets/ops/runs", `{"input": "x", "callback_url": "https://example.com/cb"}`, 400, "UZ-REQ-400", "callback_url"},
		{"unknown fleet", "POST", "/v1/fleets/nope/runs", `{"input": "x"}`, 404, "UZ-AGT-404", ""},
		{"unknown run", "GET", "/v1/runs/run_nope", nil, 404, "UZ-RUN-404", ""},
		{"bad after", "GET", "/v1/runs/run_nope/events?after=-1", nil, 400, "UZ-REQ-400", "after must be"},
		{"bad limit", "GET", "/v1/fleets?limit=lots", nil, 400, "UZ-REQ-400", "limit must be"},
		{"bad Definition", "PUT", "/v1/fleets/ops", "name = \"ops\"\n[x-agentsfleet]\ntools = [\"rm_rf\"]\n", 400, "UZ-DEF-400", "rm_rf"},
		{"name mismatch", "PUT", "/v1/fleets/other", opsTOML, 400, "UZ-DEF-400", "names must match"},
		{"no route", "GET", "/v2/things", nil, 404, "not_found", "/v1"},
		{"key without name", "POST", "/v1/keys", `{"scopes": ["runs:read"]}`, 400, "UZ-REQ-400", `field "name" is required`},
		{"key with unknown scope", "POST", "/v1/keys", `{"name": "x", "scopes": ["runs:everything"]}`, 403, "UZ-KEY-403", "runs:everything"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, body := e.do(tt.method, tt.path, e.admin, tt.body)
			if code != tt.status || errCode(body) != tt.code || !strings.Contains(errMessage(body), tt.message) {
				t.Fatalf("= %d %v; want %d %s containing %q", code, body, tt.status, tt.code, tt.message)
			}
		})
	}
}

func TestKeysAndScopes(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	// No key, a malformed key, a revoked key: 401, saying nothing more.
	for _, key := range []string{"", "afk_nope", e.admin + "x"} {
		code, body := e.do("GET", "/v1/fleets", key, nil)
		if code != 401 || errCode(body) != "UZ-KEY-401" {
			t.Fatalf("key %q: %d %v", key, code, body)
		}
	}
	// A key with runs scopes and the file tools only.
	code, body := e.do("POST", "/v1/keys", e.admin, map[string]any{"name": "ci", "scopes": []string{scope.FleetsWrite, scope.RunsRead, "tools:files"}})
	if code != 201 || !strings.HasPrefix(body["key"].(string), "afk_") {
		t.Fatalf("create key = %d %v", code, body)
	}
	ci, ciID := body["key"].(string), body["key_id"].(string)
	// Applying a Definition whose bash needs tools:execute is refused, naming both.
	code, body = e.do("PUT", "/v1/fleets/ops", ci, opsTOML)
	if code != 403 || errCode(body) != "UZ-KEY-403" || !strings.Contains(errMessage(body), `"tools:execute"`) || !strings.Contains(errMessage(body), `"bash"`) {
		t.Fatalf("apply without tools:execute = %d %v", code, body)
	}
	if code, body = e.do("PUT", "/v1/fleets/ops", ci, strings.Replace(opsTOML, `, "bash"`, "", 1)); code != 200 {
		t.Fatalf("apply with read only = %d %v", code, body)
	}
	// A route needing a scope the key lacks.
	code, body = e.do("POST", "/v1/fleets/ops/runs", ci, map[string]any{"input": "x"})
	if code != 403 || !strings.Contains(errMessage(body), scope.RunsWrite) {
		t.Fatalf("start without runs:write = %d %v", code, body)
	}
	// A key cannot mint a stronger one.
	_, ciAdmin, _ := e.store.CreateKey(ctx, "ci-admin", []string{scope.KeysAdmin})
	code, body = e.do("POST", "/v1/keys", ciAdmin, map[string]any{"name": "x", "scopes": []string{scope.RunsWrite}})
	if code != 403 || !strings.Contains(errMessage(body), "runs:write") {
		t.Fatalf("minting a stronger key = %d %v", code, body)
	}
	code, body = e.do("GET", "/v1/keys", e.admin, nil)
	if code != 200 || len(body["keys"].([]any)) != 3 || strings.Contains(fmt.Sprint(body), ci) {
		t.Fatalf("list keys = %d %v", code, body)
	}
	if code, _ := e.do("DELETE", "/v1/keys/"+ciID, e.admin, nil); code != 200 {
		t.Fatal(code)
	}
	if code, _ := e.do("GET", "/v1/runs/run_x", ci, nil); code != 401 {
		t.Fatalf("a revoked key answered %d, want 401", code)
	}
}

func TestRunStartsAreIdempotent(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.apply(opsTOML)
	var wg sync.WaitGroup
	ids := make([]string, 10)
	codes := make([]int, 10)
	for i := range ids {
		wg.Go(func() {
			code, body := e.do("POST", "/v1/fleets/ops/runs", e.admin, map[string]any{"input": "once"}, "Idempotency-Key", "deploy-42")
			codes[i] = code
			ids[i], _ = body["run_id"].(string)
		})
	}
	wg.Wait()
	for i := range ids {
		if codes[i] != 202 || ids[i] != ids[0] || ids[0] == "" {
			t.Fatalf("retry %d = %d %s; want 202 with %s", i, codes[i], ids[i], ids[0])
		}
	}
	e.waitRun(ids[0])
	e.local.Wait()
	if _, body := e.do("GET", "/v1/fleets/ops/runs", e.admin, nil); len(body["runs"].([]any)) != 1 {
		t.Fatalf("runs = %v; want one", body)
	}
	// Another key, another run.
	code, body := e.do("POST", "/v1/fleets/ops/runs", e.admin, map[string]any{"input": "twice"}, "Idempotency-Key", "deploy-43")
	if code != 202 || body["run_id"] == ids[0] {
		t.Fatalf("another key = %d %v", code, body)
	}
}

func TestWebhooks(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.apply(opsTOML)
	hook := func(body string, h http.Header) (int, map[string]any) {
		var hs []string
		for k, v := range h {
			hs = append(hs, k, v[0])
		}
		return e.do("POST", "/v1/hooks/ops", "", body, hs...)
	}
	signed := func(secret, body string, at time.Time) http.Header {
		h := http.Header{}
		webhook.SetHeaders(h, secret, at, []byte(body))
		return h
	}
	// No secret yet: 404, as for a fleet that does not exist.
	body := `{"alert": "disk full", "host": "db-1", "n": 12345678901234567890}`
	if code, b := hook(body, signed("afw_guess", body, time.Now())); code != 404 || errCode(b) != "UZ-HOOK-404" {
		t.Fatalf("no secret = %d %v", code, b)
	}
	code, b := e.do("POST", "/v1/fleets/ops/webhook-secret", e.admin, nil)
	if code != 200 {
		t.Fatal(code, b)
	}
	secret := b["secret"].(string)

	code, b = hook(body, signed(secret, body, time.Now()))
	if code != 202 {
		t.Fatalf("signed = %d %v", code, b)
	}
	id := b["run_id"].(string)
	input, err := e.store.GetRunInput(ctx, id)
	if err != nil || string(input) != "{\n  \"alert\": \"disk full\",\n  \"host\": \"db-1\",\n  \"n\": 12345678901234567890\n}" {
		t.Fatalf("input = %q, %v; want the body indented, its keys and numbers kept", input, err)
	}
	if run := e.waitRun(id); run["source"] != "webhook" {
		t.Fatalf("run = %v", run)
	}

	good := signed(secret, body, time.Now())
	tampered := good.Clone()
	stale := signed(secret, body, time.Now().Add(-6*time.Minute))
	for _, tt := range []struct {
		name   string
		body   string
		h      http.Header
		status int
		code   string
	}{
		{"unsigned", body, http.Header{}, 401, "UZ-HOOK-401"},
		{"tampered body", strings.Replace(body, "db-1", "db-2", 1), tampered, 401, "UZ-HOOK-401"},
		{"other secret", body, signed("afw_other", body, time.Now()), 401, "UZ-HOOK-401"},
		{"stale", body, stale, 401, "UZ-HOOK-401"},
		{"replayed", `{"alert": "cpu"}`, signed(secret, `{"alert": "cpu"}`, time.Now()), 202, ""},
	} {
		code, b := hook(tt.body, tt.h)
		if code != tt.status || errCode(b) != tt.code {
			t.Fatalf("%s = %d %v; want %d %s", tt.name, code, b, tt.status, tt.code)
		}
		if tt.name == "replayed" {
			// The same delivery again.
			code, b = hook(tt.body, tt.h)
			if code != 409 || errCode(b) != "UZ-HOOK-409" || !strings.Contains(errMessage(b), "run_") {
				t.Fatalf("replay = %d %v", code, b)
			}
		}
	}
	e.local.Wait()
}

func TestCallbackIsSignedAndRetried(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var got []http.Header
	var bodies [][]byte
	rc := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		defer mu.Unlock()
		got = append(got, r.Header.Clone())
		bodies = append(bodies, b)
		if len(got) == 1 {
			w.WriteHeader(503)
			return
		}
		w.WriteHeader(204)
	}))
	defer rc.Close()
	sender := callback.New(callback.Config{AllowAddr: netip.MustParseAddrPort(rc.Listener.Addr().String()),
		Resolver: egress.Hosts{}, BaseDelay: 10 * time.Millisecond})
	e := newEnv(t, func(r *runner.Config, a *api.Config) { r.Callbacks, a.Callbacks = sender, sender })
	e.apply(opsTOML)
	// A callback needs the fleet's webhook secret to be signed with.
	code, b := e.do("POST", "/v1/fleets/ops/runs", e.admin, map[string]any{"input": "x", "callback_url": rc.URL + "/done"})
	if code != 400 || !strings.Contains(errMessage(b), "webhook-secret") {
		t.Fatalf("callback without a secret = %d %v", code, b)
	}
	_, b = e.do("POST", "/v1/fleets/ops/webhook-secret", e.admin, nil)
	secret := b["secret"].(string)
	code, b = e.do("POST", "/v1/fleets/ops/runs", e.admin, map[string]any{"input": "call me", "callback_url": rc.URL + "/done"})
	if code != 202 {
		t.Fatalf("start = %d %v", code, b)
	}
	e.waitRun(b["run_id"].(string))
	e.local.Wait()
	mu.Lock()
	defer mu.Unlock()
	if len(got) != 2 {
		t.Fatalf("the receiver saw %d deliveries, want 2 (503, then 204)", len(got))
	}
	if _, err := webhook.VerifyCallback(secret, got[1], bodies[1], time.Now()); err != nil {
		t.Fatalf("the callback does not verify: %v", err)
	}
	var res callback.Result
	if err := json.Unmarshal(bodies[1], &res); err != nil || res.Answer != "done: call me" || res.Status != "succeeded" || res.RunID != b["run_id"] {
		t.Fatalf("callback body %s (%v)", bodies[1], err)
	}
}

// TestGatewayEvents drives the Lambda's handler with the API Gateway
// payloads of events/api, their key and signature made real.
func TestGatewayEvents(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.apply(opsTOML)
	a, err := api.New(api.Config{Store: e.store, Invoker: e.local})
	if err != nil {
		t.Fatal(err)
	}
	load := func(name string) events.APIGatewayV2HTTPRequest {
		raw, err := os.ReadFile(filepath.Join("..", "..", "events", "api", name))
		if err != nil {
			t.Fatal(err)
		}
		var req events.APIGatewayV2HTTPRequest
		if err := json.Unmarshal(raw, &req); err != nil {
			t.Fatal(err)
		}
		return req
	}
	req := load("start-run.json")
	req.Headers["authorization"] = "Bearer " + e.admin
	resp, err := a.HandleGateway(ctx, req)
	if err != nil || resp.StatusCode != 202 || !strings.Contains(resp.Body, `"run_id"`) || resp.Headers["Content-Type"] != "application/json" {
		t.Fatalf("start-run = %+v, %v", resp, err)
	}
	var started struct {
		RunID string `json:"run_id"`
	}
	json.Unmarshal([]byte(resp.Body), &started)
	if input, _ := e.store.GetRunInput(ctx, started.RunID); string(input) != "check the disks on db-1" {
		t.Fatalf("the base64 body came through as %q", input)
	}
	// The same request again (its Idempotency-Key) is the same run.
	if again, _ := a.HandleGateway(ctx, req); !strings.Contains(again.Body, started.RunID) {
		t.Fatalf("retry = %+v, want %s", again, started.RunID)
	}

	_, b := e.do("POST", "/v1/fleets/ops/webhook-secret", e.admin, nil)
	hook := load("webhook.json")
	ts, sig := webhook.Sign(b["secret"].(string), time.Now(), []byte(hook.Body))
	hook.Headers["x-agentsfleet-timestamp"], hook.Headers["x-agentsfleet-signature"] = ts, sig
	if resp, err := a.HandleGateway(ctx, hook); err != nil || resp.StatusCode != 202 {
		t.Fatalf("webhook = %+v, %v", resp, err)
	}
	hook.Body += " "
	if resp, _ := a.HandleGateway(ctx, hook); resp.StatusCode != 401 {
		t.Fatalf("a changed webhook body = %+v, want 401", resp)
	}
	e.local.Wait()
}
