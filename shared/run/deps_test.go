package run_test

import (
	"testing"

	"github.com/agentsfleet/agentsfleet/shared/depcheck"
)

// TestIsALeaf: the run vocabulary imports only the standard library, so
// that the API's shapes, its client and every door may use it.
func TestIsALeaf(t *testing.T) {
	t.Parallel()
	depcheck.Only(t, ".")
}
