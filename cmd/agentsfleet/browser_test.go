package main

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// fakeChromium is an executable file standing in for Chromium: the tests
// that find it start no browser.
func fakeChromium(t *testing.T) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "chromium")
	if err := os.WriteFile(p, []byte("#!/bin/sh\nexit 0\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestFindBrowser(t *testing.T) {
	t.Parallel()
	chromium := fakeChromium(t)
	notExec := filepath.Join(t.TempDir(), "chromium")
	if err := os.WriteFile(notExec, []byte("not a program"), 0o644); err != nil {
		t.Fatal(err)
	}
	// onPath finds the names it is given, as PATH would.
	onPath := func(found map[string]string) func(string) (string, error) {
		return func(name string) (string, error) {
			if p, ok := found[name]; ok {
				return p, nil
			}
			if strings.Contains(name, "/") {
				return exec.LookPath(name)
			}
			return "", exec.ErrNotFound
		}
	}
	for _, tt := range []struct {
		name     string
		setting  string
		path     map[string]string
		want     string // the path found
		wantWhy  string
		wantUsed bool // a usage error
	}{
		{"the setting's path", chromium, nil, chromium, "", false},
		{"off", "off", map[string]string{"chromium": "/usr/bin/chromium"}, "", "AGENTSFLEET_BROWSER=off turns them off", false},
		{"OFF", " OFF ", nil, "", "AGENTSFLEET_BROWSER=off", false},
		{"a path that does not exist", "/no/such/chromium", nil, "", "", true},
		{"a file that is not a program", notExec, nil, "", "", true},
		{"chromium first on PATH", "", map[string]string{"chromium": "/usr/bin/chromium", "google-chrome": "/opt/google/chrome"}, "/usr/bin/chromium", "", false},
		{"chromium-browser", "", map[string]string{"chromium-browser": "/usr/bin/chromium-browser", "google-chrome": "/opt/google/chrome"}, "/usr/bin/chromium-browser", "", false},
		{"google-chrome", "", map[string]string{"google-chrome": "/opt/google/chrome"}, "/opt/google/chrome", "", false},
		{"none", "", nil, "", noChromium, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b, err := findBrowser(browserEnv(tt.setting), onPath(tt.path))
			if tt.wantUsed {
				if !errors.Is(err, errUsage) || !strings.Contains(err.Error(), envBrowser+"="+tt.setting) {
					t.Errorf("findBrowser = %+v, %v; want a usage error naming %s=%s", b, err, envBrowser, tt.setting)
				}
				return
			}
			if err != nil || b.Path != tt.want || !strings.Contains(b.Why, tt.wantWhy) {
				t.Errorf("findBrowser = %+v, %v; want path %q, why %q", b, err, tt.want, tt.wantWhy)
			}
		})
	}
	if got := (browser{Path: "/usr/bin/chromium"}).String(); got != "Chromium at /usr/bin/chromium" {
		t.Errorf("the line of a Chromium = %q", got)
	}
	if got := (browser{Why: noChromium}).String(); got != "not available: "+noChromium ||
		!strings.Contains(got, "make tools") || !strings.Contains(got, envBrowser) {
		t.Errorf("the line without one = %q; want it to say make tools and %s", got, envBrowser)
	}
}

// TestBrowserWarmSetting: AGENTSFLEET_SANDBOX_BROWSER_WARM keeps idle
// sandboxes with a browser only where there is a Chromium; a bad value, or
// one without a Chromium, is a usage error naming the setting.
func TestBrowserWarmSetting(t *testing.T) {
	t.Parallel()
	env := func(kv ...string) func(string) string {
		m := map[string]string{}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return func(k string) string { return m[k] }
	}
	chromium := fakeChromium(t)
	b, warm, err := browserSetting(env(envBrowser, chromium, "AGENTSFLEET_SANDBOX_BROWSER_WARM", "small=1"))
	if err != nil || b.Path != chromium || warm["small"] != 1 {
		t.Errorf("browserSetting = %+v, %v, %v; want the Chromium and small=1", b, warm, err)
	}
	for _, getenv := range []func(string) string{
		env(envBrowser, "off", "AGENTSFLEET_SANDBOX_BROWSER_WARM", "small=1"),
		env(envBrowser, chromium, "AGENTSFLEET_SANDBOX_BROWSER_WARM", "small=lots"),
	} {
		if _, _, err := browserSetting(getenv); !errors.Is(err, errUsage) || !strings.Contains(err.Error(), "AGENTSFLEET_SANDBOX_BROWSER_WARM") {
			t.Errorf("browserSetting = %v, want a usage error naming AGENTSFLEET_SANDBOX_BROWSER_WARM", err)
		}
	}
}
