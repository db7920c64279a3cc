package api_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/agentsfleet/agentsfleet/shared/run"
	"github.com/agentsfleet/agentsfleet/shared/scope"
)

// TestRunEgress: GET /v1/runs/{id}/egress pages through the run's log in
// order, GET /v1/runs/{id} counts it; a key without runs:read, a key of
// another fleet, an unknown run and another run's cursor are refused.
func TestRunEgress(t *testing.T) {
	t.Parallel()
	tm := newTeams(t)
	id := tm.runs["ops"]
	at := time.Now().UTC()
	var entries []run.Egress
	for i := range 5 {
		entries = append(entries, run.Egress{Time: at.Add(time.Duration(i) * time.Millisecond), Tool: "http_request", Method: "GET",
			Host: fmt.Sprintf("h%d.example", i), Port: 443, Status: 200, BytesIn: 10, BytesOut: 1, Secrets: []string{"TOKEN"}})
	}
	entries[4] = run.Egress{Time: entries[4].Time, Tool: "webfetch", Method: "GET", Host: "h4.example", Port: 443, Refused: true, Rule: run.RuleHostList}
	if err := tm.store.RecordEgress(ctx, id, entries); err != nil {
		t.Fatal(err)
	}

	var hosts []any
	cursor := ""
	for pages := 0; ; pages++ {
		path := "/v1/runs/" + id + "/egress?limit=2"
		if cursor != "" {
			path += "&cursor=" + cursor
		}
		code, b := tm.do("GET", path, tm.a, nil)
		if code != 200 {
			t.Fatalf("GET %s = %d %v", path, code, b)
		}
		for _, e := range b["egress"].([]any) {
			m := e.(map[string]any)
			for _, k := range []string{"time", "tool", "method", "host", "port", "status", "bytes_in", "bytes_out", "duration_ms", "secrets", "refused", "rule"} {
				if _, ok := m[k]; !ok {
					t.Errorf("entry %v lacks %s", m, k)
				}
			}
			hosts = append(hosts, m["host"])
		}
		cursor, _ = b["next"].(string)
		if pages == 0 {
			if code, b := tm.do("GET", "/v1/runs/"+tm.runs["dev"]+"/egress?cursor="+cursor, tm.admin, nil); code != 400 {
				t.Errorf("another run's log with this run's cursor = %d %v, want 400", code, b)
			}
		}
		if cursor == "" || pages > 5 {
			break
		}
	}
	if fmt.Sprint(hosts) != "[h0.example h1.example h2.example h3.example h4.example]" {
		t.Errorf("hosts = %v, want the five in order", hosts)
	}

	code, b := tm.do("GET", "/v1/runs/"+id, tm.a, nil)
	sum, _ := b["egress"].(map[string]any)
	if code != 200 || sum["requests"] != 5.0 || sum["refused"] != 1.0 || sum["bytes_in"] != 40.0 || sum["bytes_out"] != 4.0 {
		t.Errorf("GET run = %d, egress %v; want 5 requests, 1 refused, 40 in, 4 out", code, sum)
	}

	noRead := tm.key("writer", []string{scope.RunsWrite}, "ops")
	for _, tc := range []struct {
		name, key, id string
		code          int
	}{
		{"without runs:read", noRead, id, 403},
		{"a key of another fleet", tm.b, id, 404},
		{"an unknown run", tm.admin, "run_00000000000000000000000000", 404},
	} {
		if code, b := tm.do("GET", "/v1/runs/"+tc.id+"/egress", tc.key, nil); code != tc.code || b["egress"] != nil {
			t.Errorf("%s: GET egress = %d %v, want %d and no entries", tc.name, code, b, tc.code)
		}
	}
}
