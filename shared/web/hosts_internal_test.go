package web

import (
	"testing"

	"github.com/agentsfleet/agentsfleet/shared/fleet"
	"github.com/agentsfleet/agentsfleet/shared/web/egress"
)

// The web client asks the fleet's list about hosts in egress.CanonicalHost
// form (IPv6 without brackets).
func TestListAllowsCanonicalHosts(t *testing.T) {
	t.Parallel()
	l, err := fleet.ParseHostList([]string{
		"https://api.github.com:443/repos", "API.Example.COM.", "hooks.slack.com:8443", "203.0.113.7",
		"[2001:db8::1]:8443", "bücher.example", "*.Corp.Example.",
	})
	if err != nil {
		t.Fatal(err)
	}
	for host, allowed := range map[string]bool{
		"api.github.com": true, "API.GITHUB.COM.": true, "github.com": false, "evil.api.github.com": false,
		"203.0.113.7": true, "3405803783": true, "203.0.113.8": false, "2001:db8::1": true, "2001:db8:0::1": true,
		"2001:db8::2": false, "bücher.example": true, "git.corp.example": true, "a.b.corp.example": true,
		"corp.example": false, "xcorp.example": false, "api.example.com": true, "hooks.slack.com": true,
	} {
		canonical, err := egress.CanonicalHost(host)
		if err != nil {
			t.Fatalf("CanonicalHost(%q): %v", host, err)
		}
		if got := l.Allows(canonical); got != allowed {
			t.Errorf("Allows(%q → %q) = %v, want %v", host, canonical, got, allowed)
		}
	}
}
