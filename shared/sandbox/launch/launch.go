// Package launch gives a run its sandbox: a sandboxd the runner reaches
// through a client (shared/sandbox/client). The Launcher interface has two
// implementations beside it: launch/local starts sandboxd processes on this
// machine (`agentsfleet run`, `agentsfleet dev`, tests), and launch/ecs
// (with the sandbox-fleet issue) runs Fargate tasks from the sandbox image
// with a warm pool.
package launch

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/agentsfleet/agentsfleet/shared/fleet"
	"github.com/agentsfleet/agentsfleet/shared/sandbox/client"
)

// Spec is what a run asks of its sandbox.
type Spec struct {
	// RunID names the run the sandbox serves, with its children.
	RunID string
	// Fleet is the fleet's name, for the fleet's folder (/agent) and logs.
	Fleet string
	// Workdir is the Definition's workdir, where tools start.
	Workdir string
	// Size is the Definition's sandbox size.
	Size fleet.SandboxSize
	// ToolTimeout is the fleet's tool_timeout_seconds.
	ToolTimeout time.Duration
	// Browser says the Definition allows a display tool (browser_open,
	// screenshot): the sandbox must have a headless browser. A launcher
	// that cannot give one (Browsers) fails such an Acquire; the runner
	// refuses the run before that.
	Browser bool
}

// Kind is what tells one sandbox from another before any run has it: a
// pool keeps each kind apart and claims only the kind a run asks for.
type Kind struct {
	// Size is the sandbox size; empty means the launcher's default.
	Size fleet.SandboxSize
	// Browser says the sandbox has a headless browser.
	Browser bool
}

// KindOf is the kind of sandbox spec asks for.
func KindOf(spec Spec) Kind { return Kind{Size: spec.Size, Browser: spec.Browser} }

// String names the kind in logs and errors: "small", "small+browser".
func (k Kind) String() string {
	if k.Browser {
		return string(k.Size) + "+browser"
	}
	return string(k.Size)
}

// Browsers is the optional ability of a Launcher (or a Starter) that can
// give sandboxes with a headless browser (Spec.Browser): launch/ecs with a
// browser task definition, launch/local with a Chromium on this machine.
// Browser says whether this one can; CanBrowse asks any value.
type Browsers interface {
	Browser() bool
}

// CanBrowse says whether v, a Launcher or a Starter, can give sandboxes
// with a headless browser: false unless it implements Browsers and says
// so. The runner's refusal of a Definition allowing a display tool comes
// from this answer, so that one place decides.
func CanBrowse(v any) bool {
	b, ok := v.(Browsers)
	return ok && b.Browser()
}

// ErrNoBrowser is wrapped by Acquire's and Start's error when a sandbox
// with a browser is asked of a launcher that cannot give one.
var ErrNoBrowser = errors.New("this launcher has no sandboxes with a browser")

// Sandbox is a run's sandbox.
type Sandbox struct {
	// ID names the sandbox in logs and errors: a process id locally, a task
	// ARN on Fargate.
	ID string
	// Client calls its tools.
	Client *client.Client
	// Places are the real paths of its folders, when the launcher knows
	// them only once it has the sandbox (a pooled local sandbox has an
	// agent folder of its own). The zero value means the image's defaults:
	// DefaultAgent and the Definition's workdir.
	Places Places
	// Claim is how Acquire met the run (ClaimWarm, ClaimCold,
	// ClaimResumed), as a pool knows it; "" from a launcher without one,
	// which starts a sandbox for each run.
	Claim string
}

// The values of Sandbox.Claim.
const (
	ClaimWarm    = "warm"    // an idle sandbox of the pool
	ClaimCold    = "cold"    // one started for the run
	ClaimResumed = "resumed" // the run's own, claimed by an earlier invocation
)

// Launcher hands runs their sandboxes. A run has at most one sandbox at a
// time. Implementations are safe for concurrent use.
type Launcher interface {
	// Acquire returns the run's sandbox, starting one when the run has
	// none: a runner re-invoked for the same run gets the same sandbox
	// back while it lives.
	Acquire(ctx context.Context, spec Spec) (*Sandbox, error)
	// Release stops the run's sandbox and forgets it; a later Acquire
	// starts a new one. Releasing a run without a sandbox is not an error.
	Release(ctx context.Context, runID string) error
}

// Placer is the optional ability of a Launcher whose sandboxes keep the
// run's folders somewhere else than the Definition and the image say: a
// local launcher serves folders of this machine. The runner tells the
// model these paths.
type Placer interface {
	Places(spec Spec) Places
}

// Places are the real paths of a sandbox's folders.
type Places struct {
	// Workdir is where tools start and relative paths resolve.
	Workdir string
	// Agent is the fleet's folder, kept from one run to the next.
	Agent string
}

// DefaultAgent is the fleet's folder in the sandbox image.
const DefaultAgent = "/agent"

// ErrStart is wrapped by Acquire's error when no sandbox could be started
// for the run (the reason follows it).
var ErrStart = errors.New("the sandbox could not be started")

// None is a Launcher for a deployment that has no sandboxes: every Acquire
// fails, saying why, so that each sandbox tool call answers the model with
// that reason and the run goes on with its other tools.
type None struct {
	// Why is the reason, such as "sandboxes on Fargate come with the
	// sandbox-fleet work, not built yet".
	Why string
}

var _ Launcher = None{}

// Acquire fails with ErrStart and the reason.
func (n None) Acquire(context.Context, Spec) (*Sandbox, error) {
	return nil, fmt.Errorf("%w: %s", ErrStart, n.Why)
}

// Release has nothing to stop.
func (None) Release(context.Context, string) error { return nil }

// Warm is a sandbox started before any run asked for it, as a pool keeps
// them: generic (no fleet's folder, no run), recorded so that another
// invocation, or another process, can claim it.
type Warm struct {
	// ID names it: a task ARN on Fargate, "local-<pid>" locally.
	ID string
	// Size is the sandbox size it was started with.
	Size fleet.SandboxSize
	// Browser says it has a headless browser (Kind.Browser).
	Browser bool
	// URL is where its sandboxd answers (https://IP:PORT on Fargate).
	URL string
	// Nonce names its token without being it: the Starter that started it
	// knows the token again from the nonce (launch/ecs derives it with a
	// key only the runner holds, package shared/sandbox/token; launch/local
	// keeps it in memory). A Warm holds no token, so a pool's records,
	// which other functions may read, hold none either. Not secret.
	Nonce string
	// Started is when it was started.
	Started time.Time
}

// Kind is the kind of sandbox w is.
func (w Warm) Kind() Kind { return Kind{Size: w.Size, Browser: w.Browser} }

// Starter starts and stops generic sandboxes for a pool: the ability a
// pool needs of a launcher (launch/ecs and launch/local have it).
type Starter interface {
	// Start starts one idle sandbox of kind and returns once it is
	// healthy; a kind with a browser from a Starter that cannot give one
	// (Browsers) is an error wrapping ErrNoBrowser.
	Start(ctx context.Context, kind Kind) (Warm, error)
	// Connect returns a client for w, checking its health: an error means
	// w is dead or unreachable, or its token cannot be had from its Nonce,
	// and it should be discarded.
	Connect(ctx context.Context, w Warm) (*Sandbox, error)
	// Stop stops w; stopping one already gone is not an error.
	Stop(ctx context.Context, w Warm) error
}
