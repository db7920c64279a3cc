package scope_test

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/agentsfleet/agentsfleet/shared/fault"
	"github.com/agentsfleet/agentsfleet/shared/fleet"
	"github.com/agentsfleet/agentsfleet/shared/scope"
)

func TestAllHoldsEveryToolScopeOnce(t *testing.T) {
	t.Parallel()
	names := scope.Names()
	for _, s := range fleet.Scopes() {
		if !slices.Contains(names, s) {
			t.Errorf("Names() lacks tool scope %s", s)
		}
	}
	seen := map[string]bool{}
	for _, s := range scope.All() {
		if seen[s.Name] {
			t.Errorf("scope %s listed twice", s.Name)
		}
		seen[s.Name] = true
		if s.Allows == "" {
			t.Errorf("scope %s says nothing about what it allows", s.Name)
		}
	}
	if got, want := len(names), 9+len(fleet.Scopes()); got != want {
		t.Errorf("len(Names()) = %d, want %d", got, want)
	}
}

func TestCheck(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		scopes  []string
		wantBad []string
	}{
		{"none", nil, nil},
		{"api and tool scopes", []string{scope.RunsWrite, fleet.ScopeExecute, scope.KeysAdmin}, nil},
		{"one unknown", []string{scope.RunsRead, "runs:delete"}, []string{`"runs:delete"`}},
		{"several unknown, repeated", []string{"admin", "*", "admin"}, []string{`"admin"`, `"*"`}},
		{"case matters", []string{"Runs:Read"}, []string{`"Runs:Read"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err := scope.Check(tt.scopes)
			if tt.wantBad == nil {
				if err != nil {
					t.Fatalf("Check(%q) = %v, want nil", tt.scopes, err)
				}
				return
			}
			if !errors.Is(err, fault.RequestInvalid) {
				t.Fatalf("Check(%q) = %v, want %s", tt.scopes, err, fault.RequestInvalid.ID())
			}
			msg := err.Error()
			for _, b := range tt.wantBad {
				if strings.Count(msg, b) != 1 {
					t.Errorf("message %q names %s %d times, want once", msg, b, strings.Count(msg, b))
				}
			}
			for _, v := range []string{scope.FleetsWrite, fleet.ScopeFiles, scope.SlackAdmin} {
				if !strings.Contains(msg, v) {
					t.Errorf("message %q does not list valid scope %s", msg, v)
				}
			}
		})
	}
}
