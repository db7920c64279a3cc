//go:build linux

package runner_test

import (
	"bytes"
	"fmt"
	"math"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/agentsfleet/agentsfleet/shared/sandbox/launch"
	"github.com/agentsfleet/agentsfleet/shared/store"
)

// BenchmarkRunnerStep measures the runner's overhead per step: a run whose
// scripted model asks for one trivial sandbox tool (read of a small file)
// in each of its turns, against the floor of the same work done by hand —
// the same call sent straight to sandboxd plus one CommitStep — in
// alternating rounds against the same emulator. It reports
//
//	runner/direct    the ratio of the two per step (target ≤ 1.2)
//	wcu/call-first   DynamoDB write units of the first turn's commit, by item size
//	wcu/call-last    the same for the last turn, whose checkpoint holds the whole conversation
func BenchmarkRunnerStep(b *testing.B) {
	const steps, rounds = 20, 5
	var script strings.Builder
	for range steps {
		script.WriteString("[[turn]]\n[[turn.tool_call]]\nname = \"read\"\narguments = { path = \"tiny.txt\" }\n")
	}
	script.WriteString("[[turn]]\ntext = \"done\"\n")
	e := newEnv(b, script.String())
	e.write("tiny.txt", "one line\n")
	d := e.fleet(definition("bench", "read"))

	var runner, direct []float64
	var firstWCU, lastWCU float64
	for round := range rounds {
		// The runner's whole run, per step.
		id := e.start(d, "read it")
		t0 := time.Now()
		if err := e.runner.Run(ctx, id); err != nil {
			b.Fatal(err)
		}
		runner = append(runner, float64(time.Since(t0).Nanoseconds())/steps)
		if run, _ := e.ended(id); run.Status != store.StatusSucceeded {
			b.Fatalf("run %s", run.Status)
		}
		if round == 0 {
			firstWCU, lastWCU = e.turnWriteUnits(b, id)
		}

		// By hand: the same call straight to a sandbox, and one commit.
		hand, _, err := e.store.CreateRun(ctx, store.NewRun{Fleet: d.Name, Source: store.SourceAPI})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := e.store.AcquireLease(ctx, hand.ID, "bench", time.Hour); err != nil {
			b.Fatal(err)
		}
		if _, err := e.store.Transition(ctx, hand.ID, store.StatusRunning, ""); err != nil {
			b.Fatal(err)
		}
		sb, err := e.sandbox.Acquire(ctx, launch.Spec{RunID: hand.ID, ToolTimeout: time.Minute})
		if err != nil {
			b.Fatal(err)
		}
		ckpt := bytes.Repeat([]byte("c"), 600)
		ev := store.NewEvent{Type: "tool.result", Data: bytes.Repeat([]byte("e"), 200)}
		t1 := time.Now()
		for i := range steps {
			if _, err := sb.Client.Call(ctx, "read", []byte(`{"path":"tiny.txt"}`), fmt.Sprintf("k-%d", i)); err != nil {
				b.Fatal(err)
			}
			if _, err := e.store.CommitStep(ctx, hand.ID, store.Step{Holder: "bench", Number: int64(i + 1), Checkpoint: ckpt,
				Events: []store.NewEvent{ev}, Spend: store.Budget{Tokens: 100, ToolCalls: 1}}); err != nil {
				b.Fatal(err)
			}
		}
		direct = append(direct, float64(time.Since(t1).Nanoseconds())/steps)
		e.sandbox.Release(ctx, hand.ID)
	}
	r, dd := median(runner), median(direct)
	b.ReportMetric(r, "runner-ns/step")
	b.ReportMetric(dd, "direct-ns/step")
	b.ReportMetric(r/dd, "runner/direct")
	b.ReportMetric(firstWCU, "wcu/call-first")
	b.ReportMetric(lastWCU, "wcu/call-last")
}

// turnWriteUnits returns the write units of the first and the last turn's
// commit by DynamoDB's rules: in a transaction, twice one unit per KB
// started of each item written — the run item (kept under 1 KB), the
// checkpoint, and the turn's events.
func (e *env) turnWriteUnits(b *testing.B, runID string) (first, last float64) {
	evs := e.events(runID)
	ckpt, err := e.store.LoadCheckpoint(ctx, runID)
	if err != nil {
		b.Fatal(err)
	}
	kb := func(n int) float64 { return math.Ceil(float64(n) / 1024) }
	// Items carry their keys and attribute names besides the data.
	const overhead = 80
	turn := func(call, result store.Event, ckptBytes int) float64 {
		return 2 * (1 + kb(ckptBytes+overhead) + kb(len(call.Data)+overhead) + kb(len(result.Data)+overhead))
	}
	var calls, results []store.Event
	for _, ev := range evs {
		switch ev.Type {
		case "tool.call":
			calls = append(calls, ev)
		case "tool.result":
			results = append(results, ev)
		}
	}
	// The first turn's checkpoint: the input, one answer and one result.
	firstCkpt := len(ckpt.Data) / len(calls)
	return turn(calls[0], results[0], firstCkpt), turn(calls[len(calls)-1], results[len(results)-1], len(ckpt.Data))
}

func median(xs []float64) float64 {
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	return s[len(s)/2]
}
