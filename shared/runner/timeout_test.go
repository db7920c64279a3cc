//go:build linux

package runner_test

import (
	"testing"
	"time"

	"github.com/agentsfleet/agentsfleet/shared/fleet"
	"github.com/agentsfleet/agentsfleet/shared/runner"
	"github.com/agentsfleet/agentsfleet/shared/sandbox/launch/launchtest"
	"github.com/agentsfleet/agentsfleet/shared/sandbox/launch/pool"
	"github.com/agentsfleet/agentsfleet/shared/store"
)

// A pooled sandbox is started before any run, with sandboxd's default tool
// timeout (120 s). A run whose Definition sets tool_timeout_seconds = 1
// claims one, and its bash call is stopped at 1 s all the same.
func TestPooledSandboxStopsToolsAtTheFleetsTimeout(t *testing.T) {
	t.Parallel()
	starter := launchtest.NewStarter(t)
	var p *pool.Pool
	e := newEnv(t, `
[[turn]]
[[turn.tool_call]]
name = "bash"
arguments = { command = "sleep 30; echo too late" }
[[turn]]
text = "{{last_output}}"
`, func(c *runner.Config) {
		var err error
		p, err = pool.New(pool.Config{Starter: starter, Records: c.Store, Target: map[fleet.SandboxSize]int{fleet.SizeSmall: 1}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(p.Close)
		c.Sandboxes = p
	})
	if n, err := p.TopUp(ctx, fleet.SizeSmall); err != nil || n != 1 {
		t.Fatalf("TopUp = %d, %v; want one warm sandbox before the run", n, err)
	}
	d := e.fleet(definition("quick", "bash") + "[x-agentsfleet.limits]\ntool_timeout_seconds = 1\n")
	if got := d.Limits.ToolTimeout(); got != time.Second {
		t.Fatalf("the Definition's tool timeout = %v, want 1s", got)
	}
	id := e.start(d, "sleep")
	start := time.Now()
	if err := e.runner.Run(ctx, id); err != nil {
		t.Fatal(err)
	}
	took := time.Since(start)
	if st := p.Stats(); st.Claimed != 1 || st.Cold != 0 {
		t.Fatalf("pool stats %+v, want the run to claim the warm sandbox", st)
	}
	run, _ := e.ended(id)
	if run.Status != store.StatusSucceeded {
		t.Fatalf("run %s", run.Status)
	}
	res := e.results(id)
	want := "[timed out after 1 second: the command and every process it started were killed]"
	if len(res) != 1 || res[0].Name != "bash" || res[0].Output != want || !res[0].IsError {
		t.Fatalf("results %+v, want bash stopped at the fleet's 1 s: %q", res, want)
	}
	// Far below the 30 s sleep and sandboxd's own 120 s; no tighter, so
	// that a loaded machine does not fail it.
	if took > 20*time.Second {
		t.Fatalf("the run took %v; its bash call should have stopped after about 1 s", took)
	}
}
