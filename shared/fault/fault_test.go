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
	codes := fault.Codes()
	if len(codes) == 0 {
		t.Fatal("Codes() is empty")
	}
	seen := map[string]bool{}
	for _, c := range codes {
		if c.ID() == "" || c.Error() == c.ID()+": " {
			t.Errorf("code %q has no ID or no text", c.Error())
		}
		if seen[c.ID()] {
			t.Errorf("code %s defined twice", c.ID())
		}
		seen[c.ID()] = true
	}
	// Spot checks that Codes holds the declared codes, of both kinds.
	for _, c := range []fault.Code{fault.SchedFleetCap, fault.ChildNotFound, fault.RunBudgetSpent, fault.RequestInvalid} {
		if !seen[c.ID()] {
			t.Errorf("Codes() lacks %s", c.ID())
		}
	}
}

// The codes the specification names (its sections on child agents and
// limits). UZ-RUN-402 (examples/reference.toml) and UZ-KEY-403 (the key
// scopes of DESIGN.md) are not among them: the specification names neither.
var specIDs = []string{
	"UZ-SCHED-009", "UZ-SCHED-010", "UZ-SCHED-011", "UZ-AGT-012", "UZ-RUN-019", "UZ-RUN-020",
	"child_cap_reached", "child_tool_not_held", "child_not_found",
}

func TestFromSpecIsTrueExactlyForTheSpecificationsCodes(t *testing.T) {
	t.Parallel()
	want := map[string]bool{}
	for _, id := range specIDs {
		want[id] = true
	}
	found := map[string]bool{}
	for _, c := range fault.Codes() {
		found[c.ID()] = true
		if got := c.FromSpec(); got != want[c.ID()] {
			t.Errorf("%s.FromSpec() = %v, want %v", c.ID(), got, want[c.ID()])
		}
	}
	for _, id := range specIDs {
		if !found[id] {
			t.Errorf("the specification names %s; no code has that ID", id)
		}
	}
}
