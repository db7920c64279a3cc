package limit_test

import (
	"testing"

	"github.com/agentsfleet/agentsfleet/shared/depcheck"
)

// TestImportsOnlyTheStandardLibrary: any package may name a limit.
func TestImportsOnlyTheStandardLibrary(t *testing.T) {
	t.Parallel()
	depcheck.Only(t, ".")
}
