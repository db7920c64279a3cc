package sandboxtest

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"testing"
)

// A Figure is one measured value of a benchmark: its name, value and unit
// ("µs", "ms", "×", "MiB").
type Figure struct {
	Name  string
	Value float64
	Unit  string
}

// A Target is what a benchmark aims at: its figure Name at most Max.
type Target struct {
	Name string
	Max  float64
}

// Report logs a benchmark's figures as one line, in the same form from run
// to run, so that the outputs of two runs (make bench's bench.txt) compare
// line by line; then each target, with "ok" or "MISSED" (never a test
// failure: a timing depends on the machine). It also reports every figure
// to b (b.ReportMetric) for benchstat. The line goes through b.Log (a line
// printed to standard output would land inside the benchmark's result
// line), from this file, so its prefix does not move with the benchmark's
// code:
//
//	report.go:NN: bench sandboxd/trivial-tool-http: http_p50 142 µs  direct_p50 26.1 µs  ratio 5.45 × | target http_p50 ≤ 150: ok
func Report(b *testing.B, name string, figs []Figure, targets ...Target) {
	for _, f := range figs {
		b.ReportMetric(f.Value, f.Name+"-"+f.Unit)
	}
	var line strings.Builder
	report(&line, name, figs, targets)
	b.Log(strings.TrimSuffix(line.String(), "\n"))
}

func report(w io.Writer, name string, figs []Figure, targets []Target) {
	var line strings.Builder
	line.WriteString("bench " + name + ":")
	byName := map[string]float64{}
	for i, f := range figs {
		if i > 0 {
			line.WriteByte(' ')
		}
		fmt.Fprintf(&line, " %s %s %s", f.Name, number(f.Value), f.Unit)
		byName[f.Name] = f.Value
	}
	for i, t := range targets {
		sep := " |"
		if i > 0 {
			sep = ","
		}
		v, ok := byName[t.Name]
		verdict := "ok"
		switch {
		case !ok:
			verdict = "no such figure"
		case v > t.Max:
			verdict = "MISSED"
		}
		fmt.Fprintf(&line, "%s target %s ≤ %s: %s", sep, t.Name, number(t.Max), verdict)
	}
	fmt.Fprintln(w, line.String())
}

// number prints v with three significant digits, at least the units.
func number(v float64) string {
	switch a := max(v, -v); {
	case a >= 100:
		return strconv.FormatFloat(v, 'f', 0, 64)
	case a >= 10:
		return strconv.FormatFloat(v, 'f', 1, 64)
	}
	return strconv.FormatFloat(v, 'f', 2, 64)
}
