package main

import (
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/agentsfleet/agentsfleet/shared/fleet"
)

// envBrowser is the setting that picks the Chromium the local sandboxes
// drive for browser_open and screenshot: a path, or "off" for none.
const envBrowser = "AGENTSFLEET_BROWSER"

// browserOff is envBrowser's value that turns the browser tools off.
const browserOff = "off"

// browserNames are the programs looked for on PATH when envBrowser is
// unset, in order: Debian's chromium (what make tools installs), other
// distributions' name for it, Google's build.
var browserNames = []string{"chromium", "chromium-browser", "google-chrome"}

// noChromium is why the local sandboxes have no browser when none is found.
const noChromium = "no Chromium found on this machine (as root, make tools installs Debian's chromium; or set " + envBrowser + " to its path)"

// browser is the Chromium of this machine's sandboxes: Path, or none and
// Why (which says what to do for one).
type browser struct {
	Path string
	Why  string
}

// findBrowser is envBrowser's Chromium, none when it is "off", else the
// first of browserNames that lookPath finds. An envBrowser that names no
// executable file is a usage error saying so.
func findBrowser(getenv func(string) string, lookPath func(string) (string, error)) (browser, error) {
	switch v := strings.TrimSpace(getenv(envBrowser)); {
	case strings.EqualFold(v, browserOff):
		return browser{Why: envBrowser + "=" + browserOff + " turns them off"}, nil
	case v != "":
		p, err := lookPath(v)
		if err != nil {
			return browser{}, fmt.Errorf("%w: %s=%s: %v; want the path of a Chromium (such as /usr/bin/chromium), or %s", errUsage, envBrowser, v, unwrapExec(err), browserOff)
		}
		return browser{Path: absPath(p)}, nil
	}
	for _, name := range browserNames {
		if p, err := lookPath(name); err == nil {
			return browser{Path: absPath(p)}, nil
		}
	}
	return browser{Why: noChromium}, nil
}

// unwrapExec is exec's error without its "exec: NAME:" prefix, which the
// message already names.
func unwrapExec(err error) error {
	var e *exec.Error
	if errors.As(err, &e) {
		return e.Err
	}
	return err
}

func absPath(p string) string {
	if abs, err := filepath.Abs(p); err == nil {
		return abs
	}
	return p
}

// String is the line's value: where Chromium is, or why there is none.
func (b browser) String() string {
	if b.Path != "" {
		return "Chromium at " + b.Path
	}
	return "not available: " + b.Why
}

// available are the tools this machine's sandboxes can run.
func (b browser) available() []string { return fleet.AvailableTools(b.Path != "") }
