package wire_test

import (
	"testing"

	"github.com/agentsfleet/agentsfleet/shared/depcheck"
)

// TestImportsNothingHeavy: the webtools payload links nothing beyond the
// standard library, so that its callers do not link the web tools.
func TestImportsNothingHeavy(t *testing.T) {
	t.Parallel()
	depcheck.Only(t, ".")
}
