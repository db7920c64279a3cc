package toolbox_test

import (
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/agentsfleet/agentsfleet/shared/fleet"
	"github.com/agentsfleet/agentsfleet/shared/tool/tooltest"
	"github.com/agentsfleet/agentsfleet/shared/toolbox"
)

// TestCatalogAndContractsAgree: every catalog name has a contract that runs
// where the catalog says, and no contract is missing from the catalog.
func TestCatalogAndContractsAgree(t *testing.T) {
	t.Parallel()
	all, err := toolbox.All()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range all {
		names = append(names, e.Name)
		if e.Spec.Name() != e.Name {
			t.Errorf("entry %q carries the contract of %q", e.Name, e.Spec.Name())
		}
	}
	if want := fleet.ToolNames(); !slices.Equal(names, want) {
		t.Errorf("toolbox names %q, catalog %q", names, want)
	}
	if e, ok := toolbox.Lookup("read"); !ok || e.RunsIn != fleet.InSandbox || e.Scope != fleet.ScopeFiles {
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
	all, err := toolbox.All()
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range all {
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
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command")
	}
	out, err := exec.Command(gobin, "list", "-deps", "-f", "{{if and .CgoFiles (not .Standard)}}{{.ImportPath}}{{end}}", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	if s := strings.TrimSpace(string(out)); s != "" {
		t.Errorf("toolbox depends on packages that need cgo:\n%s", s)
	}
}
