// Package metrics writes agentsfleet's CloudWatch metrics in the embedded
// metric format (EMF): each observation is one JSON document on a line of
// the function's log, which CloudWatch Logs turns into metrics of the
// namespace agentsfleet, with no API call and no permission beyond the
// log group's.
//
// The runner records what its runs do (see the names below): runs
// started by source and ended by status, tool calls with their latency
// and errors by tool, model calls with their tokens and latency by model,
// and sandbox claims by how they were met (warm, cold, resumed).
package metrics

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strings"
	"sync"
	"time"

	"github.com/agentsfleet/agentsfleet/shared/setting"
)

// Namespace is the CloudWatch namespace of every metric.
const Namespace = "agentsfleet"

// The metrics and their dimensions.
const (
	RunsStarted       = "RunsStarted"       // Count, by Source
	RunsEnded         = "RunsEnded"         // Count, by Status
	ToolCalls         = "ToolCalls"         // Count, by Tool
	ToolErrors        = "ToolErrors"        // Count (0 or 1 a call), by Tool
	ToolLatency       = "ToolLatency"       // Milliseconds, by Tool
	ModelCalls        = "ModelCalls"        // Count, by Model
	ModelInputTokens  = "ModelInputTokens"  // Count, by Model
	ModelOutputTokens = "ModelOutputTokens" // Count, by Model
	ModelLatency      = "ModelLatency"      // Milliseconds, by Model
	SandboxClaims     = "SandboxClaims"     // Count, by Claim

	DimSource = "Source"
	DimStatus = "Status"
	DimTool   = "Tool"
	DimModel  = "Model"
	DimClaim  = "Claim"
)

// Unit is a CloudWatch unit.
type Unit string

// The units agentsfleet's metrics use.
const (
	Count        Unit = "Count"
	Milliseconds Unit = "Milliseconds"
)

// Metric is one value of a document.
type Metric struct {
	Name  string
	Unit  Unit
	Value float64
}

// Dim is one dimension of a document.
type Dim struct{ Name, Value string }

// The service's limits on a document (CloudWatch's EMF specification and
// PutMetricData): what it would drop a document for.
const (
	maxDimensions     = 30
	maxMetrics        = 100
	maxDimNameBytes   = 250
	maxDimValueBytes  = 1024
	maxMetricName     = 1024
	maxAbsMetricValue = 2.3485425827738332e108
)

// Sink writes documents to a log, one a line. A nil *Sink records nothing.
// It is safe for concurrent use.
type Sink struct {
	mu  sync.Mutex
	w   io.Writer
	now func() time.Time
}

// New returns a Sink writing to w (the function's stdout in Lambda).
func New(w io.Writer) *Sink { return &Sink{w: w, now: time.Now} }

// Record writes one document: the metrics, under the one dimension set
// dims, with props as members of their own (a run's id), which CloudWatch
// keeps in the log line for queries and does not make dimensions. It
// refuses, writing nothing, what CloudWatch would drop: no metric, a
// metric or dimension name that is empty, too long or used twice, a value
// that is not a finite number within CloudWatch's range, a dimension value
// that is empty, too long or not printable ASCII, a prop named as a
// dimension or metric.
func (s *Sink) Record(dims []Dim, props map[string]string, ms ...Metric) error {
	if s == nil {
		return nil
	}
	doc, err := document(s.now(), dims, props, ms)
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	_, err = s.w.Write(doc)
	return err
}

func document(at time.Time, dims []Dim, props map[string]string, ms []Metric) ([]byte, error) {
	switch {
	case len(ms) == 0:
		return nil, fmt.Errorf("metrics: a document with no metric")
	case len(ms) > maxMetrics:
		return nil, fmt.Errorf("metrics: %d metrics in one document; at most %d", len(ms), maxMetrics)
	case len(dims) > maxDimensions:
		return nil, fmt.Errorf("metrics: %d dimensions; at most %d", len(dims), maxDimensions)
	}
	root := map[string]any{}
	claim := func(name, what string) error {
		if _, taken := root[name]; taken || name == "_aws" {
			return fmt.Errorf("metrics: %s %q is used twice in one document", what, name)
		}
		return nil
	}
	names := make([]string, 0, len(dims))
	for _, d := range dims {
		if err := checkDimension(d); err != nil {
			return nil, err
		}
		if err := claim(d.Name, "dimension"); err != nil {
			return nil, err
		}
		root[d.Name] = d.Value
		names = append(names, d.Name)
	}
	type definition struct {
		Name string `json:"Name"`
		Unit Unit   `json:"Unit"`
	}
	defs := make([]definition, 0, len(ms))
	for _, m := range ms {
		if m.Name == "" || len(m.Name) > maxMetricName {
			return nil, fmt.Errorf("metrics: metric name %q: want 1 to %d bytes", m.Name, maxMetricName)
		}
		if math.IsNaN(m.Value) || math.IsInf(m.Value, 0) || math.Abs(m.Value) > maxAbsMetricValue {
			return nil, fmt.Errorf("metrics: %s = %v is not a value CloudWatch takes", m.Name, m.Value)
		}
		if m.Unit != Count && m.Unit != Milliseconds {
			return nil, fmt.Errorf("metrics: %s: unit %q is not one this package writes", m.Name, m.Unit)
		}
		if err := claim(m.Name, "metric"); err != nil {
			return nil, err
		}
		root[m.Name] = m.Value
		defs = append(defs, definition{m.Name, m.Unit})
	}
	for k, v := range props {
		if err := claim(k, "property"); err != nil {
			return nil, err
		}
		root[k] = v
	}
	root["_aws"] = map[string]any{
		"Timestamp": at.UnixMilli(),
		"CloudWatchMetrics": []map[string]any{{
			"Namespace":  Namespace,
			"Dimensions": [][]string{names},
			"Metrics":    defs,
		}},
	}
	b, err := json.Marshal(root)
	if err != nil {
		return nil, fmt.Errorf("metrics: %w", err)
	}
	return append(b, '\n'), nil
}

// checkDimension refuses a dimension CloudWatch would not take.
func checkDimension(d Dim) error {
	switch {
	case d.Name == "" || len(d.Name) > maxDimNameBytes || !printableASCII(d.Name) || strings.HasPrefix(d.Name, ":"):
		return fmt.Errorf("metrics: dimension name %q: want 1 to %d printable ASCII characters, not starting with a colon", d.Name, maxDimNameBytes)
	case d.Value == "" || len(d.Value) > maxDimValueBytes || !printableASCII(d.Value) || strings.TrimSpace(d.Value) == "":
		return fmt.Errorf("metrics: dimension %s = %q: want 1 to %d printable ASCII characters, not all spaces", d.Name, d.Value, maxDimValueBytes)
	}
	return nil
}

func printableASCII(s string) bool {
	for i := range len(s) {
		if s[i] < 0x20 || s[i] > 0x7e {
			return false
		}
	}
	return true
}

// DimValue makes s a dimension value CloudWatch takes: a model id or tool
// name from a Definition may hold anything. Characters outside printable
// ASCII become '?', and it is cut to the limit; an empty s is "none".
func DimValue(s string) string {
	if strings.TrimSpace(s) == "" {
		return "none"
	}
	b := []byte(s)
	if len(b) > maxDimValueBytes {
		b = b[:maxDimValueBytes]
	}
	for i, c := range b {
		if c < 0x20 || c > 0x7e {
			b[i] = '?'
		}
	}
	return string(b)
}

// EnvMetrics turns the metrics on ("on") or off ("off"). Unset, they are
// on inside Lambda, where the log is CloudWatch Logs, and off elsewhere
// (agentsfleet dev, whose terminal they would fill).
const EnvMetrics = "AGENTSFLEET_METRICS"

// Settings are the variables FromEnv reads.
func Settings() []setting.Var { return []setting.Var{{Name: EnvMetrics}} }

// FromEnv returns the Sink the settings ask for, writing to w, or nil
// when the metrics are off.
func FromEnv(getenv func(string) string, w io.Writer) (*Sink, error) {
	switch v := getenv(EnvMetrics); v {
	case "on":
		return New(w), nil
	case "off":
		return nil, nil
	case "":
		if getenv(setting.LambdaRuntimeAPI) != "" {
			return New(w), nil
		}
		return nil, nil
	default:
		return nil, fmt.Errorf("%s=%q: want on or off", EnvMetrics, v)
	}
}
