package client_test

import (
	"testing"

	"github.com/agentsfleet/agentsfleet/shared/depcheck"
)

// TestLinksOnlyTheWire: the client links the API's shapes and the run
// vocabulary, never the server, the store, the agent loop or the AWS SDK,
// so that a program speaking to agentsfleet stays small.
func TestLinksOnlyTheWire(t *testing.T) {
	t.Parallel()
	depcheck.Only(t, ".", "github.com/agentsfleet/agentsfleet/shared/api/wire", "github.com/agentsfleet/agentsfleet/shared/run")
}
