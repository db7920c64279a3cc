package control_test

import (
	"os/exec"
	"strings"
	"testing"
)

// TestLinksNoAWS: the contracts are read by the catalog (agentsfleet
// tools) and the functions that list tools; stating a limit or a code must
// not link the store and the AWS SDK behind it.
func TestLinksNoAWS(t *testing.T) {
	t.Parallel()
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command")
	}
	out, err := exec.Command(gobin, "list", "-deps", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	var aws []string
	for _, pkg := range strings.Fields(string(out)) {
		if strings.HasPrefix(pkg, "github.com/aws/") {
			aws = append(aws, pkg)
		}
	}
	if len(aws) > 0 {
		t.Errorf("go list -deps ./shared/runner/control names %d AWS SDK packages, want none:\n%s", len(aws), strings.Join(aws, "\n"))
	}
}
