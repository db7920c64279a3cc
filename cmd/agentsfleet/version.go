package main

import (
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
)

// version is the release's, stamped by `make release` with
// -ldflags "-X main.version=$(git describe --always --dirty)"; empty in
// any other build, which then reports the commit Go recorded, if any.
var version string

// versionCmd is `agentsfleet version`: the version, then the system the
// binary was built for.
func versionCmd(args []string, out io.Writer) error {
	if len(args) > 0 {
		return fmt.Errorf("%w: version takes no arguments", errUsage)
	}
	fmt.Fprintf(out, "agentsfleet %s %s/%s\n", versionString(version, buildSettings()), runtime.GOOS, runtime.GOARCH)
	return nil
}

// versionString is stamped when set, else "devel" and the VCS revision
// (with "-dirty" when the tree had changes) from the build's settings.
func versionString(stamped string, settings map[string]string) string {
	if stamped != "" {
		return stamped
	}
	rev := settings["vcs.revision"]
	if rev == "" {
		return "devel"
	}
	if len(rev) > 12 {
		rev = rev[:12]
	}
	if settings["vcs.modified"] == "true" {
		rev += "-dirty"
	}
	return "devel " + rev
}

// buildSettings returns the build settings Go recorded in the binary.
func buildSettings() map[string]string {
	m := map[string]string{}
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, s := range bi.Settings {
			m[s.Key] = s.Value
		}
	}
	return m
}
