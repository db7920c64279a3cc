// Package sandboximage describes the sandbox image built from the Dockerfile
// beside it: where sandboxd is, which user it runs as, which directories
// the tools reach and which port it serves. The Dockerfile test checks the
// Dockerfile against these constants; the infrastructure (ECS task
// definition) and the sandbox launcher read them from here.
//
// The sandboxd binary's main is in ./sandboxd.
package sandboximage

import "strconv"

const (
	// BinaryPath is where the image installs sandboxd.
	BinaryPath = "/usr/local/bin/sandboxd"
	// InitPath is the image's PID 1 (tini), which starts sandboxd, forwards
	// signals to it and reaps the orphans commands leave behind.
	InitPath = "/usr/bin/tini"
	// User, UID and GID are the image's non-root user, which owns
	// AgentDir, Workdir and WorkspaceDir. tini and sandboxd start as root
	// (the image sets no USER, and the task definition must not set one
	// either); sandboxd then acts as UID:GID (ServeArgs' --user; its file
	// tools meet that user's permissions) with root kept as its real id,
	// and starts every command as UID:GID through and through. Were they
	// one uid, commands could signal sandboxd, use up the process limit its
	// threads count against, and read the environment of tini, which holds
	// the token: where Landlock is missing, only the uid stands in the way.
	User = "agent"
	UID  = 10001
	GID  = 10001
	// Port is the TCP port sandboxd serves its API on, over TLS with the
	// key pair derived from the task's token (ServeArgs' --tls-from-token),
	// which the runner pins (package shared/sandbox/pin).
	Port = 8080
	// Workdir is the fleet's workdir, the image's WORKDIR.
	Workdir = "/work"
	// AgentDir is the fleet's folder (/agent in the spec), writable.
	AgentDir = "/agent"
	// DataDir is where the fleet's data is mounted, read-only.
	DataDir = "/data"
	// WorkspaceDir is the turn's workspace, writable.
	WorkspaceDir = "/workspace"
)

// The browser image: the same image with Debian's chromium (and a font, so
// that pages render their text), built from the Dockerfile's BrowserTarget
// stage, for fleets whose Definition allows browser_open or screenshot.
// The default build (no --target) stays without it: Chromium makes the
// image some 400 MB larger and slower to pull on every cold start.
const (
	// BrowserTarget is the Dockerfile stage (docker build --target) of the
	// browser image.
	BrowserTarget = "browser"
	// BrowserPath is where Debian's chromium package installs Chromium,
	// which the browser image gives sandboxd (--browser).
	BrowserPath = "/usr/bin/chromium"
	// BrowserMemoryMiB is what a browser sandbox has in memory on top of
	// its size's: headless Chromium needs about a gigabyte. Each sandbox
	// size's memory plus this stays a pairing Fargate accepts with the
	// size's CPU.
	BrowserMemoryMiB = 1024
)

// BuildFlags are the go build flags of sandboxd, with CGO_ENABLED=1: the
// confinement trampoline is C (shared/sandbox/confine/trampoline.c). The
// binary is linked static, so that a confined command does not pay for the
// dynamic loader at every start and the runtime image needs no matching
// libc; netgo and osusergo keep the resolver and user lookups in Go, which
// a static glibc cannot do.
var BuildFlags = []string{"-trimpath", "-tags", "netgo,osusergo",
	"-ldflags", "-s -w -linkmode external -extldflags -static"}

// ListenAddr is the address sandboxd serve listens on in the image.
var ListenAddr = ":" + strconv.Itoa(Port)

// HealthAddr is where the health check finds sandboxd inside the task.
var HealthAddr = "127.0.0.1:" + strconv.Itoa(Port)

// Entrypoint is the image's ENTRYPOINT: sandboxd under tini.
func Entrypoint() []string { return []string{InitPath, "--", BinaryPath} }

// ServeArgs are the arguments the image runs sandboxd with (its CMD): on
// every address of the task, over TLS whose key pair is derived from the
// token in SANDBOXD_TOKEN (--tls-from-token), so that the runner, which
// made the token, pins the key and the token never crosses the network in
// clear text. The task definition gives the token in the container's
// environment; sandboxd refuses to start without it.
func ServeArgs() []string {
	return []string{"serve", "--listen", ListenAddr, "--tls-from-token", "--workdir", Workdir, "--agent", AgentDir,
		"--data", DataDir, "--workspace", WorkspaceDir, "--user", strconv.Itoa(UID) + ":" + strconv.Itoa(GID)}
}

// BrowserServeArgs are the arguments the browser image runs sandboxd with:
// ServeArgs and the Chromium it drives (--browser BrowserPath).
func BrowserServeArgs() []string { return append(ServeArgs(), "--browser", BrowserPath) }

// HealthCheck is the command a container health check runs (the
// Dockerfile's HEALTHCHECK; ECS task definitions take the same command).
// It speaks TLS, as sandboxd serves, and checks no certificate: it runs
// beside sandboxd, sends no token and reads nothing secret.
func HealthCheck() []string {
	return []string{BinaryPath, "health", "--addr", HealthAddr, "--tls"}
}
