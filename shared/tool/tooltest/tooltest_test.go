package tooltest_test

import (
	"encoding/json"
	"fmt"
	"reflect"
	"runtime"
	"sync"
	"testing"

	"github.com/agentsfleet/agentsfleet/shared/tool"
	"github.com/agentsfleet/agentsfleet/shared/tool/tooltest"
)

// recorder is a testing.TB that keeps failures instead of failing.
type recorder struct {
	testing.TB
	mu     sync.Mutex
	failed []string
}

func (r *recorder) Helper() {}
func (r *recorder) Errorf(format string, a ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.failed = append(r.failed, fmt.Sprintf(format, a...))
}
func (r *recorder) Fatalf(format string, a ...any) { r.Errorf(format, a...); runtime.Goexit() }

func conform(t *testing.T, spec tool.Spec) []string {
	r := &recorder{TB: t}
	done := make(chan struct{})
	go func() { defer close(done); tooltest.Conform(r, spec) }()
	<-done
	return r.failed
}

// lying is a spec whose schema says something else than its check.
type lying struct {
	tool.Spec
	schema string
}

func (l lying) Schema() json.RawMessage { return json.RawMessage(l.schema) }
func (l lying) ArgsType() reflect.Type  { return reflect.TypeFor[args]() }

type args struct {
	Path  string `json:"path"`
	Limit int    `json:"limit,omitempty"`
}

var honest = tool.Define[args](tool.About{Name: "t", Description: "d", Rules: tool.Rules{"limit": tool.Min(1)}})

func TestConformFindsSchemasThatLie(t *testing.T) {
	t.Parallel()
	if f := conform(t, honest); len(f) != 0 {
		t.Fatalf("an honest spec failed: %v", f)
	}
	for name, schema := range map[string]string{
		"not a schema":         `{"type":"objekt","properties":{},"additionalProperties":false}`,
		"a missing property":   `{"type":"object","properties":{"path":{"type":"string"}},"required":["path"],"additionalProperties":false}`,
		"a required optional":  `{"type":"object","properties":{"path":{"type":"string"},"limit":{"type":"integer"}},"required":["path","limit"],"additionalProperties":false}`,
		"an optional required": `{"type":"object","properties":{"path":{"type":"string"},"limit":{"type":"integer","minimum":1}},"additionalProperties":false}`,
		"a wrong type":         `{"type":"object","properties":{"path":{"type":"integer"},"limit":{"type":"integer","minimum":1}},"required":["path"],"additionalProperties":false}`,
		"open to anything":     `{"type":"object","properties":{"path":{"type":"string"},"limit":{"type":"integer","minimum":1}},"required":["path"]}`,
	} {
		if f := conform(t, lying{honest, schema}); len(f) == 0 {
			t.Errorf("%s: Conform passed %s", name, schema)
		}
	}
}
