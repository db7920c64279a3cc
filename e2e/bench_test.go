package e2e

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// BenchmarkDeployedStart measures a run started over HTTP and followed to
// its end, through the deployment on one machine (every function its own
// bootstrap, a Lambda invocation between them, the run's sandbox a moto
// ECS task) against the same start in-process (agentsfleet dev: the same
// handlers called in one process), both against the same local model
// fake: the median of starts of a run that answers at once, and, through
// the deployment, the runner invocations a run with one child takes.
func BenchmarkDeployedStart(b *testing.B) {
	const runs = 5
	quick := conversation{marker: "bench: answer at once", next: func(int, []string) turn { return turn{text: "done"} }}
	withChild := conversation{marker: "bench: one child", next: func(step int, results []string) turn {
		switch step {
		case 0:
			return turn{calls: []call{{"spawn_agent", map[string]any{"task": "bench: the child's task", "tools": []string{"bash"}}}}}
		case 1:
			return turn{calls: []call{{"wait_agent", map[string]any{"child_id": firstMatch(childRE, results), "timeout_seconds": 60}}}}
		}
		if strings.Contains(strings.ToLower(strings.Join(results, "")), "still working") {
			return turn{calls: []call{{"wait_agent", map[string]any{"child_id": firstMatch(childRE, results), "timeout_seconds": 60}}}}
		}
		return turn{text: "done"}
	}}
	childTask := conversation{marker: "bench: the child's task", next: func(int, []string) turn { return turn{text: "child done"} }}
	const def = `name = "bench"
instructions = "Answer."
[tools]
builtin = ["bash"]
[x-agentsfleet]
tools = ["spawn_agent", "wait_agent"]
`
	outside := httptest.NewServer(http.NotFoundHandler())
	defer outside.Close()

	// One start, followed to its end: POST …/runs, then GET /v1/runs/{id}
	// until it ends.
	measure := func(base, key, input string) time.Duration {
		body, _ := json.Marshal(map[string]any{"input": input})
		began := time.Now()
		req, _ := http.NewRequest("POST", base+"/v1/fleets/bench/runs", strings.NewReader(string(body)))
		req.Header.Set("Authorization", "Bearer "+key)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		var started map[string]any
		json.NewDecoder(resp.Body).Decode(&started)
		resp.Body.Close()
		id, _ := started["run_id"].(string)
		if id == "" {
			b.Fatalf("the start was answered %d %v", resp.StatusCode, started)
		}
		for time.Since(began) < time.Minute {
			req, _ := http.NewRequest("GET", base+"/v1/runs/"+id, nil)
			req.Header.Set("Authorization", "Bearer "+key)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				b.Fatal(err)
			}
			var r map[string]any
			json.NewDecoder(resp.Body).Decode(&r)
			resp.Body.Close()
			switch r["status"] {
			case "succeeded":
				return time.Since(began)
			case "failed", "cancelled":
				b.Fatalf("the run ended %v", r)
			}
			time.Sleep(5 * time.Millisecond)
		}
		b.Fatal("the run did not end within a minute")
		return 0
	}
	median := func(ds []time.Duration) time.Duration { slices.Sort(ds); return ds[len(ds)/2] }

	dp := deploy(b, outside, nil, quick, withChild, childTask)
	dp.call(b, "PUT", "/v1/fleets/bench", "application/toml", []byte(def), http.StatusOK)
	measure(dp.URL(), dp.key, "bench: answer at once") // the containers' cold starts
	var deployedTimes []time.Duration
	for range runs {
		deployedTimes = append(deployedTimes, measure(dp.URL(), dp.key, "bench: answer at once"))
	}
	before := dp.Invocations("runner")
	measure(dp.URL(), dp.key, "bench: one child")
	perChildRun := dp.Invocations("runner") - before
	dp.Close() // before dev starts: its stop checks that no process of the test's is left

	model, slackAPI := newModelFake(b, quick), newSlackFake(b, botToken)
	work := filepath.Join(b.TempDir(), "work")
	os.MkdirAll(work, 0o755)
	dev := startDev(b, work, filepath.Join(b.TempDir(), "state"), map[string]string{
		"AGENTSFLEET_MODEL_PROVIDER": "openai", "OPENAI_BASE_URL": model.URL + "/v1", "AGENTSFLEET_MODEL": "e2e-model",
		"AGENTSFLEET_SLACK_SIGNING_SECRET": signing, "AGENTSFLEET_SLACK_BOT_TOKEN": botToken, "AGENTSFLEET_SLACK_API_URL": slackAPI.URL + "/api/"})
	defer dev.stop(b)
	req, _ := http.NewRequest("PUT", dev.base+"/v1/fleets/bench", strings.NewReader(def))
	req.Header.Set("Authorization", "Bearer "+dev.key)
	req.Header.Set("Content-Type", "application/toml")
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != http.StatusOK {
		b.Fatalf("apply the bench fleet to dev: %v %v", resp, err)
	}
	measure(dev.base, dev.key, "bench: answer at once")
	var localTimes []time.Duration
	for range runs {
		localTimes = append(localTimes, measure(dev.base, dev.key, "bench: answer at once"))
	}

	dm, lm := median(deployedTimes), median(localTimes)
	b.ReportMetric(float64(dm.Microseconds())/1000, "deployed-ms")
	b.ReportMetric(float64(lm.Microseconds())/1000, "in-process-ms")
	b.ReportMetric(float64(dm)/float64(lm), "deployed/in-process")
	b.ReportMetric(float64(perChildRun), "runner-invocations/run-with-a-child")
	b.Logf("a run started over HTTP and followed to its end: deployed %.1f ms, in-process %.1f ms (%.2f×); a run with one child took %d runner invocations",
		float64(dm.Microseconds())/1000, float64(lm.Microseconds())/1000, float64(dm)/float64(lm), perChildRun)
}
