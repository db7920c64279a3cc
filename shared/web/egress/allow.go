package egress

import (
	"fmt"
	"log/slog"
	"net/netip"

	"github.com/agentsfleet/agentsfleet/shared/setting"
)

// AllowEnv names the environment variable holding the test-only escape
// hatch: one loopback ip:port (such as 127.0.0.1:8080, an httptest server)
// that the policy admits whatever its address and port.
const AllowEnv = "AGENTSFLEET_TEST_ALLOW_ADDR"

// Settings are the variables AllowFromEnv reads: AllowEnv, optional, and,
// when it is set, Lambda's own setting.LambdaRuntimeAPI.
func Settings() []setting.Var {
	return []setting.Var{{Name: AllowEnv}, {Name: setting.LambdaRuntimeAPI}}
}

// AllowFromEnv reads AllowEnv with getenv. Unset, it returns the zero
// AddrPort (nothing admitted). Set, it must be a loopback ip:port with a
// non-zero port, or AllowFromEnv returns an error; the setting is refused
// inside Lambda (AWS_LAMBDA_RUNTIME_API set), where loopback serves the
// Lambda runtime API. When it is accepted, it is logged at WARN on log
// (slog.Default() if nil) so that nobody runs with it unknowingly.
//
// This is the only way to set Policy.Allow outside Go tests: nothing in a
// fleet Definition or a tool request reaches it.
func AllowFromEnv(getenv func(string) string, log *slog.Logger) (netip.AddrPort, error) {
	v := getenv(AllowEnv)
	if v == "" {
		return netip.AddrPort{}, nil
	}
	if getenv(setting.LambdaRuntimeAPI) != "" {
		return netip.AddrPort{}, fmt.Errorf("%s is a test-only setting and is refused inside Lambda", AllowEnv)
	}
	ap, err := netip.ParseAddrPort(v)
	if err != nil || !ap.Addr().Unmap().IsLoopback() || ap.Port() == 0 {
		return netip.AddrPort{}, fmt.Errorf("%s=%q: want a loopback ip:port such as 127.0.0.1:8080", AllowEnv, v)
	}
	if log == nil {
		log = slog.Default()
	}
	log.Warn("TEST-ONLY EGRESS ESCAPE HATCH IS SET: web tools may reach this one loopback address; never set this in production",
		"env", AllowEnv, "addr", ap.String())
	return ap, nil
}
