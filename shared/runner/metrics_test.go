//go:build linux

package runner_test

import (
	"bytes"
	"encoding/json"
	"strings"
	"sync"
	"testing"

	"github.com/agentsfleet/agentsfleet/shared/metrics"
	"github.com/agentsfleet/agentsfleet/shared/runner"
)

// lockedBuffer is a log the runner's goroutines write to at once.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

// docs are the log's EMF documents, each as its members.
func (l *lockedBuffer) docs(t *testing.T) []map[string]any {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []map[string]any
	for _, line := range strings.Split(strings.TrimSuffix(l.b.String(), "\n"), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("a line of the log is not one JSON document: %q", line)
		}
		out = append(out, m)
	}
	return out
}

const metricsScript = `
[[turn]]
[[turn.tool_call]]
name = "bash"
arguments = { command = "true" }
[[turn.tool_call]]
name = "read"
arguments = { path = "missing.txt" }
[[turn]]
text = "Done."
`

// TestRunWritesItsMetrics: a run writes, as EMF documents, its start by
// source, each tool call with its latency and whether it failed, each model
// call with its tokens, its sandbox claim and its end by status, each
// naming the run.
func TestRunWritesItsMetrics(t *testing.T) {
	t.Parallel()
	var log lockedBuffer
	e := newEnv(t, metricsScript, func(c *runner.Config) { c.Metrics = metrics.New(&log) })
	d := e.fleet(definition("metered", "bash", "read"))
	id := e.start(d, "go")
	if err := e.runner.Run(ctx, id); err != nil {
		t.Fatal(err)
	}
	if run, _ := e.ended(id); run.Status != "succeeded" {
		t.Fatalf("run %s", run.Status)
	}
	type key struct{ metric, dim string }
	seen := map[key]float64{}
	for _, m := range log.docs(t) {
		if m["run_id"] != id || m["fleet"] != "metered" {
			t.Errorf("a document names run %v of %v: %v", m["run_id"], m["fleet"], m)
		}
		aws := m["_aws"].(map[string]any)
		directive := aws["CloudWatchMetrics"].([]any)[0].(map[string]any)
		if directive["Namespace"] != "agentsfleet" {
			t.Errorf("namespace %v", directive["Namespace"])
		}
		dims := directive["Dimensions"].([]any)[0].([]any)
		if len(dims) != 1 {
			t.Fatalf("dimensions %v", dims)
		}
		dim := dims[0].(string) + "=" + m[dims[0].(string)].(string)
		for _, def := range directive["Metrics"].([]any) {
			name := def.(map[string]any)["Name"].(string)
			seen[key{name, dim}] += m[name].(float64)
		}
	}
	for k, want := range map[key]float64{
		{metrics.RunsStarted, "Source=api"}:     1,
		{metrics.RunsEnded, "Status=succeeded"}: 1,
		{metrics.ToolCalls, "Tool=bash"}:        1,
		{metrics.ToolErrors, "Tool=bash"}:       0,
		{metrics.ToolCalls, "Tool=read"}:        1,
		{metrics.ToolErrors, "Tool=read"}:       1, // no such file
		{metrics.ModelCalls, "Model=scripted"}:  2,
		{metrics.SandboxClaims, "Claim=cold"}:   1, // a launcher without a pool
	} {
		if got, ok := seen[k]; !ok || got != want {
			t.Errorf("%s{%s} = %v (recorded %v), want %v", k.metric, k.dim, got, ok, want)
		}
	}
	if seen[key{metrics.ModelInputTokens, "Model=scripted"}] == 0 || seen[key{metrics.ModelOutputTokens, "Model=scripted"}] == 0 {
		t.Errorf("no tokens recorded: %v", seen)
	}
	if _, ok := seen[key{metrics.ToolLatency, "Tool=bash"}]; !ok {
		t.Errorf("no latency recorded for bash: %v", seen)
	}
	// A second invocation of the ended run counts nothing again.
	before := len(log.docs(t))
	if err := e.runner.Run(ctx, id); err != nil || len(log.docs(t)) != before {
		t.Errorf("a second invocation: %v; %d documents, was %d", err, len(log.docs(t)), before)
	}
}
