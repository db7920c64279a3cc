package improve_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentsfleet/agentsfleet/shared/api/apitest"
	"github.com/agentsfleet/agentsfleet/shared/api/wire"
	"github.com/agentsfleet/agentsfleet/shared/awstest"
	"github.com/agentsfleet/agentsfleet/shared/model"
	"github.com/agentsfleet/agentsfleet/shared/model/scripted"
	"github.com/agentsfleet/agentsfleet/shared/run"
	"github.com/agentsfleet/agentsfleet/shared/runner"
	"github.com/agentsfleet/agentsfleet/shared/scope"
	"github.com/agentsfleet/agentsfleet/shared/store"
)

func TestMain(m *testing.M) { awstest.Main(m) }

var ctx = context.Background()

// opsV1 allows update_plan and list_agents.
const opsV1 = `name = "ops"
instructions = "Keep things running."
[x-agentsfleet]
tools = ["list_agents", "update_plan"]
`

// runScript plans twice, then answers: the second plan is the call made
// while a chat revokes update_plan.
const runScript = `[[turn]]
[[turn.tool_call]]
name = "update_plan"
arguments = { plan = [{ step = "first", status = "in_progress" }] }

[[turn]]
[[turn.tool_call]]
name = "update_plan"
arguments = { plan = [{ step = "second", status = "completed" }] }

[[turn]]
text = "done"
`

// revokeChat reads the Definition, proposes one that does not validate (an
// unknown tool), and only after seeing that error proposes the removal of
// update_plan; then answers.
const revokeChat = `[[turn]]
[[turn.tool_call]]
name = "definition_get"

[[turn]]
[[turn.tool_call]]
name = "propose_definition"
[turn.tool_call.arguments]
summary = "drop update_plan"
definition = '''
name = "ops"
instructions = "Keep things running."
[x-agentsfleet]
tools = ["list_agents", "no_such_tool"]
'''

[[turn]]
text = "I never saw the validation error."

[[turn.alternative]]
when_last_error = true

[[turn.alternative.tool_call]]
name = "propose_definition"

[turn.alternative.tool_call.arguments]
summary = "Stop letting it plan: update_plan is removed."
definition = '''
name = "ops"
instructions = "Keep things running."
[x-agentsfleet]
tools = ["list_agents"]
'''

[[turn]]
text = "Proposed: update_plan is removed."
`

// gate holds the runs whose input is "hold" before their second model
// call until release is closed, and says when one is held.
type gate struct {
	model.Model
	held    chan struct{}
	release chan struct{}
	once    sync.Once
}

func (g *gate) Converse(ctx context.Context, req model.Request) (model.Response, error) {
	assistant := 0
	for _, m := range req.Messages {
		if m.Role == model.Assistant {
			assistant++
		}
	}
	if assistant == 1 && len(req.Messages) > 0 && req.Messages[0].Text() == "hold" {
		g.once.Do(func() { close(g.held) })
		select {
		case <-g.release:
		case <-ctx.Done():
			return model.Response{}, ctx.Err()
		}
	}
	return g.Model.Converse(ctx, req)
}

type env struct {
	t   *testing.T
	srv *apitest.Server
}

func newEnv(t *testing.T, chat string, runModel func(*runner.Config)) *env {
	t.Helper()
	s := apitest.New(t, apitest.Options{ChatScript: chat, Runner: runModel})
	e := &env{t: t, srv: s}
	if code, body := e.do("PUT", "/v1/fleets/ops", s.Admin, opsV1); code != 200 {
		t.Fatalf("PUT ops = %d %v", code, body)
	}
	return e
}

func (e *env) do(method, path, key string, body any) (int, map[string]any) {
	e.t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	default:
		j, _ := json.Marshal(b)
		rd = bytes.NewReader(j)
	}
	req, _ := http.NewRequest(method, e.srv.URL+path, rd)
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var out map[string]any
	if len(raw) > 0 && json.Unmarshal(raw, &out) != nil {
		e.t.Fatalf("%s %s = %d, not JSON: %s", method, path, resp.StatusCode, raw)
	}
	return resp.StatusCode, out
}

func code(body map[string]any) string {
	e, _ := body["error"].(map[string]any)
	c, _ := e["code"].(string)
	return c
}

// key makes a key with scopes serving fleets (none: all).
func (e *env) key(scopes []string, fleets ...string) (store.Key, string) {
	e.t.Helper()
	k, secret, err := e.srv.Store.CreateKey(ctx, "k", scopes, fleets...)
	if err != nil {
		e.t.Fatal(err)
	}
	return k, secret
}

// chat starts a chat with message and waits for its agent's answer.
func (e *env) chat(key, message string) (string, wire.Improvement) {
	e.t.Helper()
	status, body := e.do("POST", "/v1/fleets/ops/improvements", key, map[string]string{"message": message})
	id, _ := body["improvement_id"].(string)
	if status != http.StatusCreated || id == "" || body["status"] != "thinking" {
		e.t.Fatalf("POST improvements = %d %v, want 201 thinking with an improvement_id", status, body)
	}
	return id, e.settled(id)
}

// settled waits until chat id is not thinking, and returns it.
func (e *env) settled(id string) wire.Improvement {
	e.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		req, _ := http.NewRequest("GET", e.srv.URL+"/v1/improvements/"+id, nil)
		req.Header.Set("Authorization", "Bearer "+e.srv.Admin)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			e.t.Fatal(err)
		}
		var v wire.Improvement
		json.NewDecoder(resp.Body).Decode(&v)
		resp.Body.Close()
		if v.Status != "thinking" {
			return v
		}
		time.Sleep(20 * time.Millisecond)
	}
	e.t.Fatalf("chat %s still thinking after 30 s", id)
	return wire.Improvement{}
}

// ended waits for run id to end and returns its events.
func (e *env) ended(id string) []run.Event {
	e.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		r, err := e.srv.Store.GetRun(ctx, id)
		if err != nil {
			e.t.Fatal(err)
		}
		if r.Status.Terminal() {
			evs, _, err := e.srv.Store.ListEvents(ctx, id, 1, 100)
			if err != nil {
				e.t.Fatal(err)
			}
			out := make([]run.Event, len(evs))
			for i, ev := range evs {
				out[i] = run.Event{Seq: ev.Seq, Type: ev.Type, Data: ev.Data}
			}
			return out
		}
		time.Sleep(20 * time.Millisecond)
	}
	e.t.Fatalf("run %s has not ended after 30 s", id)
	return nil
}

func (e *env) start(input string) string {
	e.t.Helper()
	status, body := e.do("POST", "/v1/fleets/ops/runs", e.srv.Admin, map[string]string{"input": input})
	id, _ := body["run_id"].(string)
	if status != http.StatusAccepted || id == "" {
		e.t.Fatalf("start run = %d %v", status, body)
	}
	return id
}

// planResults are the is_error flags of a run's update_plan results.
func planResults(t *testing.T, evs []run.Event) []bool {
	t.Helper()
	var out []bool
	for _, ev := range evs {
		if ev.Type != run.EventToolResult {
			continue
		}
		var r struct {
			Name    string `json:"name"`
			IsError bool   `json:"is_error"`
		}
		json.Unmarshal(ev.Data, &r)
		if r.Name == "update_plan" {
			out = append(out, r.IsError)
		}
	}
	return out
}

// The spec's revocation, through the chat: a run of revision 1 still
// working when the chat's removal of update_plan is applied keeps the
// tool; the next run is refused it. The chat's first proposal does not
// validate: its agent sees why and proposes again, and the person only
// ever sees the valid one.
func TestRevokeAToolThroughTheChat(t *testing.T) {
	t.Parallel()
	g := &gate{held: make(chan struct{}), release: make(chan struct{})}
	e := newEnv(t, revokeChat, func(c *runner.Config) {
		m, err := scripted.Parse([]byte(runScript), "run.toml")
		if err != nil {
			t.Fatal(err)
		}
		g.Model = m
		c.Model = g
	})
	old := e.start("hold")
	select {
	case <-g.held:
	case <-time.After(30 * time.Second):
		t.Fatal("the run of revision 1 never reached its second model call")
	}

	id, v := e.chat(e.srv.Admin, "stop letting it plan")
	if v.Status != "proposed" || v.Proposal == nil {
		t.Fatalf("chat = %+v, want proposed", v)
	}
	if v.Proposal.FromRevision != 1 || !strings.Contains(v.Proposal.Diff, `-  "update_plan",`) ||
		strings.Contains(v.Proposal.Diff+v.Proposal.Definition, "no_such_tool") {
		t.Fatalf("proposal = %+v, want the removal of update_plan from revision 1 and nothing of the invalid one", v.Proposal)
	}
	last := v.Messages[len(v.Messages)-1]
	if len(v.Messages) != 2 || v.Messages[0].Role != "person" || last.Role != "agent" || last.Text != "Proposed: update_plan is removed." {
		t.Fatalf("messages = %+v, want the person's and the agent's answer after it saw the validation error", v.Messages)
	}
	status, body := e.do("POST", "/v1/improvements/"+id+"/apply", e.srv.Admin, nil)
	if status != 200 || body["revision"] != 2.0 {
		t.Fatalf("apply = %d %v, want 200 revision 2", status, body)
	}

	close(g.release)
	if got := planResults(t, e.ended(old)); len(got) != 2 || got[0] || got[1] {
		t.Fatalf("the run of revision 1: update_plan results failed = %v, want two that succeeded", got)
	}
	if got := planResults(t, e.ended(e.start("go"))); len(got) != 2 || !got[0] || !got[1] {
		t.Fatalf("the next run: update_plan results failed = %v, want both calls refused", got)
	}

	admin, err := e.srv.Store.Authenticate(ctx, e.srv.Admin)
	if err != nil {
		t.Fatal(err)
	}
	status, body = e.do("GET", "/v1/fleets/ops/revisions?from=1&to=2", e.srv.Admin, nil)
	revs, _ := body["revisions"].([]any)
	if status != 200 || len(revs) != 2 {
		t.Fatalf("GET revisions = %d %v", status, body)
	}
	newest := revs[0].(map[string]any)
	if newest["revision"] != 2.0 || newest["improvement_id"] != id || newest["by"] != admin.ID || newest["via"] != "api" {
		t.Fatalf("revision 2 = %v, want it from chat %s by %s via api", newest, id, admin.ID)
	}
	d, _ := body["diff"].(map[string]any)
	if diff, _ := d["diff"].(string); !strings.Contains(diff, `-  "update_plan",`) {
		t.Fatalf("diff 1..2 = %v, want the removal", d)
	}
}

// proposeBash proposes allowing bash, which needs tools:execute.
const proposeBash = `[[turn]]
[[turn.tool_call]]
name = "propose_definition"
[turn.tool_call.arguments]
summary = "let it run commands"
definition = '''
name = "ops"
instructions = "Keep things running."
[x-agentsfleet]
tools = ["bash", "list_agents", "update_plan"]
'''

[[turn]]
text = "Proposed."
`

// A proposal made against revision 1 does not apply once the fleet is at
// revision 2: 409 UZ-IMP-409, nothing merged, the chat stale.
func TestStaleProposal(t *testing.T) {
	t.Parallel()
	e := newEnv(t, proposeBash, nil)
	id, v := e.chat(e.srv.Admin, "let it run commands")
	if v.Status != "proposed" {
		t.Fatalf("chat = %+v, want proposed", v)
	}
	changed := strings.Replace(opsV1, "Keep things running.", "Keep things running, quietly.", 1)
	if status, body := e.do("PUT", "/v1/fleets/ops", e.srv.Admin, changed); status != 200 || body["revision"] != 2.0 {
		t.Fatalf("PUT = %d %v", status, body)
	}
	if v := e.settled(id); v.Status != "stale" {
		t.Fatalf("GET chat = %s, want stale", v.Status)
	}
	status, body := e.do("POST", "/v1/improvements/"+id+"/apply", e.srv.Admin, nil)
	if status != http.StatusConflict || code(body) != "UZ-IMP-409" {
		t.Fatalf("apply = %d %v, want 409 UZ-IMP-409", status, body)
	}
	f, _ := e.srv.Store.GetFleet(ctx, "ops")
	rev, _ := e.srv.Store.CurrentRevision(ctx, "ops")
	if f.Revision != 2 || bytes.Contains(rev.Definition, []byte("bash")) {
		t.Fatalf("fleet at %d with %s, want revision 2 without bash", f.Revision, rev.Definition)
	}
}

// Applying needs fleets:write and the scopes of the new Definition, and a
// key serving the fleet; the chat's routes need runs:read too.
func TestApplyNeedsTheRight(t *testing.T) {
	t.Parallel()
	e := newEnv(t, proposeBash, nil)
	id, _ := e.chat(e.srv.Admin, "let it run commands")
	_, noExecute := e.key([]string{scope.FleetsWrite, scope.FleetsRead, scope.RunsRead, "tools:control", "tools:agents"})
	_, readOnly := e.key([]string{scope.FleetsRead, scope.RunsRead})
	_, otherFleet := e.key(scope.Names(), "other")
	_, noRuns := e.key([]string{scope.FleetsWrite, scope.FleetsRead})
	for _, tc := range []struct {
		name, method, path, key string
		status                  int
		code                    string
	}{
		{"no tools:execute", "POST", "/apply", noExecute, 403, "UZ-KEY-403"},
		{"no fleets:write", "POST", "/apply", readOnly, 403, "UZ-KEY-403"},
		{"another fleet's key applies", "POST", "/apply", otherFleet, 404, "UZ-IMP-404"},
		{"another fleet's key reads", "GET", "", otherFleet, 404, "UZ-IMP-404"},
		{"another fleet's key discards", "POST", "/discard", otherFleet, 404, "UZ-IMP-404"},
		{"no runs:read reads", "GET", "", noRuns, 403, "UZ-KEY-403"},
		{"no key", "POST", "/apply", "", 401, "UZ-KEY-401"},
	} {
		status, body := e.do(tc.method, "/v1/improvements/"+id+tc.path, tc.key, nil)
		if status != tc.status || code(body) != tc.code {
			t.Errorf("%s: %d %v, want %d %s", tc.name, status, body, tc.status, tc.code)
		}
	}
	if f, _ := e.srv.Store.GetFleet(ctx, "ops"); f.Revision != 1 {
		t.Fatalf("fleet at revision %d after refused applies, want 1", f.Revision)
	}
	status, body := e.do("POST", "/v1/fleets/ops/improvements", noRuns, map[string]string{"message": "x"})
	if status != 403 || code(body) != "UZ-KEY-403" {
		t.Fatalf("start a chat without runs:read = %d %v, want 403", status, body)
	}
	status, body = e.do("POST", "/v1/fleets/other/improvements", e.srv.Admin, map[string]string{"message": "x"})
	if status != 404 || code(body) != "UZ-AGT-404" {
		t.Fatalf("a chat about no fleet = %d %v, want 404 UZ-AGT-404", status, body)
	}
	// The key with every scope the Definition needs applies it, once.
	if status, body := e.do("POST", "/v1/improvements/"+id+"/apply", e.srv.Admin, nil); status != 200 {
		t.Fatalf("apply = %d %v", status, body)
	}
	status, body = e.do("POST", "/v1/improvements/"+id+"/apply", e.srv.Admin, nil)
	if status != http.StatusGone || code(body) != "UZ-IMP-410" {
		t.Fatalf("apply again = %d %v, want 410 UZ-IMP-410", status, body)
	}
}

// A later message goes on with the same conversation; while the agent
// thinks nobody else posts; a discarded chat takes no more.
func TestMessagesAndDiscard(t *testing.T) {
	t.Parallel()
	e := newEnv(t, "[[turn]]\ntext = \"first\"\n[[turn]]\ntext = \"second: {{input}}\"\n", nil)
	id, v := e.chat(e.srv.Admin, "hello")
	if v.Status != "open" || v.Proposal != nil || v.Messages[1].Text != "first" {
		t.Fatalf("chat = %+v, want open with the agent's first answer", v)
	}
	if status, body := e.do("POST", "/v1/improvements/"+id+"/messages", e.srv.Admin, map[string]string{"message": ""}); status != 400 {
		t.Fatalf("an empty message = %d %v, want 400", status, body)
	}
	if status, body := e.do("POST", "/v1/improvements/"+id+"/messages", e.srv.Admin, map[string]string{"message": "again"}); status != 202 {
		t.Fatalf("message = %d %v, want 202", status, body)
	}
	v = e.settled(id)
	if len(v.Messages) != 4 || v.Messages[3].Text != "second: hello" {
		t.Fatalf("messages = %+v, want 4 ending with the second answer", v.Messages)
	}
	if status, body := e.do("POST", "/v1/improvements/"+id+"/discard", e.srv.Admin, nil); status != 200 || body["status"] != "discarded" {
		t.Fatalf("discard = %d %v", status, body)
	}
	status, body := e.do("POST", "/v1/improvements/"+id+"/messages", e.srv.Admin, map[string]string{"message": "more"})
	if status != http.StatusGone || code(body) != "UZ-IMP-410" {
		t.Fatalf("message after discard = %d %v, want 410", status, body)
	}
	if status, body := e.do("POST", "/v1/improvements/"+id+"/apply", e.srv.Admin, nil); status != http.StatusGone {
		t.Fatalf("apply after discard = %d %v, want 410", status, body)
	}
}

// A restore makes a new revision with the old Definition, recorded as
// such; restoring needs the restored Definition's scopes.
func TestRestoreRevision(t *testing.T) {
	t.Parallel()
	e := newEnv(t, "", nil)
	v2 := strings.Replace(opsV1, `"list_agents", "update_plan"`, `"list_agents"`, 1)
	if status, body := e.do("PUT", "/v1/fleets/ops", e.srv.Admin, v2); status != 200 {
		t.Fatalf("PUT = %d %v", status, body)
	}
	_, weak := e.key([]string{scope.FleetsWrite, "tools:agents"})
	status, body := e.do("POST", "/v1/fleets/ops/revisions/1/restore", weak, nil)
	if status != 403 || code(body) != "UZ-KEY-403" {
		t.Fatalf("restore without tools:control = %d %v, want 403", status, body)
	}
	status, body = e.do("POST", "/v1/fleets/ops/revisions/1/restore", e.srv.Admin, nil)
	if status != 200 || body["revision"] != 3.0 {
		t.Fatalf("restore = %d %v, want revision 3", status, body)
	}
	r3, _ := e.srv.Store.GetRevision(ctx, "ops", 3)
	r1, _ := e.srv.Store.GetRevision(ctx, "ops", 1)
	if r3.Hash != r1.Hash || r3.Origin.Restored != 1 {
		t.Fatalf("revision 3 = %+v, want revision 1's Definition, restored from 1", r3)
	}
	if status, body := e.do("GET", "/v1/fleets/ops/revisions?from=1&to=3", e.srv.Admin, nil); status != 200 || body["diff"].(map[string]any)["diff"] != "" {
		t.Fatalf("diff 1..3 = %d %v, want empty", status, body)
	}
	if status, body := e.do("GET", "/v1/fleets/ops/revisions?from=1&to=9", e.srv.Admin, nil); status != 404 || code(body) != "UZ-DEF-404" {
		t.Fatalf("diff to a missing revision = %d %v, want 404", status, body)
	}
	if status, body := e.do("GET", "/v1/fleets/ops/revisions?from=x&to=1", e.srv.Admin, nil); status != 400 {
		t.Fatalf("diff from x = %d %v, want 400", status, body)
	}
}

// A turn whose model fails ends the chat's turn failed, saying why, and
// the chat takes the next message.
func TestFailedTurn(t *testing.T) {
	t.Parallel()
	e := newEnv(t, "[[turn]]\ntext = \"first\"\n", nil)
	id, _ := e.chat(e.srv.Admin, "hello")
	if status, body := e.do("POST", "/v1/improvements/"+id+"/messages", e.srv.Admin, map[string]string{"message": "again"}); status != 202 {
		t.Fatalf("message = %d %v", status, body)
	}
	v := e.settled(id)
	if v.Status != "failed" || !strings.Contains(v.Error, "the chat's model failed") || len(v.Messages) != 3 {
		t.Fatalf("chat = %+v, want failed saying the model failed, the message kept", v)
	}
	if status, body := e.do("POST", "/v1/improvements/"+id+"/messages", e.srv.Admin, map[string]string{"message": "once more"}); status != 202 {
		t.Fatalf("a message after a failed turn = %d %v, want 202", status, body)
	}
}
