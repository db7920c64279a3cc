package toolbox_test

import (
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/agentsfleet/agentsfleet/shared/fleet"
	"github.com/agentsfleet/agentsfleet/shared/runner/control"
	"github.com/agentsfleet/agentsfleet/shared/sandbox"
	"github.com/agentsfleet/agentsfleet/shared/tool"
	"github.com/agentsfleet/agentsfleet/shared/tool/tooltest"
	"github.com/agentsfleet/agentsfleet/shared/toolbox"
	webspec "github.com/agentsfleet/agentsfleet/shared/web/spec"
)

// TestCatalogIsTheContracts: the catalog holds exactly the contracts of
// the three contract packages, each with the place and scope its own
// contract gives, and shared/fleet sees the same list.
func TestCatalogIsTheContracts(t *testing.T) {
	t.Parallel()
	specs := map[string]tool.Spec{}
	var want []string
	for _, list := range [][]tool.Spec{sandbox.Specs(), webspec.Specs(), control.Specs()} {
		for _, s := range list {
			specs[s.Name()] = s
			want = append(want, s.Name())
		}
	}
	slices.Sort(want)
	all := toolbox.All()
	var names []string
	for _, e := range all {
		names = append(names, e.Name)
		s := specs[e.Name]
		if e.Spec != s {
			t.Errorf("entry %q carries the contract of %q, want its own", e.Name, e.Spec.Name())
		}
		if s != nil && e.Info != s.Info() {
			t.Errorf("entry %q = %+v, its contract says %+v", e.Name, e.Info, s.Info())
		}
		if e.RunsIn == "" || e.Scope == "" || e.Summary == "" {
			t.Errorf("entry %q = %+v, want a place, a scope and a summary", e.Name, e.Info)
		}
	}
	if !slices.Equal(names, want) {
		t.Errorf("the catalog names %q, the contracts %q", names, want)
	}
	if got := toolbox.Names(); !slices.Equal(got, want) {
		t.Errorf("Names() = %q, want %q", got, want)
	}
	if got := fleet.ToolNames(); !slices.Equal(got, want) {
		t.Errorf("fleet.ToolNames() = %q, want %q", got, want)
	}
	if e, ok := toolbox.Lookup("read"); !ok || e.RunsIn != fleet.InSandbox || e.Scope != fleet.ScopeFiles || e.Spec != sandbox.Read {
		t.Errorf("Lookup(read) = %+v, %v", e, ok)
	}
	if _, ok := toolbox.Lookup("nope"); ok {
		t.Error("Lookup(nope) found a tool")
	}
}

// TestEverySchema is the table test over every tool's schema: valid JSON
// Schema, required fields as the tool requires them, every property of its
// args struct and no other, agreeing with the tool's own check.
func TestEverySchema(t *testing.T) {
	t.Parallel()
	for _, e := range toolbox.All() {
		t.Run(e.Name, func(t *testing.T) {
			t.Parallel()
			tooltest.Conform(t, e.Spec)
		})
	}
}

// TestCgoFree: the Lambdas (CGO_ENABLED=0) import this package through the
// runner; a contract that pulled in a cgo package (sandboxd's confine)
// would break their build.
func TestCgoFree(t *testing.T) {
	t.Parallel()
	out := goList(t, "{{if and .CgoFiles (not .Standard)}}{{.ImportPath}}{{end}}", ".")
	if s := strings.TrimSpace(out); s != "" {
		t.Errorf("toolbox depends on packages that need cgo:\n%s", s)
	}
}

// TestLinksNoImplementation: the api, slack and schedule functions check
// Definitions through shared/fleet, which reads this catalog; neither may
// link what runs the tools — the web tools' HTML stack, a model, the agent
// loop, the store — nor any AWS SDK client.
func TestLinksNoImplementation(t *testing.T) {
	t.Parallel()
	const mod = "github.com/agentsfleet/agentsfleet/"
	forbidden := func(p string) bool {
		switch {
		case strings.HasPrefix(p, "golang.org/x/net/html"),
			strings.HasPrefix(p, "github.com/aws/aws-sdk-go-v2/service/"),
			p == mod+"shared/model" || strings.HasPrefix(p, mod+"shared/model/"),
			p == mod+"shared/runner", // the loop; shared/runner/control's contracts are fine
			p == mod+"shared/web",
			p == mod+"shared/store",
			strings.HasPrefix(p, mod+"shared/sandbox/"): // sandboxd's implementations, its client
			return true
		}
		return false
	}
	for _, pkg := range []string{".", "../fleet"} {
		var bad []string
		for _, p := range strings.Fields(goList(t, "{{.ImportPath}}", pkg)) {
			if forbidden(p) {
				bad = append(bad, p)
			}
		}
		if len(bad) > 0 {
			t.Errorf("go list -deps %s names %d packages it must not link:\n%s", pkg, len(bad), strings.Join(bad, "\n"))
		}
	}
}

// goList runs go list -deps -f format pkg and returns its output.
func goList(t *testing.T, format, pkg string) string {
	t.Helper()
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command")
	}
	out, err := exec.Command(gobin, "list", "-deps", "-f", format, pkg).CombinedOutput()
	if err != nil {
		t.Fatalf("go list %s: %v\n%s", pkg, err, out)
	}
	return string(out)
}

// TestEveryContractBuilds: a contract's schema, checks and description are
// made on its first use (tool.Def), so this test uses each: a wrong rule or
// template in any tool fails here, not in a run.
func TestEveryContractBuilds(t *testing.T) {
	t.Parallel()
	for _, e := range toolbox.All() {
		func() {
			defer func() {
				if r := recover(); r != nil {
					t.Errorf("%s: %v", e.Name, r)
				}
			}()
			if len(e.Spec.Schema()) == 0 || e.Spec.Description() == "" {
				t.Errorf("%s: an empty schema or description", e.Name)
			}
			e.Spec.Check([]byte("{}"))
		}()
	}
}
