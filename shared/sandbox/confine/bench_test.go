package confine

import (
	"os/exec"
	"testing"
	"time"
)

// BenchmarkSpawn reports the cost of a confined `sh -c true` as a ratio to a
// bare one, both measured in the same run.
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
		b.ReportMetric(float64(bare.Microseconds()), "bare-µs")
		b.ReportMetric(float64(confined.Microseconds()), "confined-µs")
		b.ReportMetric(float64(confined)/float64(bare), "ratio")
	}
}
