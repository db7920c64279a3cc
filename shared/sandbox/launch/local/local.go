package local

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/agentsfleet/agentsfleet/shared/sandbox/launch"
	"github.com/agentsfleet/agentsfleet/shared/sandbox/wire"
)

const (
	// BinaryName is the program the Launcher looks for beside the running
	// executable and on PATH.
	BinaryName = "sandboxd"
	// DefaultStartTimeout is Config.StartTimeout when zero.
	DefaultStartTimeout = 30 * time.Second
	// DefaultStopGrace is Config.StopGrace when zero.
	DefaultStopGrace = 10 * time.Second
)

// DefaultEnv are the variables every sandbox's commands get from this
// process's environment, besides Config.Env.
var DefaultEnv = []string{"PATH"}

// Config configures a Launcher.
type Config struct {
	// Workdir is the folder of this machine every sandbox serves as the
	// workdir, whatever the Definition's workdir says (launch.Placer).
	// Empty means the current directory.
	Workdir string
	// StateDir keeps the fleets' folders, StateDir/agents/<fleet>, each
	// created on first use (0700) and served as /agent. Required. When
	// this process is root and the workdir another user's, the fleet's
	// folder is given to that user, who must be able to reach it: a
	// StateDir inside root's home is refused by sandboxd, saying so.
	StateDir string
	// Data, when not empty, is a folder served read-only as the mounted
	// data.
	Data string
	// Workspace, when not empty, is a folder served writable as the turn's
	// workspace.
	Workspace string
	// Binary is the sandboxd to run. Empty means BinaryName beside the
	// running executable (where `make build` puts both), else on PATH.
	Binary string
	// Browser is the Chromium (an executable's path) sandboxd drives for
	// the display tools (sandboxd serve --browser), given to the sandboxes
	// of runs that need one (launch.Spec.Browser) and to generic ones
	// started with a browser. Empty means no sandbox has a browser
	// (Browser is false), and such runs and starts fail wrapping
	// launch.ErrNoBrowser.
	Browser string
	// TestAllowAddr, for tests only, is the one loopback ip:port the
	// sandboxes' browser may reach (sandboxd's egress.AllowEnv, which
	// sandboxd reads for itself and never gives its commands), as the
	// stack's web tools admit it in this process. Empty admits none.
	TestAllowAddr string
	// Env names variables of this process's environment that commands get
	// with their values, besides DefaultEnv (sandboxd --env). A name that
	// may hold a secret is refused (see New).
	Env []string
	// IdleTimeout is how long a sandbox may go without a call before
	// sandboxd stops (a later Acquire starts a new one). Zero means
	// sandboxd's default (15 minutes); negative means never. A sandbox
	// also stops when this process exits (sandboxd --local).
	IdleTimeout time.Duration
	// StartTimeout bounds starting one sandbox, until it answers /healthz.
	// Zero means DefaultStartTimeout.
	StartTimeout time.Duration
	// StopGrace is how long Release lets sandboxd stop after SIGTERM
	// before it kills it. sandboxd lets calls in progress finish for half
	// of it. Zero means DefaultStopGrace.
	StopGrace time.Duration
	// Log receives sandboxd's log, whole lines (JSON, one for each call,
	// never its arguments) of every sandbox. Nil discards it.
	Log io.Writer
}

// ErrNoSandboxd is wrapped by New's error when it finds no sandboxd.
var ErrNoSandboxd = errors.New("sandboxd not found")

// Launcher starts a sandboxd process for each run. It implements
// launch.Launcher and launch.Placer, and is safe for concurrent use: runs
// start and stop their sandboxes independently, and calls for one run are
// taken one at a time.
type Launcher struct {
	workdir, stateDir, data, workspace string
	binary                             string
	browser                            string   // Chromium, "" for none
	allow                              string   // egress.AllowEnv's value, "" for none
	env                                []string // --env names
	idle, startTimeout, grace          time.Duration
	log                                *lineLog // nil: no log

	runs launch.Slots[process] // each run's sandboxd
	warm launch.Slots[process] // generic sandboxes (Start), by Warm.ID
}

var (
	_ launch.Launcher = (*Launcher)(nil)
	_ launch.Placer   = (*Launcher)(nil)
	_ launch.Starter  = (*Launcher)(nil)
	_ launch.Browsers = (*Launcher)(nil)
)

// New returns a Launcher for cfg. It checks what it can before any run
// asks: the folders exist (the state folder is created), sandboxd is found
// (else an error wrapping ErrNoSandboxd that says where it looked), the
// Browser, when set, is an executable file, and no
// name in cfg.Env may hold a secret: names starting AWS_, ECS_, SANDBOXD_,
// AGENTSFLEET_ or LD_, or containing TOKEN, SECRET, KEY, PASSWORD, PASSWD
// or CREDENTIAL (without regard to case), as sandboxd refuses them.
func New(cfg Config) (*Launcher, error) {
	l := &Launcher{idle: cfg.IdleTimeout, startTimeout: cfg.StartTimeout, grace: cfg.StopGrace, allow: cfg.TestAllowAddr}
	if l.startTimeout <= 0 {
		l.startTimeout = DefaultStartTimeout
	}
	if l.grace <= 0 {
		l.grace = DefaultStopGrace
	}
	if cfg.Log != nil {
		l.log = &lineLog{w: cfg.Log}
	}
	var err error
	if l.workdir, err = folder("workdir", cfg.Workdir, true); err != nil {
		return nil, err
	}
	if l.data, err = folder("data folder", cfg.Data, false); err != nil {
		return nil, err
	}
	if l.workspace, err = folder("workspace", cfg.Workspace, false); err != nil {
		return nil, err
	}
	if cfg.StateDir == "" {
		return nil, errors.New("local: Config.StateDir is required: it keeps the fleets' folders")
	}
	if l.stateDir, err = filepath.Abs(cfg.StateDir); err != nil {
		return nil, fmt.Errorf("local: state folder %s: %w", cfg.StateDir, err)
	}
	if err := os.MkdirAll(filepath.Join(l.stateDir, "agents"), 0o755); err != nil {
		return nil, fmt.Errorf("local: state folder: %w", err)
	}
	for _, name := range append(slices.Clone(DefaultEnv), cfg.Env...) {
		if why := wire.ForbiddenEnv(name); why != "" {
			return nil, fmt.Errorf("local: Config.Env names %q: %s", name, why)
		}
		if !slices.Contains(l.env, name) {
			l.env = append(l.env, name)
		}
	}
	if l.binary, err = findBinary(cfg.Binary); err != nil {
		return nil, err
	}
	if cfg.Browser != "" {
		if l.browser, err = filepath.Abs(cfg.Browser); err == nil {
			err = executable(l.browser)
		}
		if err != nil {
			return nil, fmt.Errorf("local: Config.Browser %s: %w", cfg.Browser, err)
		}
	}
	return l, nil
}

// Browser says the Launcher's sandboxes can have a browser: it has a
// Config.Browser.
func (l *Launcher) Browser() bool { return l.browser != "" }

// folder returns dir made absolute, checking that it is a folder; an empty
// dir is the current directory when current, else stays empty.
func folder(what, dir string, current bool) (string, error) {
	if dir == "" && !current {
		return "", nil
	}
	if dir == "" {
		dir = "."
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", fmt.Errorf("local: %s %s: %w", what, dir, err)
	}
	fi, err := os.Stat(abs)
	if err != nil {
		return "", fmt.Errorf("local: %s: %w", what, err)
	}
	if !fi.IsDir() {
		return "", fmt.Errorf("local: %s %s is not a folder", what, abs)
	}
	return abs, nil
}

// findBinary returns sandboxd: configured, else beside the running
// executable, else on PATH.
func findBinary(configured string) (string, error) {
	if configured != "" {
		abs, err := filepath.Abs(configured)
		if err == nil {
			err = executable(abs)
		}
		if err != nil {
			return "", fmt.Errorf("local: %w: Config.Binary %s: %w", ErrNoSandboxd, configured, err)
		}
		return abs, nil
	}
	var tried []string
	if self, err := os.Executable(); err == nil {
		beside := filepath.Join(filepath.Dir(self), BinaryName)
		if executable(beside) == nil {
			return beside, nil
		}
		tried = append(tried, beside)
	} else {
		tried = append(tried, "beside this program (whose path is unknown: "+err.Error()+")")
	}
	if p, err := exec.LookPath(BinaryName); err == nil {
		if abs, err := filepath.Abs(p); err == nil {
			return abs, nil
		}
	}
	tried = append(tried, BinaryName+" on PATH")
	return "", fmt.Errorf("local: %w: Config.Binary is not set, and there is none at %s; build it (make build puts it beside agentsfleet) or name it",
		ErrNoSandboxd, strings.Join(tried, " nor "))
}

func executable(path string) error {
	fi, err := os.Stat(path)
	switch {
	case err != nil:
		return err
	case !fi.Mode().IsRegular():
		return errors.New("not a file")
	case fi.Mode()&0o111 == 0:
		return errors.New("not executable")
	}
	return nil
}

// Places are the folders a run's sandbox (Acquire) serves: the Launcher's
// workdir and the fleet's folder StateDir/agents/<fleet>, both absolute.
// A generic sandbox (Start) has a fleet's folder of its own instead, which
// Connect gives in Sandbox.Places.
func (l *Launcher) Places(spec launch.Spec) launch.Places {
	return launch.Places{Workdir: l.workdir, Agent: filepath.Join(l.stateDir, "agents", spec.Fleet)}
}

// Acquire returns the run's sandbox, starting one when the run has none:
// the same sandbox comes back while its process lives and answers
// /healthz, whatever spec says; a sandbox whose process died or stopped
// answering is stopped and replaced by a new one (the exec_command
// sessions of the old one are gone with it). A sandbox's tool timeout
// (sandboxd --timeout) is spec.ToolTimeout in whole seconds, rounded up
// (zero: sandboxd's default), and its client's call timeout
// client.CallTimeoutFor that. spec.Size is not used: a local sandbox has
// the machine's resources. spec.Browser gives it Config.Browser (an error
// wrapping launch.ErrNoBrowser too without one). An error wraps launch.ErrStart, with what
// sandboxd last wrote to its standard error when it exited; it wraps ctx's
// error too when ctx ended first.
func (l *Launcher) Acquire(ctx context.Context, spec launch.Spec) (*launch.Sandbox, error) {
	if spec.RunID == "" {
		return nil, fmt.Errorf("%w: the run has no id", launch.ErrStart)
	}
	if why := checkFleet(spec.Fleet); why != "" {
		return nil, fmt.Errorf("%w: run %s: fleet %q: %s", launch.ErrStart, spec.RunID, spec.Fleet, why)
	}
	var sb *launch.Sandbox
	var err error
	if cerr := l.runs.Hold(spec.RunID, func(cur *process) *process {
		cur, sb, err = l.acquire(ctx, cur, spec)
		return cur
	}); cerr != nil {
		return nil, fmt.Errorf("%w: run %s: %w", launch.ErrStart, spec.RunID, cerr)
	}
	return sb, err
}

func (l *Launcher) acquire(ctx context.Context, p *process, spec launch.Spec) (*process, *launch.Sandbox, error) {
	if p != nil {
		if p.alive() {
			err := p.sb.Client.Health(ctx)
			if err == nil {
				return p, p.sb, nil
			}
			if ctx.Err() != nil {
				return p, nil, fmt.Errorf("%w: run %s: %w", launch.ErrStart, spec.RunID, ctx.Err())
			}
		}
		p.stop(context.Background(), 0) // it does not answer: no grace
	}
	p, err := l.start(ctx, spec)
	if err != nil {
		return nil, nil, err
	}
	return p, p.sb, nil
}

// Release stops the run's sandbox and forgets it: SIGTERM, then SIGKILL
// after Config.StopGrace (or at once when ctx ends), and waits until the
// process is gone. Its commands go with it (sandboxd kills them, and they
// die with it). Releasing a run without a sandbox is not an error.
func (l *Launcher) Release(ctx context.Context, runID string) error {
	l.runs.Take(runID, func(p *process) { p.stop(ctx, l.grace) })
	return nil
}

// Close stops every sandbox, the runs' and the generic ones (Start) alike,
// as Release and Stop do, and waits for them, a Start under way included;
// a later Acquire or Start fails. It is safe to call more than once.
func (l *Launcher) Close() error {
	var wg sync.WaitGroup
	wg.Go(func() { l.runs.Close(func(p *process) { p.stop(context.Background(), l.grace) }) })
	wg.Go(func() { l.warm.Close(l.stopWarm) })
	wg.Wait()
	return nil
}

// PID returns the process id of the run's sandboxd, or 0 when the run has
// none (or it has exited).
func (l *Launcher) PID(runID string) int {
	pid := 0
	l.runs.Peek(runID, func(p *process) {
		if p != nil && p.alive() {
			pid = p.cmd.Process.Pid
		}
	})
	return pid
}

// checkFleet says what is wrong with a fleet name as the name of its
// folder (StateDir/agents/<fleet>), or "".
func checkFleet(name string) string {
	if name == "" {
		return "a fleet name is required: it names the fleet's folder"
	}
	if len(name) > 128 || name[0] == '.' {
		return "not a fleet name"
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '_' || c == '.') {
			return "not a fleet name"
		}
	}
	return ""
}
