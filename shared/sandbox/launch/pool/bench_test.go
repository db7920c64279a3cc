//go:build linux

package pool_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/agentsfleet/agentsfleet/shared/fleet"
	"github.com/agentsfleet/agentsfleet/shared/sandbox/launch"
	"github.com/agentsfleet/agentsfleet/shared/sandbox/launch/local"
	"github.com/agentsfleet/agentsfleet/shared/sandbox/launch/pool"
)

// BenchmarkClaimWarmLocal measures claiming a warm sandbox from the pool
// against starting one cold, with the local launcher (real sandboxd
// processes, as `agentsfleet dev` keeps them) and the records on moto, in
// alternating rounds of the same run: an Acquire of each, until the
// sandbox answers. It reports µs/warm, µs/cold and cold/warm. The claim is
// what a Fargate claim is (the pool's records, a health check); the cold
// start here is a process start, not a Fargate task's 30-60 s.
func BenchmarkClaimWarmLocal(b *testing.B) {
	const rounds = 10
	l := localLauncher(b)
	// A table each: the cold pool must not claim the warm pool's idle one.
	warmPool, err := pool.New(pool.Config{Starter: l, Records: newStore(b), Target: map[fleet.SandboxSize]int{small: 1}})
	if err != nil {
		b.Fatal(err)
	}
	coldPool, err := pool.New(pool.Config{Starter: l, Records: newStore(b)})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		warmPool.Drain(ctx)
		coldPool.Drain(ctx)
	})
	var warm, cold time.Duration
	n := 0
	for b.Loop() {
		for range rounds {
			n++
			if _, err := warmPool.TopUp(ctx, small); err != nil {
				b.Fatal(err)
			}
			run := fmt.Sprintf("warm-%d", n)
			t0 := time.Now()
			if _, err := warmPool.Acquire(ctx, spec(run)); err != nil {
				b.Fatal(err)
			}
			warm += time.Since(t0)
			warmPool.Wait()
			warmPool.Release(ctx, run)

			run = fmt.Sprintf("cold-%d", n)
			t0 = time.Now()
			if _, err := coldPool.Acquire(ctx, launch.Spec{RunID: run, Size: small}); err != nil {
				b.Fatal(err)
			}
			cold += time.Since(t0)
			coldPool.Release(ctx, run)
		}
	}
	if got := warmPool.Stats(); got.Claimed != n || got.Cold != 0 {
		b.Fatalf("warm pool %+v over %d rounds, want every run a claim", got, n)
	}
	if got := coldPool.Stats(); got.Cold != n || got.Claimed != 0 {
		b.Fatalf("cold pool %+v over %d rounds, want every run a cold start", got, n)
	}
	b.ReportMetric(float64(warm.Microseconds())/float64(n), "µs/warm")
	b.ReportMetric(float64(cold.Microseconds())/float64(n), "µs/cold")
	b.ReportMetric(float64(cold)/float64(warm), "cold/warm")
}

// localLauncher is a local.Launcher over fresh folders, with sandboxd
// built for it. As root the workdir is nobody's, as the local launcher's
// own tests make it (root's own takes Landlock).
func localLauncher(b *testing.B) *local.Launcher {
	b.Helper()
	base, err := os.MkdirTemp("", "pool-local-")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { os.RemoveAll(base) })
	work := filepath.Join(base, "work")
	for _, d := range []string{base, work} {
		err := os.MkdirAll(d, 0o755)
		if err == nil {
			err = os.Chmod(d, 0o755)
		}
		if err != nil {
			b.Fatal(err)
		}
	}
	if os.Geteuid() == 0 {
		if err := os.Chown(work, 65534, 65534); err != nil {
			b.Fatal(err)
		}
	}
	bin := filepath.Join(base, "sandboxd")
	cmd := exec.Command("go", "build", "-buildvcs=false", "-o", bin, "github.com/agentsfleet/agentsfleet/sandboximage/sandboxd")
	if out, err := cmd.CombinedOutput(); err != nil {
		b.Fatalf("build sandboxd (it needs cgo): %v\n%s", err, out)
	}
	l, err := local.New(local.Config{Workdir: work, StateDir: filepath.Join(base, "state"), Binary: bin})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { l.Close() })
	return l
}
