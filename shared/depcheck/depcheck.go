// Package depcheck is for tests that keep a package's imports pointing
// down (DESIGN.md §10): Foreign lists what a package links beyond the
// standard library, as `go list -deps` sees it.
package depcheck

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// Foreign returns the packages pkg (an import path, or "." for the test's
// own) links, itself included, that are not in the standard library.
func Foreign(t testing.TB, pkg string) []string {
	t.Helper()
	out, err := exec.Command("go", "list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}", pkg).CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps %s: %v\n%s", pkg, err, out)
	}
	return strings.Fields(string(out))
}

// Only fails t for every package pkg links beyond the standard library
// that allowed does not name (pkg itself is allowed).
func Only(t testing.TB, pkg string, allowed ...string) {
	t.Helper()
	self := pkg
	if pkg == "." {
		out, err := exec.Command("go", "list", ".").Output()
		if err != nil {
			t.Fatalf("go list .: %v", err)
		}
		self = strings.TrimSpace(string(out))
	}
	for _, dep := range Foreign(t, pkg) {
		if dep != self && !slices.Contains(allowed, dep) {
			t.Errorf("%s links %s; it may link only %v beyond the standard library", self, dep, allowed)
		}
	}
}
