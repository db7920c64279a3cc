//go:build linux

package confine

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/agentsfleet/agentsfleet/shared/sandbox/sandboxtest"
)

// BenchmarkSpawn reports the cost of a confined `sh -c true` as a ratio to a
// bare one, both measured in the same run: cold (cmd.Run, a trampoline
// started for the command) and warm (Start).
func BenchmarkSpawn(b *testing.B) {
	const n = 40
	p := &Policy{}
	measure := func(start func() *exec.Cmd) time.Duration {
		t0 := time.Now()
		for range n {
			if err := start().Run(); err != nil {
				b.Fatal(err)
			}
		}
		return time.Since(t0) / n
	}
	for b.Loop() {
		bare := measure(func() *exec.Cmd { return exec.Command("sh", "-c", "true") })
		confined := measure(func() *exec.Cmd {
			cmd, err := p.Command("sh", "-c", "true")
			if err != nil {
				b.Fatal(err)
			}
			return cmd
		})
		// Start's warm trampolines: back to back (the pool refills while
		// the next command runs, on the same cores), and 20 ms apart, as
		// an agent's commands are, which leaves time to refill.
		warm := func(pause time.Duration) (warm, bare time.Duration) {
			for range n {
				cmd, err := p.Command("sh", "-c", "true")
				if err != nil {
					b.Fatal(err)
				}
				t0 := time.Now()
				if err := Start(cmd); err != nil {
					b.Fatal(err)
				}
				if err := cmd.Wait(); err != nil {
					b.Fatal(err)
				}
				warm += time.Since(t0)
				time.Sleep(pause)
				t0 = time.Now()
				if err := exec.Command("sh", "-c", "true").Run(); err != nil {
					b.Fatal(err)
				}
				bare += time.Since(t0)
				time.Sleep(pause)
			}
			return warm / n, bare / n
		}
		tight, tightBare := warm(0)
		spaced, spacedBare := warm(20 * time.Millisecond)
		sandboxtest.Report(b, "confine/spawn-sh-true", []sandboxtest.Figure{
			{Name: "bare", Value: micros(bare), Unit: "µs"},
			{Name: "cold", Value: micros(confined), Unit: "µs"},
			{Name: "cold_ratio", Value: float64(confined) / float64(bare), Unit: "×"},
			{Name: "warm_tight", Value: micros(tight), Unit: "µs"},
			{Name: "warm_tight_ratio", Value: float64(tight) / float64(tightBare), Unit: "×"},
			{Name: "warm_spaced", Value: micros(spaced), Unit: "µs"},
			{Name: "bare_spaced", Value: micros(spacedBare), Unit: "µs"},
			{Name: "warm_spaced_ratio", Value: float64(spaced) / float64(spacedBare), Unit: "×"},
		})
	}
}

func micros(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e3 }

// BenchmarkGrepConfinement splits the cost of confinement for a search of
// a large tree: rg unconfined, confined with only seccomp, only Landlock,
// both, and both with UncheckedReads (the grep tool's policy when sandboxd
// runs as root). The tree's parent is a read-only root, as every root is
// for the grep tool. Each configuration reports the p50 of its wall time
// and of rg's CPU time (user and system), the steadier figure on a busy
// machine.
// It uses the tree sandboximage/bench builds
// ($TMPDIR/agentsfleet-bench/tree) and skips without it or without rg.
func BenchmarkGrepConfinement(b *testing.B) {
	rg, err := exec.LookPath("rg")
	if err != nil {
		b.Skip("no rg")
	}
	tree := filepath.Join(os.TempDir(), "agentsfleet-bench", "tree")
	if _, err := os.Stat(tree + ".done"); err != nil {
		b.Skip("no fixture tree; run the sandboximage/bench benchmarks first")
	}
	argv := []string{"--no-config", "--line-number", "--with-filename", "--no-heading",
		"--color", "never", "--no-messages", "--hidden", "--glob", "!.git", "--", "NEEDLE_7f3a", tree}
	confined := func(p *Policy) func() *exec.Cmd {
		return func() *exec.Cmd {
			cmd, err := p.Command(rg, argv...)
			if err != nil {
				b.Fatal(err)
			}
			return cmd
		}
	}
	ro := []string{filepath.Dir(tree)}
	configs := []struct {
		name  string
		start func() *exec.Cmd
	}{
		{"bare", func() *exec.Cmd { return exec.Command(rg, argv...) }},
		{"uid+rlimits", confined(&Policy{ReadOnly: ro, noLandlock: true, noSeccomp: true})},
		{"seccomp", confined(&Policy{ReadOnly: ro, noLandlock: true})},
		{"landlock", confined(&Policy{ReadOnly: ro, noSeccomp: true})},
		{"both", confined(&Policy{ReadOnly: ro})},
		{"both-unchecked-reads", confined(&Policy{ReadOnly: ro, UncheckedReads: true})},
	}
	// Round-robin, so that drift in the machine's load hits every
	// configuration alike.
	const n = 21 // the machine is noisy: fewer rounds cannot tell 3% apart
	for b.Loop() {
		ds := make([][]time.Duration, len(configs))
		cpu := make([][]time.Duration, len(configs))
		for range n {
			for i, c := range configs {
				cmd := c.start()
				t0 := time.Now()
				if out, err := cmd.Output(); err != nil || len(out) == 0 {
					b.Fatalf("%s: %v (%d bytes)", c.name, err, len(out))
				}
				ds[i] = append(ds[i], time.Since(t0))
				cpu[i] = append(cpu[i], cmd.ProcessState.UserTime()+cmd.ProcessState.SystemTime())
			}
		}
		var figs []sandboxtest.Figure
		for i, c := range configs {
			slices.Sort(ds[i])
			slices.Sort(cpu[i])
			figs = append(figs,
				sandboxtest.Figure{Name: c.name, Value: micros(ds[i][n/2]) / 1000, Unit: "ms"},
				sandboxtest.Figure{Name: c.name + "_cpu", Value: micros(cpu[i][n/2]) / 1000, Unit: "ms"})
		}
		sandboxtest.Report(b, "confine/grep-confinement-split", figs)
	}
}
