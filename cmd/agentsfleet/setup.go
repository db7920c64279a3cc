package main

import (
	"fmt"
	"strings"
	"time"

	afrun "github.com/agentsfleet/agentsfleet/shared/run"
)

// setupLine is how the text view shows setup.ended: skipped, or how the
// command ended and its output's last line.
func setupLine(s afrun.SetupEnded) string {
	switch {
	case s.Skipped:
		return "setup: skipped (the fleet's folder records it with the same inputs)"
	case s.TimedOut:
		return "setup ✗ timed out: " + clipLine(lastLine(s.Output), 100)
	case s.ExitCode != 0:
		return fmt.Sprintf("setup ✗ exit code %d: %s", s.ExitCode, clipLine(lastLine(s.Output), 100))
	}
	return fmt.Sprintf("setup ✓ %s: %s", time.Duration(s.DurationMS)*time.Millisecond, clipLine(lastLine(s.Output), 100))
}

// lastLine is the last line of s that is not blank.
func lastLine(s string) string {
	lines := strings.Split(s, "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		if l := strings.TrimSpace(lines[i]); l != "" {
			return l
		}
	}
	return ""
}
