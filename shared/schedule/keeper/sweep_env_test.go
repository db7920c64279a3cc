package keeper_test

import (
	"testing"
	"time"

	"github.com/agentsfleet/agentsfleet/shared/schedule/keeper"
)

func TestSweepFromEnv(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		v    string
		want time.Duration
		bad  bool
	}{
		{"", 0, false},
		{"1", time.Second, false},
		{"300", 5 * time.Minute, false},
		{"0", 0, true},
		{"-5", 0, true},
		{"5m", 0, true},
	} {
		got, err := keeper.SweepFromEnv(func(k string) string {
			if k == keeper.EnvSweepGrace {
				return tc.v
			}
			return ""
		})
		if got != tc.want || (err != nil) != tc.bad {
			t.Errorf("%s=%q: %v, %v; want %v, refused %v", keeper.EnvSweepGrace, tc.v, got, err, tc.want, tc.bad)
		}
	}
}
