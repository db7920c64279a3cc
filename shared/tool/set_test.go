package tool_test

import (
	"slices"
	"testing"

	"github.com/agentsfleet/agentsfleet/shared/tool"
)

// A Set holds every contract defined in it, sorted by name, each with the
// place and scope its About gave; a second tool of one name panics.
func TestSet(t *testing.T) {
	t.Parallel()
	var set tool.Set
	b := tool.DefineIn[sampleArgs](&set, tool.About{Name: "b", RunsIn: tool.InSandbox, Scope: tool.ScopeFiles, Summary: "Bees"})
	tool.DefineIn[sampleArgs](&set, tool.About{Name: "a", RunsIn: tool.InRunner, Scope: tool.ScopeControl, Builtin: true, Summary: "Ants"})
	if got, want := tool.Names(set.Specs()), []string{"a", "b"}; !slices.Equal(got, want) {
		t.Errorf("Specs() names %q, want %q", got, want)
	}
	if got := set.Specs()[0]; got.Name() != "a" || !got.Info().Builtin {
		t.Errorf("Specs()[0] = %s %+v, want a, built-in", got.Name(), got.Info())
	}
	want := tool.Info{Name: "b", RunsIn: tool.InSandbox, Scope: tool.ScopeFiles, Summary: "Bees"}
	if got := b.Info(); got != want {
		t.Errorf("Info() = %+v, want %+v", got, want)
	}
	if got := tool.Unbuilt(b, "why").Info(); got != want {
		t.Errorf("Unbuilt(b).Info() = %+v, want %+v", got, want)
	}
	defer func() {
		if recover() == nil {
			t.Error("DefineIn accepted a second tool called b")
		}
	}()
	tool.DefineIn[sampleArgs](&set, tool.About{Name: "b"})
}
