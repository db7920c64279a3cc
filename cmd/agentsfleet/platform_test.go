package main

import (
	"strings"
	"testing"
)

func TestNeedsLinux(t *testing.T) {
	t.Parallel()
	for _, cmd := range []string{"dev", "run"} {
		if err := needsLinux(cmd, "linux"); err != nil {
			t.Errorf("needsLinux(%q, linux) = %v, want nil", cmd, err)
		}
		for _, goos := range []string{"darwin", "freebsd"} {
			err := needsLinux(cmd, goos)
			if err == nil {
				t.Fatalf("needsLinux(%q, %s) = nil, want an error", cmd, goos)
			}
			msg := err.Error()
			// One sentence on one line, saying what is missing and where
			// to go instead: a Linux machine, or a deployment over --api.
			if strings.Contains(msg, "\n") || strings.Contains(strings.TrimSuffix(msg, "."), ". ") {
				t.Errorf("needsLinux(%q, %s) is not one sentence on one line: %q", cmd, goos, msg)
			}
			for _, want := range []string{cmd + " needs Linux", "seccomp and Landlock", "Linux machine", "make deploy", "--api URL --key KEY"} {
				if !strings.Contains(msg, want) {
					t.Errorf("needsLinux(%q, %s) = %q, want it to say %q", cmd, goos, msg, want)
				}
			}
		}
	}
	if got := needsLinux("dev", "darwin").Error(); !strings.Contains(got, "macOS does not have") {
		t.Errorf("needsLinux(dev, darwin) = %q, want it to name macOS", got)
	}
	if got := needsLinux("run", "darwin").Error(); !strings.Contains(got, "apply -f DEFINITION, then start FLEET INPUT --follow") {
		t.Errorf("needsLinux(run, darwin) = %q, want it to name the commands that run the fleet on a deployment", got)
	}
}

func TestVersionString(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		stamped  string
		settings map[string]string
		want     string
	}{
		{"v1.2.0-3-gabc1234-dirty", map[string]string{"vcs.revision": "0123456789abcdef"}, "v1.2.0-3-gabc1234-dirty"},
		{"", map[string]string{"vcs.revision": "0123456789abcdef", "vcs.modified": "true"}, "devel 0123456789ab-dirty"},
		{"", map[string]string{"vcs.revision": "0123456", "vcs.modified": "false"}, "devel 0123456"},
		{"", map[string]string{}, "devel"},
	} {
		if got := versionString(tc.stamped, tc.settings); got != tc.want {
			t.Errorf("versionString(%q, %v) = %q, want %q", tc.stamped, tc.settings, got, tc.want)
		}
	}
}
