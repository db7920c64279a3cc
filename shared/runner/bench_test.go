//go:build linux

package runner_test

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentsfleet/agentsfleet/shared/fleet"
	"github.com/agentsfleet/agentsfleet/shared/invoke"
	"github.com/agentsfleet/agentsfleet/shared/runner"
	"github.com/agentsfleet/agentsfleet/shared/sandbox/launch"
	"github.com/agentsfleet/agentsfleet/shared/secret"
	"github.com/agentsfleet/agentsfleet/shared/store"
	"github.com/agentsfleet/agentsfleet/shared/store/storetest"
	"github.com/agentsfleet/agentsfleet/shared/web"
)

// BenchmarkRunnerStep measures the runner's overhead per step: a run whose
// scripted model asks for one trivial sandbox tool (read of a small file)
// in each of its turns, against the floor of the same work done by hand —
// the same call sent straight to sandboxd plus one CommitStep — in
// alternating rounds against the same emulator. It reports
//
//	runner/direct      the ratio of the two per step (target ≤ 1.2)
//	secrets/direct     the same for a fleet that declares a secret, whose
//	                   every step is screened by one scrub call to the
//	                   webtools function (in process here: a Lambda
//	                   invocation in AWS adds its round trip)
//	wcu/call-turnN     DynamoDB write units of turn N's commit (N = 1, 10, 30),
//	                   by the sizes of the items it writes (storetest.Ledger)
//	wcu/turn30/turn1   their ratio: what a turn's commit grows by as the
//	                   conversation does (target ≤ 1.25)
func BenchmarkRunnerStep(b *testing.B) {
	const steps, rounds = 30, 5
	var script strings.Builder
	for range steps {
		script.WriteString("[[turn]]\n[[turn.tool_call]]\nname = \"read\"\narguments = { path = \"tiny.txt\" }\n")
	}
	script.WriteString("[[turn]]\ntext = \"done\"\n")
	e := newEnv(b, script.String())
	e.write("tiny.txt", "one line\n")
	d := e.fleet(definition("bench", "read"))
	svc, err := web.NewService(web.Config{Secrets: secret.Map{ghARN: "ghp_s3cret"}})
	if err != nil {
		b.Fatal(err)
	}
	var scrubs atomic.Int64
	e.local.Register(invoke.Webtools, func(ctx context.Context, payload []byte) ([]byte, error) {
		scrubs.Add(1)
		return svc.Invoke(ctx, payload)
	})
	ds := e.fleet(definition("bench-secrets", "read") + "[x-agentsfleet.secrets]\nGH = \"" + ghARN + "\"\n")

	var runner, secrets, direct []float64
	for range rounds {
		// The runner's whole run, per step.
		for _, c := range []struct {
			d   *fleet.Definition
			out *[]float64
		}{{d, &runner}, {ds, &secrets}} {
			id := e.start(c.d, "read it")
			t0 := time.Now()
			if err := e.runner.Run(ctx, id); err != nil {
				b.Fatal(err)
			}
			*c.out = append(*c.out, float64(time.Since(t0).Nanoseconds())/steps)
			if run, _ := e.ended(id); run.Status != store.StatusSucceeded {
				b.Fatalf("run %s", run.Status)
			}
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
	r, rs, dd := median(runner), median(secrets), median(direct)
	b.ReportMetric(r, "runner-ns/step")
	b.ReportMetric(rs, "secrets-ns/step")
	b.ReportMetric(dd, "direct-ns/step")
	b.ReportMetric(r/dd, "runner/direct")
	b.ReportMetric(rs/dd, "secrets/direct")
	// A turn's step and the end each scrub once; the fleet without secrets
	// never does.
	b.ReportMetric(float64(scrubs.Load())/float64(rounds*(steps+1)), "scrubs/step")

	turns := e.turnWriteUnits(b, d, steps)
	for _, n := range []int{1, 10, 30} {
		b.ReportMetric(turns[n], fmt.Sprintf("wcu/call-turn%d", n))
	}
	b.ReportMetric(turns[30]/turns[1], "wcu/turn30/turn1")
}

// turnWriteUnits runs one more run of d, of steps turns, by a runner whose
// store writes through a storetest.Ledger (its reads slow the run down, so
// it is not one of the timed rounds), and returns the write units of each
// of the run's commits by DynamoDB's rules: index 0 is step 1 (run.started),
// index n turn n.
func (e *env) turnWriteUnits(b *testing.B, d *fleet.Definition, steps int) []float64 {
	ledger := &storetest.Ledger{DB: e.db}
	cfg := e.cfg
	cfg.Store = store.New(ledger, e.table)
	measured, err := runner.New(cfg)
	if err != nil {
		b.Fatal(err)
	}
	id := e.start(d, "read it")
	ledger.Reset()
	if err := measured.Run(ctx, id); err != nil {
		b.Fatal(err)
	}
	// A step's commit is the transaction that writes the run's checkpoint.
	var units []float64
	for _, w := range ledger.Writes() {
		if w.Call == "TransactWriteItems" && slices.Contains(w.Keys, [2]string{"RUN#" + id, "CKPT"}) {
			units = append(units, w.Units)
		}
	}
	if len(units) != steps+2 {
		b.Fatalf("%d commits; want %d (run.started, %d turns, run.ended)", len(units), steps+2, steps)
	}
	return units
}

func median(xs []float64) float64 {
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	return s[len(s)/2]
}
