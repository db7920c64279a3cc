// Package local is the launch.Launcher of one machine (`agentsfleet run`,
// `agentsfleet dev`, tests): each run's sandbox is a `sandboxd serve`
// process of its own over folders of this machine, reached over loopback.
//
// A sandbox serves the workdir the Launcher is configured with (the folder
// `agentsfleet run --workdir DIR` names; launch.Placer tells the runner
// so), the fleet's folder (/agent), kept per fleet in
// StateDir/agents/<fleet> and created on first use, and optionally a
// folder of data (read-only) and a workspace (writable). sandboxd listens on
// 127.0.0.1 on a port the kernel picks and reports (--listen 127.0.0.1:0
// --print-addr), so no port is guessed and none raced for; it gets a fresh
// random token in its environment (SANDBOXD_TOKEN) and nowhere else, which
// it erases from its environment at start.
//
// The sandboxes of runs that need a browser (launch.Spec.Browser), and warm
// ones started with one, get `sandboxd serve --browser PATH` with the
// Chromium of Config.Browser (`agentsfleet run` and `dev` find one on this
// machine); without a Config.Browser the Launcher says it has none
// (launch.Browsers) and such a start fails wrapping launch.ErrNoBrowser.
//
// # Warm sandboxes
//
// The Launcher is also a launch.Starter, for a warm pool (launch/pool) on
// this machine: Start starts a generic sandboxd that serves no fleet's
// folder but an empty one of its own, StateDir/sandboxes/<name>/agent,
// which the runner fills by restoring the fleet's folder (runner.Folders,
// the emulator's bucket locally) once a run claims it, and saves at the
// run's end. Connect names that folder in launch.Sandbox.Places. Stop, and
// Close, end the process and remove its folder. Warm sandboxes are this
// Launcher's alone: their processes stop with this one, so Connect refuses
// a pool record of another process. The token stays in this process: a
// pool's record holds the sandbox's nonce (launch.Warm), which Connect
// matches against the process it started, and no token.
//
// # Who the commands are
//
// Locally the commands act as the owner of the workdir. When this process
// runs as root (a container, a VM) it passes sandboxd --user with the
// workdir owner's ids: sandboxd then acts as that user and runs its
// commands as that user, and the fleet's folder is given to that user.
// When that owner is root itself (a folder in /root, say), sandboxd runs in
// its local mode (--local --user 0): it and its commands keep uid 0 with
// every capability dropped (bounding, ambient, effective, permitted and
// inheritable sets empty, the securebits that keep an exec from giving
// them back locked, no_new_privs), so that file ownership and Landlock
// decide what they touch; sandboxd refuses that mode where the kernel
// lacks Landlock. When this process is not root, sandboxd and its commands
// keep its uid, whoever owns the workdir.
//
// # What the commands see
//
// sandboxd gives its commands a fixed environment (confine.BaseEnv:
// HOME=/tmp, a system PATH, no variable of this process). The Launcher has
// it pass PATH on (--env PATH), so that the person's own tools are found
// (`go test` in a Go repository), and the variables Config.Env names. HOME
// is not passed by default: the person's home lies outside the writable
// roots, where Landlock lets commands neither write (go's build cache, npm
// and pip write there) nor, in most cases, read; with HOME=/tmp those tools
// work. A tool whose directory lies outside the readable roots (the system
// directories, the workdir, the data) is found on PATH but cannot be
// executed. Names of secrets (AWS_*, ECS_*, *TOKEN*, *SECRET*, *KEY*,
// *PASSWORD*, …) are refused by New, and by sandboxd again.
//
// # Security boundary
//
// The confinement is sandboxd's (shared/sandbox/confine). What this
// package adds: the token never appears on a command line nor in the
// environment of any process but sandboxd; sandboxd gets this process's
// environment less the variables that may hold secrets (the same rule as
// --env), so a compromised sandboxd finds no AWS credentials there;
// sandboxd listens on loopback only, where any local user can connect but
// none can call a tool without the token (plain HTTP: loopback traffic
// does not leave the machine). It does not protect the machine from a
// person who runs agentsfleet as root on purpose against a workdir root
// owns: the commands then may change every file root owns inside the
// writable roots.
package local
