package runner_test

import (
	"testing"

	afrun "github.com/agentsfleet/agentsfleet/shared/run"
	"github.com/agentsfleet/agentsfleet/shared/store"
)

// TestStatusesAgree: store.Status holds the same values as run.Status, the
// runner converting between them, until the store's type is an alias of
// package run's.
func TestStatusesAgree(t *testing.T) {
	t.Parallel()
	pairs := []struct {
		store store.Status
		run   afrun.Status
	}{
		{store.StatusQueued, afrun.StatusQueued},
		{store.StatusRunning, afrun.StatusRunning},
		{store.StatusWaiting, afrun.StatusWaiting},
		{store.StatusSucceeded, afrun.StatusSucceeded},
		{store.StatusFailed, afrun.StatusFailed},
		{store.StatusCancelled, afrun.StatusCancelled},
	}
	for _, p := range pairs {
		if string(p.store) != string(p.run) {
			t.Errorf("store status %q, run status %q; want them equal", p.store, p.run)
		}
	}
}
