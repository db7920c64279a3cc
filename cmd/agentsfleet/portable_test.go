package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/agentsfleet/agentsfleet/"

// linuxOnly are the packages go vet does not check for macOS, and why: each
// is sandboxd or needs it, and sandboxd's confinement (package confine)
// builds only for Linux, on purpose, so that no sandboxd runs unconfined.
// The CLI links none of them.
var linuxOnly = map[string]string{
	"sandboximage/sandboxd":            "sandboxd itself",
	"sandboximage/bench":               "benchmarks sandboxd's tools in process",
	"shared/sandbox/confine":           "the confinement: a cgo trampoline, seccomp, Landlock, Linux capabilities and process groups",
	"shared/sandbox/server":            "sandboxd's HTTP API and tools, which start processes through confine",
	"shared/sandbox/session":           "exec_command and write_stdin: process groups started through confine, a Linux pty",
	"shared/sandbox/shell":             "bash and grep, started through confine",
	"shared/sandbox/browser":           "browser_open and screenshot: Chromium, started through confine",
	"shared/sandbox/launch/launchtest": "a Launcher for tests that serves sandboxd's server in process",
}

// TestBuildsForMacOS keeps the operator CLI installable on macOS: for
// darwin on arm64 and amd64 without cgo, go vet passes for every package
// but linuxOnly, and agentsfleet
// builds and links (arm64). A Linux-only import (or system call) creeping into what the CLI
// links fails here, on Linux. (The tests of the runner, the sandbox client,
// launch/ecs and launch/pool serve sandboxd's server in process: they are
// built for Linux alone, and their packages' code is vetted here.) Each listed package must still need confine,
// so the lists shrink when one stops needing it.
func TestBuildsForMacOS(t *testing.T) {
	if testing.Short() {
		t.Skip("builds for darwin with the go command")
	}
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command on PATH")
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	goCmd := func(t *testing.T, arch string, args ...string) string {
		t.Helper()
		cmd := exec.Command(gobin, args...)
		cmd.Dir = root
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=darwin", "GOARCH="+arch)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("GOOS=darwin GOARCH=%s go %s: %v\n%s", arch, strings.Join(args, " "), err, out)
		}
		return string(out)
	}

	var pkgs []string
	for _, p := range strings.Fields(goCmd(t, "arm64", "list", "./...")) {
		pkgs = append(pkgs, strings.TrimPrefix(p, module))
	}
	var vet []string
	for _, p := range pkgs {
		if linuxOnly[p] == "" {
			vet = append(vet, "./"+p)
		}
	}
	for p, why := range linuxOnly {
		if !slices.Contains(pkgs, p) {
			t.Errorf("%s is listed as Linux-only (%s) but is no package; take it off the list", p, why)
			continue
		}
		deps := strings.Fields(goCmd(t, "arm64", "list", "-e", "-deps", "-test", "-f", "{{.ImportPath}}", "./"+p))
		if p != "shared/sandbox/confine" && !slices.Contains(deps, module+"shared/sandbox/confine") {
			t.Errorf("%s is listed as Linux-only (%s) but no longer needs shared/sandbox/confine on darwin; take it off the list", p, why)
		}
	}

	for _, arch := range []string{"arm64", "amd64"} {
		t.Run(arch, func(t *testing.T) {
			goCmd(t, arch, append([]string{"vet"}, vet...)...)
			// Linking is most of the time once the cache is warm: one
			// architecture's is enough here (vet has compiled the CLI for
			// both), and make release links all four.
			if arch == "arm64" {
				goCmd(t, arch, "build", "-o", filepath.Join(t.TempDir(), "agentsfleet"), "./cmd/agentsfleet")
			}
		})
	}
}
