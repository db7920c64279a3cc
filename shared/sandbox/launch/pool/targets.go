package pool

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/agentsfleet/agentsfleet/shared/fleet"
	"github.com/agentsfleet/agentsfleet/shared/setting"
)

// The settings of the pool's targets, in the runner λ and in `agentsfleet
// run` and `agentsfleet dev`.
const (
	// TargetsEnv is the setting ParseTargets reads: Config.Target.
	TargetsEnv = "AGENTSFLEET_SANDBOX_WARM"
	// BrowserTargetsEnv is the setting ParseBrowserTargets reads, in the
	// same form: Config.BrowserTarget, the idle sandboxes with a browser.
	BrowserTargetsEnv = "AGENTSFLEET_SANDBOX_BROWSER_WARM"
)

// Settings are the variables TargetsFromEnv and BrowserTargetsFromEnv
// read: TargetsEnv and BrowserTargetsEnv, optional.
func Settings() []setting.Var { return []setting.Var{{Name: TargetsEnv}, {Name: BrowserTargetsEnv}} }

// TargetsFromEnv is ParseTargets of TargetsEnv's value: every size at 0
// when it is unset.
func TargetsFromEnv(getenv func(string) string) (map[fleet.SandboxSize]int, error) {
	return ParseTargets(getenv(TargetsEnv))
}

// BrowserTargetsFromEnv is ParseBrowserTargets of BrowserTargetsEnv's
// value: every size at 0 when it is unset.
func BrowserTargetsFromEnv(getenv func(string) string) (map[fleet.SandboxSize]int, error) {
	return ParseBrowserTargets(getenv(BrowserTargetsEnv))
}

// ParseTargets reads a warm pool's size for each sandbox size, Config.Target,
// from the form of TargetsEnv: comma-separated SIZE=COUNT pairs such as
// "small=2,medium=1". Sizes at 0 are left out; "" gives an empty map. An
// error names TargetsEnv and the pair it refuses.
func ParseTargets(v string) (map[fleet.SandboxSize]int, error) { return parseTargets(TargetsEnv, v) }

// ParseBrowserTargets is ParseTargets for Config.BrowserTarget: the same
// form, an error naming BrowserTargetsEnv.
func ParseBrowserTargets(v string) (map[fleet.SandboxSize]int, error) {
	return parseTargets(BrowserTargetsEnv, v)
}

func parseTargets(env, v string) (map[fleet.SandboxSize]int, error) {
	out := map[fleet.SandboxSize]int{}
	for _, part := range strings.Split(v, ",") {
		if part = strings.TrimSpace(part); part == "" {
			continue
		}
		name, num, ok := strings.Cut(part, "=")
		n, err := strconv.Atoi(strings.TrimSpace(num))
		size := fleet.SandboxSize(strings.TrimSpace(name))
		if !ok || err != nil || n < 0 || !size.Valid() {
			return nil, fmt.Errorf("%s: %q: want SIZE=COUNT pairs such as small=2,medium=1, with a sandbox size and a count of 0 or more", env, part)
		}
		if n > 0 {
			out[size] = n
		}
	}
	return out, nil
}

// FormatTargets writes targets in ParseTargets's form, sizes in the order
// of fleet.SandboxSizes; "none" when every size is at 0.
func FormatTargets(targets map[fleet.SandboxSize]int) string {
	var parts []string
	for _, size := range fleet.SandboxSizes() {
		if n := targets[size]; n > 0 {
			parts = append(parts, string(size)+"="+strconv.Itoa(n))
		}
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ",")
}
