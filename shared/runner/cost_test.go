//go:build linux

package runner_test

import (
	"encoding/json"
	"testing"

	"github.com/agentsfleet/agentsfleet/shared/cost"
	afrun "github.com/agentsfleet/agentsfleet/shared/run"
	"github.com/agentsfleet/agentsfleet/shared/runner"
)

// TestRunEndedCarriesItsCost: run.ended says what the run cost: every
// agent's tokens at the model's price (the child's with its parent's), and
// the runner's and the sandbox's time; the run item holds the same token
// totals.
func TestRunEndedCarriesItsCost(t *testing.T) {
	t.Parallel()
	// A dollar an input token and two an output one: the figures are the
	// token counts themselves.
	prices := cost.Default
	prices.Models = map[string]cost.ModelPrice{"scripted": {Input: 1e6, Output: 2e6}}
	e, _ := childEnv(t, map[string]string{
		"parent": `[[turn]]
[[turn.tool_call]]
name = "delegate_agent"
arguments = '{"task": "helper"}'
[[turn]]
[[turn.tool_call]]
name = "bash"
arguments = { command = "true" }
[[turn]]
text = "done"
`,
		"helper": "[[turn]]\ntext = \"helped\"\n",
	}, func(c *runner.Config) { c.Prices, c.MemoryMiB = &prices, 1024 })
	d := e.fleet(childDefinition)
	id := e.start(d, "parent")
	e.finish(id)
	run, end := e.ended(id)
	if run.Status != "succeeded" || end.Cost == nil {
		t.Fatalf("run %s, cost %v", run.Status, end.Cost)
	}
	var child *afrun.Usage
	for _, ev := range e.events(id) {
		if ev.Type == afrun.EventChildEnded {
			var ce afrun.ChildEnded
			json.Unmarshal(ev.Data, &ce)
			child = ce.Usage
		}
	}
	if child == nil || child.InputTokens == 0 {
		t.Fatalf("the child's usage: %+v", child)
	}
	in, out := end.Usage.InputTokens+child.InputTokens, end.Usage.OutputTokens+child.OutputTokens
	if run.Tokens.Input != in || run.Tokens.Output != out {
		t.Errorf("the run item's tokens %+v, want %d in and %d out (the agents' own)", run.Tokens, in, out)
	}
	if want := float64(in + 2*out); end.Cost.ModelUSD != want {
		t.Errorf("model_usd %v, want %v: every agent's tokens at the price", end.Cost.ModelUSD, want)
	}
	if end.Cost.ComputeUSD <= 0 || end.Cost.USD != end.Cost.ModelUSD+end.Cost.ComputeUSD || end.Cost.UnpricedModel != "" {
		t.Errorf("cost %+v: want the runner's and the sandbox's time in compute_usd, and the sum", end.Cost)
	}
	// The invocations that ran (the run's and the child's) added their
	// time, and the run's own agent its sandbox's.
	if run.Time.Runner <= 0 || run.Time.Sandbox <= 0 {
		t.Errorf("the run's time %+v, want its invocations' and its sandbox's", run.Time)
	}
}
