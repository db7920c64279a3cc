package metrics_test

import (
	"bytes"
	"encoding/json"
	"math"
	"strings"
	"sync"
	"testing"

	"github.com/agentsfleet/agentsfleet/shared/metrics"
)

// emf is an EMF document as CloudWatch reads it.
type emf struct {
	AWS struct {
		Timestamp         int64 `json:"Timestamp"`
		CloudWatchMetrics []struct {
			Namespace  string     `json:"Namespace"`
			Dimensions [][]string `json:"Dimensions"`
			Metrics    []struct {
				Name string `json:"Name"`
				Unit string `json:"Unit"`
			} `json:"Metrics"`
		} `json:"CloudWatchMetrics"`
	} `json:"_aws"`
}

func TestRecordWritesOneDocumentALine(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	s := metrics.New(&buf)
	err := s.Record([]metrics.Dim{{Name: metrics.DimTool, Value: "bash"}}, map[string]string{"run_id": "r1"},
		metrics.Metric{Name: metrics.ToolCalls, Unit: metrics.Count, Value: 1},
		metrics.Metric{Name: metrics.ToolLatency, Unit: metrics.Milliseconds, Value: 12.5})
	if err != nil {
		t.Fatal(err)
	}
	line := buf.String()
	if strings.Count(line, "\n") != 1 || !strings.HasSuffix(line, "\n") {
		t.Fatalf("want one line, got %q", line)
	}
	var doc emf
	var members map[string]any
	if err := json.Unmarshal([]byte(line), &doc); err != nil {
		t.Fatal(err)
	}
	_ = json.Unmarshal([]byte(line), &members)
	d := doc.AWS.CloudWatchMetrics
	if doc.AWS.Timestamp == 0 || len(d) != 1 || d[0].Namespace != "agentsfleet" || len(d[0].Dimensions) != 1 || strings.Join(d[0].Dimensions[0], ",") != "Tool" {
		t.Fatalf("directive = %+v", doc.AWS)
	}
	if len(d[0].Metrics) != 2 || d[0].Metrics[0].Name != "ToolCalls" || d[0].Metrics[0].Unit != "Count" || d[0].Metrics[1].Unit != "Milliseconds" {
		t.Errorf("metrics = %+v", d[0].Metrics)
	}
	// Every dimension and metric the directive names is a member.
	if members["Tool"] != "bash" || members["ToolCalls"] != 1.0 || members["ToolLatency"] != 12.5 || members["run_id"] != "r1" {
		t.Errorf("members = %v", members)
	}
}

func TestRecordRefusesWhatCloudWatchDrops(t *testing.T) {
	t.Parallel()
	one := metrics.Metric{Name: metrics.RunsEnded, Unit: metrics.Count, Value: 1}
	tool := []metrics.Dim{{Name: "Tool", Value: "bash"}}
	many := make([]metrics.Metric, 101)
	for i := range many {
		many[i] = metrics.Metric{Name: strings.Repeat("m", i+1), Unit: metrics.Count, Value: 1}
	}
	dims31 := make([]metrics.Dim, 31)
	for i := range dims31 {
		dims31[i] = metrics.Dim{Name: strings.Repeat("d", i+1), Value: "v"}
	}
	tests := []struct {
		name  string
		dims  []metrics.Dim
		props map[string]string
		ms    []metrics.Metric
		want  string
	}{
		{"no metric", tool, nil, nil, "no metric"},
		{"101 metrics", tool, nil, many, "101 metrics"},
		{"31 dimensions", dims31, nil, []metrics.Metric{one}, "31 dimensions"},
		{"empty dimension value", []metrics.Dim{{Name: "Tool", Value: ""}}, nil, []metrics.Metric{one}, "dimension Tool"},
		{"blank dimension value", []metrics.Dim{{Name: "Tool", Value: "  "}}, nil, []metrics.Metric{one}, "dimension Tool"},
		{"non-ASCII dimension value", []metrics.Dim{{Name: "Model", Value: "modèle"}}, nil, []metrics.Metric{one}, "printable ASCII"},
		{"long dimension value", []metrics.Dim{{Name: "Model", Value: strings.Repeat("x", 1025)}}, nil, []metrics.Metric{one}, "1 to 1024"},
		{"dimension name with a colon first", []metrics.Dim{{Name: ":Tool", Value: "bash"}}, nil, []metrics.Metric{one}, "colon"},
		{"empty metric name", tool, nil, []metrics.Metric{{Unit: metrics.Count, Value: 1}}, "metric name"},
		{"NaN", tool, nil, []metrics.Metric{{Name: "X", Unit: metrics.Count, Value: math.NaN()}}, "not a value"},
		{"infinity", tool, nil, []metrics.Metric{{Name: "X", Unit: metrics.Count, Value: math.Inf(1)}}, "not a value"},
		{"past the range", tool, nil, []metrics.Metric{{Name: "X", Unit: metrics.Count, Value: 3e108}}, "not a value"},
		{"unknown unit", tool, nil, []metrics.Metric{{Name: "X", Unit: "Furlongs", Value: 1}}, "unit"},
		{"a metric named as a dimension", tool, nil, []metrics.Metric{{Name: "Tool", Unit: metrics.Count, Value: 1}}, "used twice"},
		{"a metric twice", tool, nil, []metrics.Metric{one, one}, "used twice"},
		{"a prop named as a metric", tool, map[string]string{"RunsEnded": "x"}, []metrics.Metric{one}, "used twice"},
		{"a prop named _aws", tool, map[string]string{"_aws": "x"}, []metrics.Metric{one}, "used twice"},
	}
	for _, tt := range tests {
		var buf bytes.Buffer
		err := metrics.New(&buf).Record(tt.dims, tt.props, tt.ms...)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: err = %v, want one saying %q", tt.name, err, tt.want)
		}
		if buf.Len() != 0 {
			t.Errorf("%s: wrote %q", tt.name, buf.String())
		}
	}
}

func TestNilSinkRecordsNothing(t *testing.T) {
	t.Parallel()
	var s *metrics.Sink
	if err := s.Record(nil, nil, metrics.Metric{Name: "X", Unit: metrics.Count, Value: 1}); err != nil {
		t.Fatal(err)
	}
}

func TestConcurrentRecordsKeepTheirLines(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	s := metrics.New(&buf)
	var wg sync.WaitGroup
	for i := range 50 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_ = s.Record([]metrics.Dim{{Name: "Tool", Value: "t"}}, nil, metrics.Metric{Name: metrics.ToolCalls, Unit: metrics.Count, Value: float64(i)})
		}()
	}
	wg.Wait()
	lines := strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
	if len(lines) != 50 {
		t.Fatalf("%d lines, want 50", len(lines))
	}
	for _, l := range lines {
		if !json.Valid([]byte(l)) {
			t.Fatalf("line %q is not one JSON document", l)
		}
	}
}

func TestDimValue(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{"": "none", " ": "none", "claude-sonnet-4": "claude-sonnet-4", "é": "??", "a\nb": "a?b"} {
		if got := metrics.DimValue(in); got != want {
			t.Errorf("DimValue(%q) = %q, want %q", in, got, want)
		}
	}
	if got := metrics.DimValue(strings.Repeat("x", 2000)); len(got) != 1024 {
		t.Errorf("a long value is %d bytes, want 1024", len(got))
	}
}

func TestFromEnv(t *testing.T) {
	t.Parallel()
	env := func(kv ...string) func(string) string {
		return func(k string) string {
			for i := 0; i < len(kv); i += 2 {
				if kv[i] == k {
					return kv[i+1]
				}
			}
			return ""
		}
	}
	var buf bytes.Buffer
	for _, tt := range []struct {
		name string
		get  func(string) string
		on   bool
	}{
		{"unset, outside Lambda", env(), false},
		{"unset, inside Lambda", env("AWS_LAMBDA_RUNTIME_API", "127.0.0.1:9001"), true},
		{"off inside Lambda", env("AWS_LAMBDA_RUNTIME_API", "127.0.0.1:9001", metrics.EnvMetrics, "off"), false},
		{"on outside Lambda", env(metrics.EnvMetrics, "on"), true},
	} {
		s, err := metrics.FromEnv(tt.get, &buf)
		if err != nil || (s != nil) != tt.on {
			t.Errorf("%s: sink %v, err %v; want on=%v", tt.name, s, err, tt.on)
		}
	}
	if _, err := metrics.FromEnv(env(metrics.EnvMetrics, "yes"), &buf); err == nil || !strings.Contains(err.Error(), "want on or off") {
		t.Errorf("a bad value: err = %v", err)
	}
}
