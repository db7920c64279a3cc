package session

import (
	"context"
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/agentsfleet/agentsfleet/shared/sandbox/shell"
	"github.com/agentsfleet/agentsfleet/shared/tool"
)

// BenchmarkExecCommandRoundTrip measures exec_command for a command that
// finishes at once (`true`) against the bash tool running the same command,
// both through the confinement, alternating call by call. It reports the
// median of 100 calls of each (make bench runs one iteration).
func BenchmarkExecCommandRoundTrip(b *testing.B) {
	m, _ := newManager(b, Options{})
	bash := shell.NewBash(m.roots, m.policy, time.Minute)
	execTool := m.ExecCommand()
	execArgs := json.RawMessage(`{"cmd":"true"}`)
	bashArgs := json.RawMessage(`{"command":"true"}`)
	run := func(tool tool.Tool, args json.RawMessage) time.Duration {
		began := time.Now()
		res, err := tool.Run(context.Background(), args)
		took := time.Since(began)
		if err != nil || res.IsError && tool.Name() == "exec_command" {
			b.Fatalf("%s: %v %q", tool.Name(), err, res.Output)
		}
		return took
	}
	const reps = 100
	var execTimes, bashTimes []time.Duration
	for b.Loop() {
		execTimes, bashTimes = execTimes[:0], bashTimes[:0]
		for range reps {
			execTimes = append(execTimes, run(execTool, execArgs))
			bashTimes = append(bashTimes, run(bash, bashArgs))
		}
	}
	e, s := median(execTimes), median(bashTimes)
	b.ReportMetric(float64(e.Microseconds())/1000, "exec_p50_ms")
	b.ReportMetric(float64(s.Microseconds())/1000, "bash_p50_ms")
	b.ReportMetric(float64(e)/float64(s), "exec/bash")
}

func median(d []time.Duration) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[len(s)/2]
}
