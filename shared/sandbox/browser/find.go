package browser

import (
	"errors"
	"os"
	"os/exec"
)

// ChromiumEnv names a Chromium FindChromium prefers to the ones on PATH.
const ChromiumEnv = "AGENTSFLEET_CHROMIUM"

// ErrNoChromium is FindChromium's error when the machine has no Chromium.
var ErrNoChromium = errors.New("no Chromium found (set " + ChromiumEnv + ", or install one: apt-get install chromium, or make tools)")

// FindChromium returns the Chromium of this machine: $AGENTSFLEET_CHROMIUM,
// else chromium, chromium-browser or google-chrome on PATH. Tests and
// benchmarks use it; sandboxd takes its browser from --browser.
func FindChromium() (string, error) {
	if p := os.Getenv(ChromiumEnv); p != "" {
		return p, nil
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p, nil
		}
	}
	return "", ErrNoChromium
}
