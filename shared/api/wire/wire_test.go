package wire_test

import (
	"testing"

	"github.com/agentsfleet/agentsfleet/shared/depcheck"
)

// TestImportsNothingHeavy: the API's shapes import only the run
// vocabulary beyond the standard library.
func TestImportsNothingHeavy(t *testing.T) {
	t.Parallel()
	depcheck.Only(t, ".", "github.com/agentsfleet/agentsfleet/shared/run")
}
