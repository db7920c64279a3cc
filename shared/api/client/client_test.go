package client_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentsfleet/agentsfleet/shared/api/apitest"
	"github.com/agentsfleet/agentsfleet/shared/api/client"
	"github.com/agentsfleet/agentsfleet/shared/awstest"
	"github.com/agentsfleet/agentsfleet/shared/invoke"
	afrun "github.com/agentsfleet/agentsfleet/shared/run"
	"github.com/agentsfleet/agentsfleet/shared/scope"
	"github.com/agentsfleet/agentsfleet/shared/store"
)

func TestMain(m *testing.M) { awstest.Main(m) }

var ctx = context.Background()

type env struct {
	store *store.Store
	local *invoke.Local
	srv   *apitest.Server
	admin string // a key with every scope
	c     *client.Client
}

// newEnv is the real API over a fresh table on the emulator (apitest): a
// runner on the scripted model behind a local invoker, and schedules kept
// by a keeper over the emulator's EventBridge Scheduler (withSchedules).
func newEnv(t *testing.T, withSchedules bool) *env {
	t.Helper()
	s := apitest.New(t, apitest.Options{Script: apitest.PlanScript, Schedules: withSchedules})
	c, err := client.New(s.URL, s.Admin, client.WithPoll(20*time.Millisecond, 100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	return &env{store: s.Store, local: s.Local, srv: s, admin: s.Admin, c: c}
}

// apiError returns err as an *client.Error, failing the test if it is not
// one with the status and code.
func apiError(t *testing.T, err error, status int, code string) *client.Error {
	t.Helper()
	var ae *client.Error
	if !errors.As(err, &ae) || ae.Status != status || ae.Code != code {
		t.Fatalf("error %v (%T); want an *client.Error %d %s", err, err, status, code)
	}
	return ae
}

func TestNewChecksTheURL(t *testing.T) {
	t.Parallel()
	for _, u := range []string{"http://127.0.0.1:8080", "https://api.example.com", "http://localhost:8080/", "http://[::1]:9"} {
		c, err := client.New(u, "k")
		if err != nil {
			t.Errorf("New(%q) = %v", u, err)
		} else if strings.HasSuffix(c.URL(), "/") {
			t.Errorf("New(%q).URL() = %q, want no trailing slash", u, c.URL())
		}
	}
	for _, tc := range []struct{ url, want string }{
		{"", "empty"},
		{"127.0.0.1:8080", "http://"},
		{"localhost", "http://"},
		{"ftp://example.com", "scheme is ftp"},
		{"http://", "no host"},
		{"http://example.com/v1", "has a path (/v1)"},
		{"http://example.com/?x=1", "query"},
		{"http://u:p@example.com", "user name"},
		{"http://example.com:99999", "port"},
		{"http://exa mple.com", "not a URL"},
	} {
		_, err := client.New(tc.url, "k")
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "http(s)://host[:port]") {
			t.Errorf("New(%q) = %v; want an error saying %q and the right shape", tc.url, err, tc.want)
		}
	}
}

func TestUnreachable(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now
	c, err := client.New("http://"+addr, "k")
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Fleets(ctx, "")
	var ue *client.UnreachableError
	if !errors.As(err, &ue) || ue.URL != "http://"+addr || !strings.Contains(err.Error(), "could not reach the agentsfleet API at http://"+addr) {
		t.Fatalf("Fleets against nothing = %v; want an *UnreachableError naming http://%s", err, addr)
	}
	var ae *client.Error
	if errors.As(err, &ae) {
		t.Fatalf("an unreachable API is also an *Error: %v", ae)
	}
}

func TestNotTheAPI(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "<html>bad gateway</html>", http.StatusBadGateway)
	}))
	defer srv.Close()
	c, _ := client.New(srv.URL, "k")
	_, err := c.Run(ctx, "run_1")
	ae := apiError(t, err, 502, "")
	if !strings.Contains(ae.Error(), "HTTP 502 Bad Gateway") || !strings.Contains(ae.Message, "bad gateway") {
		t.Fatalf("a proxy's page = %q", ae.Error())
	}
}

func TestFleetsRunsAndEvents(t *testing.T) {
	t.Parallel()
	e := newEnv(t, false)
	c := e.c

	// A refused key is an *Error with the API's code, reading CODE: message.
	bad, _ := client.New(e.srv.URL, "afk_nope")
	_, err := bad.Fleets(ctx, "")
	if ae := apiError(t, err, 401, "UZ-KEY-401"); !strings.HasPrefix(ae.Error(), "UZ-KEY-401: ") {
		t.Fatalf("Error() = %q", ae.Error())
	}

	// A bad Definition: the API's message names the line and the tool.
	_, err = c.ApplyFleet(ctx, "ops", []byte("name = \"ops\"\ninstructions = \"x\"\n[x-agentsfleet]\ntools = [\"rm_rf\"]\n"), "application/toml")
	if ae := apiError(t, err, 400, "UZ-DEF-400"); !strings.Contains(ae.Message, "rm_rf") || !strings.Contains(ae.Message, "line 4") {
		t.Fatalf("bad Definition message %q; want the tool and line 4", ae.Message)
	}
	got, err := c.ApplyFleet(ctx, "ops", []byte(apitest.OpsTOML), "application/toml")
	if err != nil || got != (client.Applied{Name: "ops", Revision: 1}) {
		t.Fatalf("apply = %+v, %v", got, err)
	}
	if got, err = c.ApplyFleet(ctx, "ops", []byte(apitest.OpsTOML), ""); err != nil || !got.Unchanged || got.Revision != 1 {
		t.Fatalf("apply again = %+v, %v; want revision 1 unchanged", got, err)
	}
	if got, err = c.ApplyFleet(ctx, "ops", []byte(strings.Replace(apitest.OpsTOML, "Keep", "Keep on", 1)), ""); err != nil || got.Revision != 2 {
		t.Fatalf("apply a change = %+v, %v; want revision 2", got, err)
	}
	f, err := c.Fleet(ctx, "ops")
	if err != nil || f.Revision != 2 || !strings.Contains(string(f.Definition), "Keep on") {
		t.Fatalf("Fleet = %+v, %v", f, err)
	}
	if _, err := c.Fleet(ctx, "nope"); err != nil {
		apiError(t, err, 404, "UZ-AGT-404")
	} else {
		t.Fatal("Fleet(nope) succeeded")
	}
	page, err := c.Fleets(ctx, "")
	if err != nil || len(page.Fleets) != 1 || page.Fleets[0].Name != "ops" || page.Fleets[0].Definition != nil {
		t.Fatalf("Fleets = %+v, %v", page, err)
	}
	if secret, err := c.RotateWebhookSecret(ctx, "ops"); err != nil || secret == "" {
		t.Fatalf("RotateWebhookSecret = %q, %v", secret, err)
	}

	// A run followed to its end: every event once, in order.
	started, err := c.StartRun(ctx, "ops", "the disks", client.StartOptions{IdempotencyKey: "deploy-1"})
	if err != nil || started.Status != store.StatusQueued {
		t.Fatalf("StartRun = %+v, %v", started, err)
	}
	again, err := c.StartRun(ctx, "ops", "the disks", client.StartOptions{IdempotencyKey: "deploy-1"})
	if err != nil || again.RunID != started.RunID {
		t.Fatalf("a retry = %+v, %v; want run %s", again, err, started.RunID)
	}
	var seen []afrun.Event
	run, err := c.Follow(ctx, started.RunID, 0, func(ev afrun.Event) { seen = append(seen, ev) })
	if err != nil || run.Status != store.StatusSucceeded || run.Answer != "done: the disks" || run.RunID != started.RunID || run.Usage.ToolCalls != 1 {
		t.Fatalf("Follow = %+v, %v", run, err)
	}
	var types []string
	for i, ev := range seen {
		types = append(types, ev.Type)
		if ev.Seq != int64(i+1) || ev.Time == "" || len(ev.Data) == 0 {
			t.Errorf("event %d = %+v; want seq %d with time and data", i, ev, i+1)
		}
	}
	if got := strings.Join(types, " "); !strings.HasPrefix(got, "run.started tool.call") || !strings.Contains(got, "plan.updated") || !strings.HasSuffix(got, "run.ended") {
		t.Fatalf("events %s", got)
	}
	// Events pages from after; Follow from the last seq returns at once.
	evs, next, err := c.Events(ctx, run.RunID, 2)
	if err != nil || len(evs) != len(seen)-2 || evs[0].Seq != 3 || next != int64(len(seen)) {
		t.Fatalf("Events after 2 = %d events, next %d, %v", len(evs), next, err)
	}
	if evs, next, err = c.Events(ctx, run.RunID, next); err != nil || len(evs) != 0 || next != int64(len(seen)) {
		t.Fatalf("Events after the last = %v, %d, %v", evs, next, err)
	}
	if r, err := c.Run(ctx, run.RunID); err != nil || r.Status != store.StatusSucceeded || r.Source != store.SourceAPI || r.Fleet != "ops" {
		t.Fatalf("Run = %+v, %v", r, err)
	}
	runs, err := c.Runs(ctx, "ops", "")
	if err != nil || len(runs.Runs) != 1 || runs.Runs[0].RunID != run.RunID || !runs.Runs[0].Ended() {
		t.Fatalf("Runs = %+v, %v", runs, err)
	}
	_, err = c.Cancel(ctx, run.RunID)
	if ae := apiError(t, err, 409, "UZ-RUN-409"); !strings.Contains(ae.Message, "succeeded") {
		t.Fatalf("cancel an ended run: %q", ae.Message)
	}

	// A run that fails: Follow returns it failed, with its error.
	if _, err := c.ApplyFleet(ctx, "tight", []byte(apitest.TightTOML), "application/toml"); err != nil {
		t.Fatal(err)
	}
	started, err = c.StartRun(ctx, "tight", "x", client.StartOptions{})
	if err != nil {
		t.Fatal(err)
	}
	run, err = c.Follow(ctx, started.RunID, 0, func(afrun.Event) {})
	if err != nil || run.Status != store.StatusFailed || run.Error == nil || run.Error.Code == "" {
		t.Fatalf("Follow a failing run = %+v, %v", run, err)
	}

	// Pause refuses runs; Resume lets them in.
	if f, err := c.Pause(ctx, "ops"); err != nil || !f.Paused {
		t.Fatalf("Pause = %+v, %v", f, err)
	}
	_, err = c.StartRun(ctx, "ops", "x", client.StartOptions{})
	apiError(t, err, 409, "UZ-AGT-012")
	if f, err := c.Resume(ctx, "ops"); err != nil || f.Paused {
		t.Fatalf("Resume = %+v, %v", f, err)
	}
	// A cancel of a run that is still to start.
	started, err = c.StartRun(ctx, "ops", "y", client.StartOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if cancelled, err := c.Cancel(ctx, started.RunID); err == nil {
		if cancelled.Status != store.StatusCancelled {
			t.Fatalf("Cancel = %+v", cancelled)
		}
		run, err := c.Follow(ctx, started.RunID, 0, func(afrun.Event) {})
		if err != nil || run.Status != store.StatusCancelled {
			t.Fatalf("Follow a cancelled run = %+v, %v", run, err)
		}
	} else {
		apiError(t, err, 409, "UZ-RUN-409") // it ended first
	}
	e.local.Wait()
}

func TestFollowStopsWithItsContext(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	polls := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		polls++
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		if strings.HasSuffix(r.URL.Path, "/events") {
			io.WriteString(w, `{"events": [], "next": 0}`)
			return
		}
		io.WriteString(w, `{"run_id": "run_1", "status": "running"}`)
	}))
	defer srv.Close()
	c, _ := client.New(srv.URL, "k", client.WithPoll(10*time.Millisecond, 40*time.Millisecond))
	cctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	_, err := c.Follow(cctx, "run_1", 0, func(afrun.Event) { t.Error("an event from nothing") })
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Follow = %v; want the context's deadline", err)
	}
	mu.Lock()
	defer mu.Unlock()
	// Backing off to 40 ms: about 300/40 rounds of two requests, not 300/10.
	if polls < 4 || polls > 30 {
		t.Fatalf("%d requests in 300 ms; want the idle back-off", polls)
	}
}

func TestSchedules(t *testing.T) {
	t.Parallel()
	e := newEnv(t, true)
	c := e.c
	if _, err := c.ApplyFleet(ctx, "ops", []byte(apitest.OpsTOML), ""); err != nil {
		t.Fatal(err)
	}
	s, err := c.CreateSchedule(ctx, "ops", client.NewSchedule{Expression: "cron(0 9 ? * MON-FRI *)", Message: "the disks", Timezone: "Europe/Paris"})
	if err != nil || s.ScheduleID == "" || s.Source != string(store.ActorPerson) || s.Timezone != "Europe/Paris" || s.Fleet != "ops" {
		t.Fatalf("CreateSchedule = %+v, %v", s, err)
	}
	_, err = c.CreateSchedule(ctx, "ops", client.NewSchedule{Expression: "every day", Message: "m"})
	apiError(t, err, 400, "UZ-REQ-400")
	list, err := c.Schedules(ctx, "ops")
	if err != nil || len(list) != 1 || list[0].ScheduleID != s.ScheduleID {
		t.Fatalf("Schedules = %+v, %v", list, err)
	}
	msg := "the disks, twice"
	if u, err := c.UpdateSchedule(ctx, "ops", s.ScheduleID, client.SchedulePatch{Message: &msg}); err != nil || u.Message != msg {
		t.Fatalf("UpdateSchedule = %+v, %v", u, err)
	}
	p, err := c.PauseSchedule(ctx, "ops", s.ScheduleID)
	if err != nil || p.State == s.State {
		t.Fatalf("PauseSchedule = %+v, %v (was %s)", p, err, s.State)
	}
	if r, err := c.ResumeSchedule(ctx, "ops", s.ScheduleID); err != nil || r.State != s.State {
		t.Fatalf("ResumeSchedule = %+v, %v; want %s", r, err, s.State)
	}
	started, err := c.RunSchedule(ctx, "ops", s.ScheduleID)
	if err != nil || started.RunID == "" {
		t.Fatalf("RunSchedule = %+v, %v", started, err)
	}
	run, err := c.Follow(ctx, started.RunID, 0, func(afrun.Event) {})
	if err != nil || run.Source != store.SourceSchedule || run.Answer != "done: "+msg {
		t.Fatalf("the schedule's run = %+v, %v", run, err)
	}
	// With an Idempotency-Key, a retried POST …/run answers the first run.
	runOnce := func(k string) string {
		req, _ := http.NewRequest("POST", e.srv.URL+"/v1/fleets/ops/schedules/"+s.ScheduleID+"/run", nil)
		req.Header.Set("Authorization", "Bearer "+e.admin)
		req.Header.Set("Idempotency-Key", k)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var out client.RunStarted
		if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || resp.StatusCode != 202 {
			t.Fatalf("POST …/run = %d, %v", resp.StatusCode, err)
		}
		return out.RunID
	}
	if a, b := runOnce("nightly-7"), runOnce("nightly-7"); a != b || a == started.RunID {
		t.Errorf("two schedule runs with one Idempotency-Key = %s, %s; want one new run", a, b)
	}
	if a, b := runOnce("nightly-8"), runOnce("nightly-9"); a == b {
		t.Errorf("two keys started one run %s", a)
	}
	if err := c.DeleteSchedule(ctx, "ops", s.ScheduleID); err != nil {
		t.Fatal(err)
	}
	err = c.DeleteSchedule(ctx, "ops", s.ScheduleID)
	apiError(t, err, 404, "UZ-SCHED-404")
	e.local.Wait()
}

func TestNoSchedulesConfigured(t *testing.T) {
	t.Parallel()
	e := newEnv(t, false)
	_, err := e.c.Schedules(ctx, "ops")
	if ae := apiError(t, err, 400, "UZ-REQ-400"); !strings.Contains(ae.Message, "not configured") {
		t.Fatalf("message %q", ae.Message)
	}
}

func TestKeys(t *testing.T) {
	t.Parallel()
	e := newEnv(t, false)
	c := e.c
	nk, err := c.CreateKey(ctx, "ci", []string{scope.RunsRead})
	if err != nil || nk.KeyID == "" || !strings.HasPrefix(nk.Key, "afk_") || nk.Name != "ci" {
		t.Fatalf("CreateKey = %+v, %v", nk, err)
	}
	keys, err := c.Keys(ctx)
	if err != nil || len(keys) != 2 {
		t.Fatalf("Keys = %+v, %v", keys, err)
	}
	ci, _ := client.New(e.srv.URL, nk.Key)
	_, err = ci.CreateKey(ctx, "stronger", []string{scope.RunsWrite})
	apiError(t, err, 403, "UZ-KEY-403")
	if _, err := ci.Runs(ctx, "nope", ""); err != nil {
		apiError(t, err, 404, "UZ-AGT-404") // the key works
	}
	// A key of fleet ops makes keys of ops only.
	ops, err := c.CreateKey(ctx, "ops admin", []string{scope.KeysAdmin, scope.RunsRead}, "ops")
	if err != nil || !slices.Equal(ops.Fleets, []string{"ops"}) {
		t.Fatalf("CreateKey of ops = %+v, %v", ops, err)
	}
	oc, _ := client.New(e.srv.URL, ops.Key)
	_, err = oc.CreateKey(ctx, "dev", []string{scope.RunsRead}, "dev")
	apiError(t, err, 403, "UZ-KEY-403")
	if k, err := oc.CreateKey(ctx, "ops ci", []string{scope.RunsRead}); err != nil || !slices.Equal(k.Fleets, []string{"ops"}) {
		t.Fatalf("CreateKey without fleets by a key of ops = %+v, %v; want a key of ops", k, err)
	}
	if err := c.RevokeKey(ctx, nk.KeyID); err != nil {
		t.Fatal(err)
	}
	_, err = ci.Run(ctx, "run_x")
	apiError(t, err, 401, "UZ-KEY-401")
	keys, _ = c.Keys(ctx)
	for _, k := range keys {
		if k.KeyID == nk.KeyID && !k.Revoked {
			t.Fatalf("the revoked key lists as %+v", k)
		}
	}
}
