package fleet_test

import (
	"github.com/agentsfleet/agentsfleet/shared/fleet"
	"testing"
)

func TestAllowApplyRoundTrips(t *testing.T) {
	t.Parallel()
	d, err := fleet.ParseTOML([]byte("name = \"ops\"\ninstructions = \"x\"\n[x-agentsfleet.slack]\nallow_apply = [\"U0123ABCD\", \"S0456EFGH\"]\n"))
	if err != nil || len(d.SlackAccess.AllowApply) != 2 {
		t.Fatalf("ParseTOML = %+v, %v; want two on allow_apply", d, err)
	}
	back, err := fleet.ParseTOML(d.TOML())
	if err != nil || back.Hash() != d.Hash() || len(back.SlackAccess.AllowApply) != 2 {
		t.Fatalf("TOML round trip = %v, %v", back, err)
	}
	if _, err := fleet.ParseTOML([]byte("name = \"ops\"\ninstructions = \"x\"\n[x-agentsfleet.slack]\nallow_apply = [\"bob\"]\n")); err == nil {
		t.Fatal("allow_apply with a name that is no Slack id: no error")
	}
}
