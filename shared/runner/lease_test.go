//go:build linux

package runner_test

import (
	"testing"
	"time"

	"github.com/agentsfleet/agentsfleet/shared/runner"
)

func TestLeaseFromEnv(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		v    string
		want time.Duration
		bad  bool
	}{
		{"", 0, false},
		{"10", 10 * time.Second, false},
		{" 3600 ", time.Hour, false},
		{"2", 0, true},
		{"3601", 0, true},
		{"1m", 0, true},
	} {
		got, err := runner.LeaseFromEnv(func(k string) string {
			if k == runner.EnvLease {
				return tc.v
			}
			return ""
		})
		if got != tc.want || (err != nil) != tc.bad {
			t.Errorf("%s=%q: %v, %v; want %v, refused %v", runner.EnvLease, tc.v, got, err, tc.want, tc.bad)
		}
	}
}
