package runner

import (
	"context"
	"time"
	"unicode/utf8"

	"github.com/agentsfleet/agentsfleet/shared/run"
)

// maxSandboxEgress bounds the egress entries the runner takes from one
// sandbox result (the browser's proxy keeps as many between two calls).
const maxSandboxEgress = 1024

// recordSandboxEgress writes to the run's egress log what a sandbox tool
// reported it reached (the browser's connections through its proxy). The
// sandbox is where the agent's own code runs, so the entries are marked as
// its account, bounded in number and size, named after the call's tool and
// never carry secret names: nothing the runner filled went with them. A
// time outside the run's life is taken as now.
func (x *execution) recordSandboxEgress(ctx context.Context, toolName string, entries []run.Egress) {
	if len(entries) > maxSandboxEgress {
		x.r.log.Warn("a sandbox result reported more egress entries than the runner takes", "run_id", x.run.ID, "tool", toolName, "entries", len(entries), "kept", maxSandboxEgress)
		entries = entries[:maxSandboxEgress]
	}
	now := time.Now().UTC()
	out := make([]run.Egress, len(entries))
	for k, e := range entries {
		if e.Time.IsZero() || e.Time.After(now) || e.Time.Before(x.run.CreatedAt) {
			e.Time = now // the sandbox's clock is its own; the log orders by time
		}
		out[k] = run.Egress{
			Time: e.Time, Tool: toolName, Method: clipText(e.Method, 16), Host: clipText(e.Host, 300), Port: e.Port,
			Status: e.Status, BytesIn: max(e.BytesIn, 0), BytesOut: max(e.BytesOut, 0), DurationMS: max(e.DurationMS, 0),
			Refused: e.Refused, Rule: clipText(e.Rule, 32), Error: clipText(e.Error, 300), Sandbox: true,
		}
	}
	if err := x.r.cfg.Store.RecordEgress(ctx, x.run.ID, out); err != nil {
		x.r.log.Error("the sandbox's egress log was not written", "run_id", x.run.ID, "tool", toolName, "error", err)
	}
}

// clipText cuts s to at most n bytes, on a rune boundary.
func clipText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}
