package api_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/agentsfleet/agentsfleet/shared/api"
	"github.com/agentsfleet/agentsfleet/shared/api/apitest"
	"github.com/agentsfleet/agentsfleet/shared/scope"
)

// key makes a key with scopes (and fleets, none for every fleet).
func (e *env) key(name string, scopes []string, fleets ...string) string {
	e.t.Helper()
	_, k, err := e.store.CreateKey(ctx, name, scopes, fleets...)
	if err != nil {
		e.t.Fatal(err)
	}
	return k
}

// teams is the API with schedules, two fleets (ops for team A, dev for team
// B), a run and two schedules of each, and a key per team holding every
// scope but serving its own fleet only.
type teams struct {
	*env
	a, b     string // the teams' keys
	runs     map[string]string
	sched    map[string]string // a schedule of each fleet
	doomed   map[string]string // another, for DELETE
	channels map[string]string // a Slack channel routed to each fleet
	chats    map[string]string // an improvement chat of each fleet
}

func newTeams(t *testing.T) *teams {
	t.Helper()
	s := apitest.New(t, apitest.Options{Schedules: true})
	e := &env{t: t, store: s.Store, local: s.Local, srv: s, admin: s.Admin}
	tm := &teams{env: e, runs: map[string]string{}, sched: map[string]string{}, doomed: map[string]string{},
		channels: map[string]string{"ops": "COPSTEAM", "dev": "CDEVTEAM"}, chats: map[string]string{}}
	for _, f := range []string{"ops", "dev"} {
		if code, b := e.do("PUT", "/v1/fleets/"+f, e.admin, strings.Replace(opsTOML, `"ops"`, `"`+f+`"`, 1)); code != 200 {
			t.Fatalf("apply %s = %d %v", f, code, b)
		}
		_, b := e.do("POST", "/v1/fleets/"+f+"/runs", e.admin, map[string]any{"input": "x"})
		tm.runs[f] = b["run_id"].(string)
		e.waitRun(tm.runs[f])
		for _, into := range []map[string]string{tm.sched, tm.doomed} {
			code, b := e.do("POST", "/v1/fleets/"+f+"/schedules", e.admin, map[string]any{"expression": "rate(1 day)", "message": "m"})
			if code != 201 {
				t.Fatalf("schedule of %s = %d %v", f, code, b)
			}
			into[f] = b["schedule_id"].(string)
		}
		code, b := e.do("POST", "/v1/fleets/"+f+"/improvements", e.admin, map[string]any{"message": "m"})
		if code != 201 {
			t.Fatalf("chat about %s = %d %v", f, code, b)
		}
		tm.chats[f] = b["improvement_id"].(string)
		if code, b := e.do("PUT", "/v1/slack/routes/"+tm.channels[f], e.admin, map[string]any{"fleet": f}); code != 200 {
			t.Fatalf("route = %d %v", code, b)
		}
	}
	tm.a = e.key("team a", scope.Names(), "ops")
	tm.b = e.key("team b", scope.Names(), "dev")
	return tm
}

// path fills a route's pattern for fleet's resources: {name}, the run's or
// a schedule's {id}.
func (tm *teams) path(pattern, fleet string) (method, path string) {
	method, path, _ = strings.Cut(pattern, " ")
	id := tm.runs[fleet]
	if strings.HasPrefix(path, "/v1/improvements/") {
		id = tm.chats[fleet]
	}
	if strings.Contains(path, "/schedules/") {
		id = tm.sched[fleet]
		if method == "DELETE" {
			id = tm.doomed[fleet]
		}
	}
	r := strings.NewReplacer("{name}", fleet, "{id}", id, "{revision}", "1", "{fleet}", fleet, "{channel}", tm.channels[fleet])
	return method, r.Replace(path)
}

// bodies are what the routes that read a body are sent; a route not here
// is sent none (the fleet check comes first, so team A's answer is the
// same either way).
var bodies = map[string]func(fleet string) any{
	"PUT /v1/fleets/{name}":       func(f string) any { return strings.Replace(opsTOML, `"ops"`, `"`+f+`"`, 1) },
	"POST /v1/fleets/{name}/runs": func(string) any { return map[string]any{"input": "y"} },
	"POST /v1/fleets/{name}/schedules": func(string) any {
		return map[string]any{"expression": "rate(2 days)", "message": "n"}
	},
	"PATCH /v1/fleets/{name}/schedules/{id}":     func(string) any { return map[string]any{"message": "changed"} },
	"POST /v1/fleets/{name}/improvements":        func(string) any { return map[string]any{"message": "more"} },
	"POST /v1/improvements/{id}/messages":        func(string) any { return map[string]any{"message": "more"} },
	"POST /v1/runs/{id}/approvals/{approval_id}": func(string) any { return map[string]any{"decision": "approve"} },
}

// snapshot is what an admin sees of fleet: the fleet, its runs, schedules
// and webhook secret, and its Slack channel's route.
func (tm *teams) snapshot(fleet string) string {
	tm.t.Helper()
	var b strings.Builder
	for _, p := range []string{"/v1/fleets/" + fleet, "/v1/fleets/" + fleet + "/runs", "/v1/fleets/" + fleet + "/schedules", "/v1/runs/" + tm.runs[fleet]} {
		code, body := tm.do("GET", p, tm.admin, nil)
		fmt.Fprintf(&b, "%s %d %v\n", p, code, body)
	}
	secret, err := tm.store.WebhookSecret(ctx, fleet)
	route, _, _ := tm.store.SlackRoute(ctx, tm.channels[fleet])
	fmt.Fprintf(&b, "secret %q %v, route %v\n", secret, err, route.Fleet)
	return b.String()
}

// TestFleetKeysOnEveryRoute drives every route of the API's table with team
// A's key at team B's fleet: each is refused, and B's fleet is as it was.
// Team B's own key, with the same request, is not refused: the refusal is
// the fleet check's. A route added to the table is probed here without a
// line more, or, if it reaches its fleet in its handler, fails this test
// until it gets a case below. (Before per-fleet keys, every key served every
// fleet.)
func TestFleetKeysOnEveryRoute(t *testing.T) {
	t.Parallel()
	tm := newTeams(t)
	a, err := api.New(api.Config{Store: tm.store, Invoker: tm.local})
	if err != nil {
		t.Fatal(err)
	}
	before := tm.snapshot("dev")
	var keyed []api.Route
	for _, rt := range a.Routes() {
		switch rt.Reach {
		case api.ReachFleet, api.ReachRun, api.ReachImprovement:
			keyed = append(keyed, rt)
			method, path := tm.path(rt.Pattern, "dev")
			var body any
			if mk := bodies[rt.Pattern]; mk != nil {
				body = mk("dev")
			}
			code, b := tm.do(method, path, tm.a, body)
			want, wantCode := 403, "UZ-KEY-403"
			if rt.Reach == api.ReachRun {
				want, wantCode = 404, "UZ-RUN-404"
			}
			if rt.Reach == api.ReachImprovement {
				want, wantCode = 404, "UZ-IMP-404"
			}
			if code != want || errCode(b) != wantCode {
				t.Errorf("%s with team A's key = %d %v; want %d %s", rt.Pattern, code, b, want, wantCode)
			}
			if rt.Reach == api.ReachFleet && !strings.Contains(errMessage(b), `serves the fleets ops only, not "dev"`) {
				t.Errorf("%s: the refusal %q does not say which fleets the key serves", rt.Pattern, errMessage(b))
			}
			// A fleet that does not exist is refused alike: the answer
			// tells nothing of which fleets exist.
			if rt.Reach == api.ReachFleet {
				_, ghostPath := tm.path(strings.Replace(rt.Pattern, "{name}", "ghost", 1), "dev")
				if code, b := tm.do(method, ghostPath, tm.a, body); code != want || errCode(b) != wantCode {
					t.Errorf("%s at a fleet that does not exist = %d %v; want %d %s", rt.Pattern, code, b, want, wantCode)
				}
			}
		case api.ReachHandler:
			if crossFleet[rt.Pattern] == nil {
				t.Errorf("route %s checks the key's fleets in its handler and has no case in crossFleet", rt.Pattern)
			}
		case api.ReachSigned:
			if rt.Pattern != "POST /v1/hooks/{fleet}" || len(rt.Scopes) != 0 {
				t.Errorf("route %s takes no key: only the webhook may", rt.Pattern)
			}
		default:
			t.Errorf("route %s has reach %v", rt.Pattern, rt.Reach)
		}
	}
	if after := tm.snapshot("dev"); after != before {
		t.Fatalf("team A's refused requests changed team B's fleet:\nbefore %s\nafter  %s", before, after)
	}
	// A run of team A's fleet cannot continue team B's conversation.
	if code, b := tm.do("POST", "/v1/fleets/ops/runs", tm.a, map[string]any{"input": "x", "conversation_id": tm.runs["dev"]}); code != 400 {
		t.Errorf("team A continuing team B's run = %d %v; want 400", code, b)
	}
	// Team B's key, the same requests: none is refused by the fleet check.
	for _, rt := range keyed {
		method, path := tm.path(rt.Pattern, "dev")
		var body any
		if mk := bodies[rt.Pattern]; mk != nil {
			body = mk("dev")
		}
		code, b := tm.do(method, path, tm.b, body)
		// A chat's own state may refuse (its agent answering, no proposal
		// yet, discarded), and the run has no approval to decide: that is
		// not the fleet check.
		if code >= 400 && code != 409 && !strings.HasPrefix(errCode(b), "UZ-IMP-") && errCode(b) != "UZ-APR-404" {
			t.Errorf("%s with team B's own key = %d %v; want it served", rt.Pattern, code, b)
		}
	}
	tm.local.Wait()
}

// crossFleet are the cases of the routes that keep to the key's fleets in
// their handlers: each tries team A's key on team B's things.
var crossFleet = map[string]func(t *testing.T, tm *teams){
	"GET /v1/fleets": func(t *testing.T, tm *teams) {
		code, b := tm.do("GET", "/v1/fleets", tm.a, nil)
		if code != 200 || fmt.Sprint(b["fleets"]) == "" || strings.Contains(fmt.Sprint(b), "dev") || !strings.Contains(fmt.Sprint(b), "ops") {
			t.Errorf("team A lists = %d %v; want ops alone", code, b)
		}
		// A key naming fleets that do not exist yet lists those that do.
		both := tm.key("a and c", []string{scope.FleetsRead}, "zeta", "ops", "ghost")
		if code, b := tm.do("GET", "/v1/fleets", both, nil); code != 200 || len(b["fleets"].([]any)) != 1 || b["next"] != "" {
			t.Errorf("a key of ops, ghost and zeta lists = %d %v; want ops alone", code, b)
		}
		// Pages of one, following next.
		tm.do("PUT", "/v1/fleets/zeta", tm.admin, strings.Replace(opsTOML, `"ops"`, `"zeta"`, 1))
		var got []string
		cursor := ""
		for range 5 {
			code, b := tm.do("GET", "/v1/fleets?limit=1&cursor="+cursor, both, nil)
			if code != 200 {
				t.Fatalf("page = %d %v", code, b)
			}
			for _, f := range b["fleets"].([]any) {
				got = append(got, f.(map[string]any)["name"].(string))
			}
			if cursor = b["next"].(string); cursor == "" {
				break
			}
		}
		if !slices.Equal(got, []string{"ops", "zeta"}) {
			t.Errorf("paged = %q, want ops, zeta", got)
		}
		// A deployment-wide key still lists every fleet.
		if _, b := tm.do("GET", "/v1/fleets", tm.admin, nil); len(b["fleets"].([]any)) != 3 {
			t.Errorf("the admin lists %v; want three fleets", b)
		}
	},
	"POST /v1/keys": func(t *testing.T, tm *teams) {
		for _, tt := range []struct {
			name string
			body map[string]any
			want string
		}{
			{"another team's fleet", map[string]any{"name": "x", "scopes": []string{scope.RunsRead}, "fleets": []string{"dev"}}, `not dev`},
			{"its own and another", map[string]any{"name": "x", "scopes": []string{scope.RunsRead}, "fleets": []string{"ops", "dev"}}, `not dev`},
			{"an empty list (never every fleet)", map[string]any{"name": "x", "scopes": []string{scope.RunsRead}, "fleets": []string{}}, `"fleets" is empty`},
		} {
			code, b := tm.do("POST", "/v1/keys", tm.a, tt.body)
			if code < 400 || !strings.Contains(errMessage(b), tt.want) || b["key"] != nil {
				t.Errorf("team A creating a key of %s = %d %v; want refused, saying %q", tt.name, code, b, tt.want)
			}
		}
		// Fleets left out are the creator's own, never every fleet.
		code, b := tm.do("POST", "/v1/keys", tm.a, map[string]any{"name": "a ci", "scopes": []string{scope.RunsRead}})
		if code != 201 || fmt.Sprint(b["fleets"]) != "[ops]" {
			t.Fatalf("team A creating a key = %d %v; want 201 serving ops", code, b)
		}
		if code, b := tm.do("GET", "/v1/runs/"+tm.runs["dev"], b["key"].(string), nil); code != 404 {
			t.Errorf("its key reading team B's run = %d %v; want 404", code, b)
		}
		// A deployment-wide key makes keys of any fleets, or of all.
		if code, b := tm.do("POST", "/v1/keys", tm.admin, map[string]any{"name": "b ci", "scopes": []string{scope.RunsRead}, "fleets": []string{"dev"}}); code != 201 || fmt.Sprint(b["fleets"]) != "[dev]" {
			t.Errorf("the admin creating a key of dev = %d %v", code, b)
		}
		// Without keys:admin, a key makes no key at all.
		plain := tm.key("a runner", []string{scope.RunsRead, scope.RunsWrite}, "ops")
		if code, b := tm.do("POST", "/v1/keys", plain, map[string]any{"name": "x", "scopes": []string{scope.RunsRead}}); code != 403 || !strings.Contains(errMessage(b), scope.KeysAdmin) {
			t.Errorf("a key without keys:admin creating one = %d %v; want 403", code, b)
		}
	},
	"GET /v1/keys": func(t *testing.T, tm *teams) {
		code, b := tm.do("GET", "/v1/keys", tm.a, nil)
		var names []string
		for _, k := range b["keys"].([]any) {
			names = append(names, k.(map[string]any)["name"].(string))
		}
		if code != 200 || !slices.Contains(names, "team a") || slices.Contains(names, "team b") || slices.Contains(names, "admin") {
			t.Errorf("team A lists keys %q (%d); want its own team's, not team b's nor the deployment's", names, code)
		}
	},
	"DELETE /v1/keys/{id}": func(t *testing.T, tm *teams) {
		keys, _ := tm.store.ListKeys(ctx)
		for _, k := range keys {
			if k.Name != "team b" && k.Name != "admin" {
				continue
			}
			if code, b := tm.do("DELETE", "/v1/keys/"+k.ID, tm.a, nil); code != 404 || errCode(b) != "UZ-KEY-404" {
				t.Errorf("team A revoking %s = %d %v; want 404", k.Name, code, b)
			}
			if got, _ := tm.store.GetKey(ctx, k.ID); got.Revoked {
				t.Fatalf("team A revoked %s", k.Name)
			}
		}
		own := tm.key("a spare", []string{scope.RunsRead}, "ops")
		keys, _ = tm.store.ListKeys(ctx)
		for _, k := range keys {
			if k.Name == "a spare" {
				if code, b := tm.do("DELETE", "/v1/keys/"+k.ID, tm.a, nil); code != 200 {
					t.Errorf("team A revoking its own key = %d %v", code, b)
				}
			}
		}
		if code, _ := tm.do("GET", "/v1/fleets", own, nil); code != 401 {
			t.Errorf("the revoked key answered %d", code)
		}
	},
	"PUT /v1/slack/routes/{channel}": func(t *testing.T, tm *teams) {
		// Routing a channel to team B's fleet, and taking team B's channel.
		for _, tt := range []struct{ channel, fleet string }{{"CNEWONE", "dev"}, {"CDEVTEAM", "ops"}, {"CDEVTEAM", "dev"}} {
			code, b := tm.do("PUT", "/v1/slack/routes/"+tt.channel, tm.a, map[string]any{"fleet": tt.fleet})
			if code != 403 || errCode(b) != "UZ-KEY-403" {
				t.Errorf("team A routing %s to %s = %d %v; want 403", tt.channel, tt.fleet, code, b)
			}
		}
		if r, _, _ := tm.store.SlackRoute(ctx, "CDEVTEAM"); r.Fleet != "dev" {
			t.Fatalf("team B's channel now reaches %q", r.Fleet)
		}
		if _, ok, _ := tm.store.SlackRoute(ctx, "CNEWONE"); ok {
			t.Fatal("a refused route was written")
		}
		// Its own channel, and a channel nobody routed, it may route.
		for _, ch := range []string{"COPSTEAM", "CNEWONE"} {
			if code, b := tm.do("PUT", "/v1/slack/routes/"+ch, tm.a, map[string]any{"fleet": "ops"}); code != 200 {
				t.Errorf("team A routing %s to ops = %d %v", ch, code, b)
			}
		}
	},
}

// TestFleetKeysAcrossFleets runs the cases of the routes that span fleets.
func TestFleetKeysAcrossFleets(t *testing.T) {
	t.Parallel()
	for pattern, c := range crossFleet {
		t.Run(strings.NewReplacer("/", "_", " ", "_").Replace(pattern), func(t *testing.T) {
			t.Parallel()
			c(t, newTeams(t))
		})
	}
}
