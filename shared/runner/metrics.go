package runner

import (
	"time"

	"github.com/agentsfleet/agentsfleet/shared/metrics"
)

// record writes one metrics document about the run, under the one
// dimension dim (Config.Metrics; nothing without it). A document the sink
// refuses is logged: metrics never fail a run.
func (x *execution) record(dim metrics.Dim, ms ...metrics.Metric) {
	if x.r.cfg.Metrics == nil {
		return
	}
	props := map[string]string{"run_id": x.run.ID, "fleet": x.run.Fleet}
	if id := x.agent.id(); id != "" {
		props["child_id"] = id
	}
	dim.Value = metrics.DimValue(dim.Value)
	if err := x.r.cfg.Metrics.Record([]metrics.Dim{dim}, props, ms...); err != nil {
		x.r.log.Warn("a metric was not written", "run_id", x.run.ID, "error", err)
	}
}

func count(name string, n float64) metrics.Metric {
	return metrics.Metric{Name: name, Unit: metrics.Count, Value: n}
}

func millis(name string, d time.Duration) metrics.Metric {
	return metrics.Metric{Name: name, Unit: metrics.Milliseconds, Value: float64(d.Microseconds()) / 1000}
}

// recordTool: one tool call, its result an error or not, and how long it
// took.
func (x *execution) recordTool(name string, took time.Duration, isError bool) {
	errs := 0.0
	if isError {
		errs = 1
	}
	x.record(metrics.Dim{Name: metrics.DimTool, Value: name},
		count(metrics.ToolCalls, 1), count(metrics.ToolErrors, errs), millis(metrics.ToolLatency, took))
}

// recordModel: one model call of model, its tokens and how long it took.
func (x *execution) recordModel(model string, input, output int64, took time.Duration) {
	x.record(metrics.Dim{Name: metrics.DimModel, Value: model},
		count(metrics.ModelCalls, 1), count(metrics.ModelInputTokens, float64(input)),
		count(metrics.ModelOutputTokens, float64(output)), millis(metrics.ModelLatency, took))
}
