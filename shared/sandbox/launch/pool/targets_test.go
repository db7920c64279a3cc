//go:build linux

package pool_test

import (
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/agentsfleet/agentsfleet/shared/fleet"
	"github.com/agentsfleet/agentsfleet/shared/sandbox/launch/pool"
	"github.com/agentsfleet/agentsfleet/shared/setting"
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

// TestBrowserTargetsFromEnv: the browser pool's setting has the plain one's
// form, each read from its own variable, and a bad value names its own.
func TestBrowserTargetsFromEnv(t *testing.T) {
	t.Parallel()
	env := map[string]string{pool.TargetsEnv: "small=2", pool.BrowserTargetsEnv: "medium=1"}
	getenv := func(k string) string { return env[k] }
	plain, err := pool.TargetsFromEnv(getenv)
	if err != nil || pool.FormatTargets(plain) != "small=2" {
		t.Errorf("TargetsFromEnv = %v, %v; want small=2", plain, err)
	}
	browser, err := pool.BrowserTargetsFromEnv(getenv)
	if err != nil || pool.FormatTargets(browser) != "medium=1" {
		t.Errorf("BrowserTargetsFromEnv = %v, %v; want medium=1", browser, err)
	}
	if got, err := pool.BrowserTargetsFromEnv(func(string) string { return "" }); err != nil || len(got) != 0 {
		t.Errorf("BrowserTargetsFromEnv unset = %v, %v; want none and no error", got, err)
	}
	for _, bad := range []string{"small", "huge=1", "small=-1", "medium=one"} {
		_, err := pool.ParseBrowserTargets(bad)
		if err == nil || !strings.Contains(err.Error(), pool.BrowserTargetsEnv) || !strings.Contains(err.Error(), strconv.Quote(bad)) {
			t.Errorf("ParseBrowserTargets(%q) = %v, want an error naming %s and the pair", bad, err, pool.BrowserTargetsEnv)
		}
	}
	if names := setting.Names(pool.Settings()); !slices.Equal(names, []string{pool.TargetsEnv, pool.BrowserTargetsEnv}) {
		t.Errorf("Settings = %q, want both targets' variables", names)
	}
}
