//go:build linux

package sandbox_test

import (
	"strings"
	"testing"

	"github.com/agentsfleet/agentsfleet/shared/sandbox"
	"github.com/agentsfleet/agentsfleet/shared/sandbox/confine"
)

// TestArgProblem: a name passes exactly when its variable is a valid name
// that confine.Scrub keeps.
func TestArgProblem(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"path", "Path_2", "_x", strings.Repeat("a", 128), "keys", "monkey_keys"} {
		if msg := sandbox.ArgProblem(name); msg != "" {
			t.Errorf("ArgProblem(%q) = %q, want none", name, msg)
		}
		if kv := sandbox.DeclaredArgEnvPrefix + strings.ToUpper(name) + "=v"; len(confine.Scrub([]string{kv})) != 1 {
			t.Errorf("%s passes but the sandbox scrubs it", kv)
		}
	}
	for _, name := range []string{"", "a-b", "1a", "a b", "é", strings.Repeat("a", 129), "key", "api_key", "my_token", "Secret", "password2", "x_KEY"} {
		if msg := sandbox.ArgProblem(name); msg == "" {
			t.Errorf("ArgProblem(%q) = none, want a problem", name)
		}
	}
}
