package api_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/agentsfleet/agentsfleet/shared/api/apitest"
	"github.com/agentsfleet/agentsfleet/shared/scope"
)

// TestApprovalThroughTheAPI: a run whose call waits for a person lists it
// in GET /v1/runs/{id}'s pending_approvals; deciding it takes runs:approve
// and a decision that is approve or deny; the approval resumes the run in
// a new invocation, which ends it; a second decision is refused.
func TestApprovalThroughTheAPI(t *testing.T) {
	t.Parallel()
	s := apitest.New(t, apitest.Options{Script: `
[[turn]]
[[turn.tool_call]]
name = "update_plan"
arguments = { plan = [{ step = "ship", status = "in_progress" }] }
[[turn]]
text = "after: {{last_output}}"
`})
	e := &env{t: t, store: s.Store, local: s.Local, srv: s, admin: s.Admin}
	e.apply(`name = "ops"
instructions = "Ship it."
[x-agentsfleet]
tools = ["update_plan"]
[x-agentsfleet.approval]
tools = ["update_plan"]
expire_hours = 2
`)
	_, b := e.do("POST", "/v1/fleets/ops/runs", e.admin, map[string]any{"input": "go"})
	id := b["run_id"].(string)
	var pending []any
	wait(t, "the run to wait for a person", func() bool {
		_, b = e.do("GET", "/v1/runs/"+id, e.admin, nil)
		pending, _ = b["pending_approvals"].([]any)
		return b["status"] == "waiting" && len(pending) == 1
	})
	ap := pending[0].(map[string]any)
	apr, _ := ap["approval_id"].(string)
	if ap["tool"] != "update_plan" || !strings.Contains(jsonText(ap["arguments"]), "ship") || ap["expires_at"] == nil || !strings.HasPrefix(apr, "apr_") {
		t.Fatalf("pending approval %v", ap)
	}
	path := "/v1/runs/" + id + "/approvals/" + apr
	reader := e.key("reader", []string{scope.RunsRead, scope.RunsWrite})
	for _, tt := range []struct {
		key, path string
		body      any
		want      int
	}{
		{reader, path, map[string]any{"decision": "approve"}, 403},
		{"", path, map[string]any{"decision": "approve"}, 401},
		{e.admin, path, map[string]any{"decision": "yes"}, 400},
		{e.admin, path, map[string]any{"decision": "approve", "extra": 1}, 400},
		{e.admin, path, map[string]any{"decision": "approve", "note": strings.Repeat("n", 2001)}, 400},
		{e.admin, "/v1/runs/" + id + "/approvals/apr_nope", map[string]any{"decision": "approve"}, 404},
	} {
		if code, b := e.do("POST", tt.path, tt.key, tt.body); code != tt.want {
			t.Errorf("POST %s %v = %d %v, want %d", tt.path, tt.body, code, b, tt.want)
		}
	}
	approver := e.key("approver", []string{scope.RunsApprove})
	code, b := e.do("POST", path, approver, map[string]any{"decision": "approve", "note": "ship it"})
	if code != 200 || b["decision"] != "approve" || b["run_status"] != "running" || !strings.HasPrefix(b["by"].(string), "key:") || b["note"] != "ship it" {
		t.Fatalf("approve = %d %v", code, b)
	}
	end := e.waitRun(id)
	if end["status"] != "succeeded" || !strings.Contains(end["answer"].(string), "after:") || len(end["pending_approvals"].([]any)) != 0 {
		t.Fatalf("the run after its approval: %v", end)
	}
	if code, b := e.do("POST", path, approver, map[string]any{"decision": "deny"}); code != 409 || errCode(b) != "UZ-APR-409" {
		t.Errorf("deciding again = %d %v, want 409 UZ-APR-409", code, b)
	}
}

func wait(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); !cond(); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

func jsonText(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
