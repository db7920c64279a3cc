//go:build linux

package pool_test

import (
	"strings"
	"testing"

	"github.com/agentsfleet/agentsfleet/shared/fleet"
	"github.com/agentsfleet/agentsfleet/shared/sandbox/launch/pool"
)

func TestParseTargets(t *testing.T) {
	t.Parallel()
	got, err := pool.ParseTargets(" small=2, medium=0 ,large=1")
	if err != nil || len(got) != 2 || got[fleet.SizeSmall] != 2 || got[fleet.SizeLarge] != 1 {
		t.Errorf("ParseTargets = %v, %v; want small=2 and large=1 only", got, err)
	}
	if s := pool.FormatTargets(got); s != "small=2,large=1" {
		t.Errorf("FormatTargets(%v) = %q, want small=2,large=1", got, s)
	}
	if got, err := pool.ParseTargets(""); err != nil || len(got) != 0 {
		t.Errorf("ParseTargets(\"\") = %v, %v; want an empty map", got, err)
	}
	if s := pool.FormatTargets(nil); s != "none" {
		t.Errorf("FormatTargets(nil) = %q, want none", s)
	}
	for _, bad := range []string{"small", "huge=1", "small=-1", "small=two"} {
		if _, err := pool.ParseTargets(bad); err == nil || !strings.Contains(err.Error(), "AGENTSFLEET_SANDBOX_WARM") {
			t.Errorf("ParseTargets(%q) = %v, want an error naming the setting", bad, err)
		}
	}
}
