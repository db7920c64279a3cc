package main

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentsfleet/agentsfleet/shared/api/apitest"
	afrun "github.com/agentsfleet/agentsfleet/shared/run"
	"github.com/agentsfleet/agentsfleet/shared/store"
)

// TestEgressCommand: `agentsfleet egress RUN` shows the run's log as a
// table (refusals with their rule, secrets by name) and one JSON object a
// line with --output json.
func TestEgressCommand(t *testing.T) {
	t.Parallel()
	s := apitest.New(t, apitest.Options{Script: apitest.PlanScript})
	ctx := context.Background()
	if _, err := s.Store.CreateFleet(ctx, store.NewFleet{Name: "ops", Definition: []byte(`{"name":"ops","instructions":"x","x-agentsfleet":{"tools":["read"]}}`), Hash: "h"}); err != nil {
		t.Fatal(err)
	}
	r, _, err := s.Store.CreateRun(ctx, store.NewRun{Fleet: "ops", Source: store.SourceAPI, Input: []byte("x")})
	if err != nil {
		t.Fatal(err)
	}
	at := time.Now()
	if err := s.Store.RecordEgress(ctx, r.ID, []afrun.Egress{
		{Time: at, Tool: "http_request", Method: "POST", Host: "api.example.com", Port: 443, Status: 201, BytesIn: 12, BytesOut: 34, Secrets: []string{"TOKEN"}},
		{Time: at.Add(time.Millisecond), Tool: "webfetch", Method: "GET", Host: "evil.example.com", Port: 443, Refused: true, Rule: afrun.RuleHostList},
	}); err != nil {
		t.Fatal(err)
	}
	cli := func(args ...string) string {
		t.Helper()
		var out bytes.Buffer
		re := remoteEnv{out: &out, getenv: func(string) string { return "" }, devKey: filepath.Join(t.TempDir(), "api-key")}
		if err := re.run(ctx, append(args, "--api", s.HTTP.URL, "--key", s.Admin)); err != nil {
			t.Fatalf("%v: %v\n%s", args, err, out.String())
		}
		return out.String()
	}
	out := cli("egress", r.ID)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 3 || !strings.Contains(lines[0], "SECRETS") ||
		!strings.Contains(lines[1], "api.example.com") || !strings.Contains(lines[1], "TOKEN") || !strings.Contains(lines[1], "201") ||
		!strings.Contains(lines[2], "evil.example.com") || !strings.Contains(lines[2], afrun.RuleHostList) {
		t.Errorf("egress table:\n%s\nwant a header, the request with its secret's name, the refusal with its rule", out)
	}
	objs := jsonLines(t, cli("egress", r.ID, "--output", "json"))
	if len(objs) != 2 || objs[0]["host"] != "api.example.com" || objs[1]["rule"] != afrun.RuleHostList {
		t.Errorf("egress --output json = %v", objs)
	}
}

// TestApproveCommand: `agentsfleet approve RUN APPROVAL --note` decides a
// call a run waits on and says how the run stands; deciding it again fails
// with the API's code.
func TestApproveCommand(t *testing.T) {
	t.Parallel()
	s := apitest.New(t, apitest.Options{Script: apitest.PlanScript})
	ctx := context.Background()
	if _, err := s.Store.CreateFleet(ctx, store.NewFleet{Name: "ops", Definition: []byte(`{"name":"ops","instructions":"x","x-agentsfleet":{"tools":["read"],"approval":{"tools":["read"]}}}`), Hash: "h"}); err != nil {
		t.Fatal(err)
	}
	r, _, err := s.Store.CreateRun(ctx, store.NewRun{Fleet: "ops", Source: store.SourceAPI, Input: []byte("x")})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Store.AcquireLease(ctx, r.ID, "inv", time.Minute); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Store.Transition(ctx, r.ID, store.StatusRunning, ""); err != nil && !strings.Contains(err.Error(), "cannot move") {
		t.Fatal(err)
	}
	ids := []string{store.NewApprovalID(time.Now()), store.NewApprovalID(time.Now())}
	var wait []store.NewApproval
	for i, id := range ids {
		wait = append(wait, store.NewApproval{ID: id, CallID: fmt.Sprint("c", i), Tool: "read", Arguments: []byte(`{"path":"a"}`), ExpiresAt: time.Now().Add(time.Hour)})
	}
	if _, err := s.Store.CommitStep(ctx, r.ID, store.Step{Holder: "inv", Number: 1, WhileRunning: true, Wait: wait}); err != nil {
		t.Fatal(err)
	}
	cli := func(args ...string) (string, error) {
		var out bytes.Buffer
		re := remoteEnv{out: &out, getenv: func(string) string { return "" }, devKey: filepath.Join(t.TempDir(), "api-key")}
		err := re.run(ctx, append(args, "--api", s.HTTP.URL, "--key", s.Admin))
		return out.String(), err
	}
	out, err := cli("approve", r.ID, ids[0], "--note", "looks right")
	if err != nil || !strings.Contains(out, "approval "+ids[0]+": approve by key:") || !strings.Contains(out, "is waiting") {
		t.Fatalf("approve: %q, %v; want the approval and the run still waiting on the other", out, err)
	}
	if a, _ := s.Store.GetApproval(ctx, r.ID, ids[0]); a.Note != "looks right" {
		t.Errorf("the note kept is %q", a.Note)
	}
	if _, err := cli("deny", r.ID, ids[0]); err == nil || !strings.Contains(err.Error(), "UZ-APR-409") {
		t.Fatalf("deciding again: %v, want UZ-APR-409", err)
	}
	if _, err := cli("approve", r.ID); err == nil {
		t.Fatal("approve without an approval id was accepted")
	}
}
