package sandbox

import (
	"errors"
	"os"
	"os/exec"
	"strings"
)

// ChromiumEnv names a Chromium FindChromium prefers to the ones on PATH,
// or "off" for none: the setting `agentsfleet run` and `dev` read too.
const ChromiumEnv = "AGENTSFLEET_BROWSER"

// ErrNoChromium is FindChromium's error when the machine has no Chromium.
var ErrNoChromium = errors.New("no Chromium found (set " + ChromiumEnv + ", or install one: apt-get install chromium, or make tools)")

// FindChromium returns the Chromium of this machine: $AGENTSFLEET_BROWSER
// (none when it is "off"), else chromium, chromium-browser or
// google-chrome on PATH. Tests and benchmarks use it; sandboxd takes its
// browser from --browser.
func FindChromium() (string, error) {
	switch p := strings.TrimSpace(os.Getenv(ChromiumEnv)); {
	case strings.EqualFold(p, "off"):
		return "", ErrNoChromium
	case p != "":
		return p, nil
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p, nil
		}
	}
	return "", ErrNoChromium
}
