package egress

import (
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"strconv"

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
// non-zero port, or AllowFromEnv returns an error. Inside Lambda
// (AWS_LAMBDA_RUNTIME_API set) it is refused when it names the Runtime
// API's own address, which loopback serves there: a fleet must never reach
// the invocations of its function. (A deployment on one machine, package
// e2e/deployment, runs the real bootstraps under a Runtime API of its own
// and admits a test server this way; the stack never sets it, which its
// settings test checks.) When it is accepted, it is logged at WARN on log
// (slog.Default() if nil) so that nobody runs with it unknowingly.
//
// This is the only way to set Policy.Allow outside Go tests: nothing in a
// fleet Definition or a tool request reaches it.
func AllowFromEnv(getenv func(string) string, log *slog.Logger) (netip.AddrPort, error) {
	v := getenv(AllowEnv)
	if v == "" {
		return netip.AddrPort{}, nil
	}
	ap, err := netip.ParseAddrPort(v)
	if err != nil || !ap.Addr().Unmap().IsLoopback() || ap.Port() == 0 {
		return netip.AddrPort{}, fmt.Errorf("%s=%q: want a loopback ip:port such as 127.0.0.1:8080", AllowEnv, v)
	}
	if rt := getenv(setting.LambdaRuntimeAPI); rt != "" {
		if _, port, err := net.SplitHostPort(rt); err != nil || port == strconv.Itoa(int(ap.Port())) {
			return netip.AddrPort{}, fmt.Errorf("%s=%s is refused inside Lambda: it names the port of the Lambda Runtime API (%s)", AllowEnv, v, rt)
		}
	}
	if log == nil {
		log = slog.Default()
	}
	log.Warn("TEST-ONLY EGRESS ESCAPE HATCH IS SET: web tools may reach this one loopback address; never set this in production",
		"env", AllowEnv, "addr", ap.String())
	return ap, nil
}
