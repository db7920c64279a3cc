package toolbox

import (
	"strings"
	"testing"

	"github.com/agentsfleet/agentsfleet/shared/tool"
)

type noArgs struct{}

// A contract that does not say where it runs, one in a package that does
// not serve its place, and two contracts of one name keep the catalog from
// being made.
func TestBuildRefusesContractsThatDisagree(t *testing.T) {
	t.Parallel()
	placed := func(name string, at tool.Location) tool.Spec {
		return tool.Define[noArgs](tool.About{Name: name, RunsIn: at, Scope: tool.ScopeFiles, Summary: "s"})
	}
	unplaced := tool.Define[noArgs](tool.About{Name: "stray"})
	sandboxd := []tool.Location{tool.InSandbox, tool.InDisplay}
	tests := map[string]struct {
		srcs []source
		want string
	}{
		"no place": {
			[]source{{"shared/sandbox", []tool.Spec{placed("a", tool.InSandbox), unplaced}, sandboxd}},
			`shared/sandbox: the contract of "stray" does not say where it runs`,
		},
		"another package's place": {
			[]source{{"shared/sandbox", []tool.Spec{placed("fetch", tool.InWebtools)}, sandboxd}},
			`shared/sandbox: the contract of "fetch" runs it in the webtools, which does not serve tools from shared/sandbox`,
		},
		"two of a name": {
			[]source{
				{"shared/sandbox", []tool.Spec{placed("a", tool.InSandbox)}, sandboxd},
				{"shared/runner/control", []tool.Spec{placed("a", tool.InRunner)}, []tool.Location{tool.InRunner}},
			},
			`two contracts for tool "a", in shared/sandbox and shared/runner/control`,
		},
	}
	for name, tt := range tests {
		_, err := build(tt.srcs)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: build = %v, want an error containing %q", name, err, tt.want)
		}
	}
	got, err := build([]source{{"shared/sandbox", []tool.Spec{placed("b", tool.InDisplay), placed("a", tool.InSandbox)}, sandboxd}})
	if err != nil || len(got) != 2 || got[0].Name != "a" || got[1].RunsIn != tool.InDisplay {
		t.Errorf("build = %+v, %v; want a then b, in the display", got, err)
	}
}
