package runner

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// DefaultLease is how long a runner holds a run (or a child agent) between
// renewals when Config.Lease is 0. An invocation that dies holding it
// leaves the run to whoever comes once it runs out: Lambda's retry, or the
// sweep (schedule/keeper, Keeper.Sweep).
const DefaultLease = 2 * time.Minute

// EnvLease is the runner function's setting for Config.Lease, in whole
// seconds: shorter makes a dead invocation's run taken over sooner (and
// the lease renewed more often, every third of it).
const EnvLease = "AGENTSFLEET_RUN_LEASE_SECONDS"

// LeaseFromEnv reads Config.Lease from EnvLease: 0 (DefaultLease) when it
// is unset; a value that is not a whole number of seconds from 3 to 3600 is
// an error naming it.
func LeaseFromEnv(getenv func(string) string) (time.Duration, error) {
	v := strings.TrimSpace(getenv(EnvLease))
	if v == "" {
		return 0, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 3 || n > 3600 {
		return 0, fmt.Errorf("%s=%q: want whole seconds from 3 to 3600 (default %d)", EnvLease, v, int(DefaultLease.Seconds()))
	}
	return time.Duration(n) * time.Second, nil
}
