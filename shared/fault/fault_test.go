package fault_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/agentsfleet/agentsfleet/shared/fault"
)

func TestCodesMatchThroughWrapping(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		err  error
		want fault.Code
	}{
		{"bare", fault.SchedFleetCap, fault.SchedFleetCap},
		{"wrapped", fmt.Errorf("create schedule: %w", fault.RunMessageCap), fault.RunMessageCap},
		{"with message", fmt.Errorf("spawn: %w", fault.New(fault.ChildCapReached, "4 children are working")), fault.ChildCapReached},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if !errors.Is(tt.err, tt.want) {
				t.Fatalf("errors.Is(%v, %s) = false, want true", tt.err, tt.want.ID())
			}
			got, ok := fault.CodeOf(tt.err)
			if !ok || got != tt.want {
				t.Fatalf("CodeOf = %v, %v; want %s", got.ID(), ok, tt.want.ID())
			}
			if errors.Is(tt.err, fault.ChildNotFound) {
				t.Fatalf("errors.Is(%v, child_not_found) = true, want false", tt.err)
			}
		})
	}
}

func TestIDsAreUnique(t *testing.T) {
	t.Parallel()
	all := []fault.Code{fault.SchedFleetCap, fault.SchedPersonOwns, fault.SchedNotRunnable, fault.SchedTotalCap,
		fault.SchedNotFound, fault.FleetPaused, fault.FleetNotFound, fault.FleetExists, fault.RunNoThread,
		fault.RunMessageCap, fault.RunNotFound, fault.RunBadTransition, fault.RunLeaseHeld, fault.RunBudgetSpent,
		fault.ChildCapReached, fault.ChildToolNotHeld, fault.ChildNotFound, fault.ChildDepth, fault.DefinitionInvalid,
		fault.RevisionNotFound, fault.RequestInvalid, fault.ScopeMissing}
	seen := map[string]bool{}
	for _, c := range all {
		if seen[c.ID()] {
			t.Errorf("code %s defined twice", c.ID())
		}
		seen[c.ID()] = true
		if c.HTTPStatus() < 400 {
			t.Errorf("code %s has status %d, want a 4xx or 5xx", c.ID(), c.HTTPStatus())
		}
	}
}
