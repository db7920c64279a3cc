package main

import "fmt"

// needsLinux returns nil on Linux (goos is runtime.GOOS), and otherwise the
// one-sentence error of a command that starts sandboxd on this machine (dev,
// run). sandboxd confines what it runs with seccomp, Landlock and Linux
// process groups (package confine builds only for Linux), so rather than
// start a stack that cannot run one tool, these commands say where to go.
// The commands against the HTTP API work on every system.
func needsLinux(cmd, goos string) error {
	if goos == "linux" {
		return nil
	}
	system := goos
	if goos == "darwin" {
		system = "macOS"
	}
	switch cmd {
	case "run":
		return fmt.Errorf("run needs Linux: its sandbox is a sandboxd process on this machine, confined with seccomp and Landlock, which %s does not have; run it on a Linux machine, or run the fleet on a deployment (make deploy) from here: apply -f DEFINITION, then start FLEET INPUT --follow, each with --api URL --key KEY", system)
	default:
		return fmt.Errorf("%s needs Linux: its sandboxes are sandboxd processes on this machine, confined with seccomp and Landlock, which %s does not have; run it on a Linux machine, or deploy the stack (make deploy) and drive it from here with --api URL --key KEY", cmd, system)
	}
}
