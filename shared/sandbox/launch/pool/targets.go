package pool

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/agentsfleet/agentsfleet/shared/fleet"
	"github.com/agentsfleet/agentsfleet/shared/setting"
)

// TargetsEnv is the setting ParseTargets reads, in the runner λ and in
// `agentsfleet run` and `agentsfleet dev`.
const TargetsEnv = "AGENTSFLEET_SANDBOX_WARM"

// Settings are the variables TargetsFromEnv reads: TargetsEnv, optional.
func Settings() []setting.Var { return []setting.Var{{Name: TargetsEnv}} }

// TargetsFromEnv is ParseTargets of TargetsEnv's value: every size at 0
// when it is unset.
func TargetsFromEnv(getenv func(string) string) (map[fleet.SandboxSize]int, error) {
	return ParseTargets(getenv(TargetsEnv))
}

// ParseTargets reads a warm pool's size for each sandbox size, Config.Target,
// from the form of TargetsEnv: comma-separated SIZE=COUNT pairs such as
// "small=2,medium=1". Sizes at 0 are left out; "" gives an empty map. An
// error names TargetsEnv and the pair it refuses.
func ParseTargets(v string) (map[fleet.SandboxSize]int, error) {
	out := map[fleet.SandboxSize]int{}
	for _, part := range strings.Split(v, ",") {
		if part = strings.TrimSpace(part); part == "" {
			continue
		}
		name, num, ok := strings.Cut(part, "=")
		n, err := strconv.Atoi(strings.TrimSpace(num))
		size := fleet.SandboxSize(strings.TrimSpace(name))
		if !ok || err != nil || n < 0 || !size.Valid() {
			return nil, fmt.Errorf("%s: %q: want SIZE=COUNT pairs such as small=2,medium=1, with a sandbox size and a count of 0 or more", TargetsEnv, part)
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
