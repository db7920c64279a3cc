package sandbox

import (
	"fmt"
	"regexp"
	"strings"
)

// The variables that carry a declared tool's arguments to its command
// (see wire.DeclaredTool): each top-level argument in DeclaredArgEnvPrefix
// and its name upper-cased, all of them as JSON in DeclaredArgsEnv.
const (
	DeclaredArgEnvPrefix = "AGENTSFLEET_ARG_"
	DeclaredArgsEnv      = "AGENTSFLEET_ARGS"
)

// ArgProblem says why an argument called name cannot reach a declared
// tool's command as the variable DeclaredArgEnvPrefix + NAME, or returns
// "": the name must be 1 to 128 letters, digits and underscores, not
// starting with a digit, and the variable's name must not hold a word for
// which sandboxd keeps a variable out of every command's environment
// (TOKEN, SECRET or PASSWORD, or ending in _KEY: confine.Scrub).
func ArgProblem(name string) string {
	const rule = "a parameter's name is also an environment variable's: letters, digits and underscores, not starting with a digit"
	if !envName(name) || len(name) > 128 {
		shown := name
		if len(shown) > 40 {
			shown = shown[:40] + "…"
		}
		return fmt.Sprintf("%q cannot be a parameter name; %s, at most 128", shown, rule)
	}
	up := DeclaredArgEnvPrefix + strings.ToUpper(name)
	for _, w := range []string{"TOKEN", "SECRET", "PASSWORD"} {
		if strings.Contains(up, w) {
			return fmt.Sprintf("%q cannot be a parameter name: the sandbox keeps variables whose name holds %s (here %s) out of every command's environment", name, w, up)
		}
	}
	if strings.HasSuffix(up, "_KEY") {
		return fmt.Sprintf("%q cannot be a parameter name: the sandbox keeps variables whose name ends in _KEY (here %s) out of every command's environment", name, up)
	}
	return ""
}

// envName matches letters, digits and underscores, not starting with a
// digit: a variable's name.
var envName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`).MatchString
