package runner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/agentsfleet/agentsfleet/shared/callback"
	"github.com/agentsfleet/agentsfleet/shared/cost"
	"github.com/agentsfleet/agentsfleet/shared/fault"
	"github.com/agentsfleet/agentsfleet/shared/invoke"
	"github.com/agentsfleet/agentsfleet/shared/metrics"
	"github.com/agentsfleet/agentsfleet/shared/model"
	"github.com/agentsfleet/agentsfleet/shared/run"
	"github.com/agentsfleet/agentsfleet/shared/sandbox/launch"
	"github.com/agentsfleet/agentsfleet/shared/secret"
	"github.com/agentsfleet/agentsfleet/shared/store"
)

// Config is what a Runner needs.
type Config struct {
	Store *store.Store
	// Model answers; wrap it in model.WithRetry.
	Model model.Model
	// DefaultModel is the model id for a Definition that names none
	// (AGENTSFLEET_MODEL).
	DefaultModel string
	// Sandboxes gives runs their sandboxes.
	Sandboxes launch.Launcher
	// Invoker calls the webtools function and starts the runner again
	// (invoke.Runner) when an invocation nears its deadline.
	Invoker invoke.Invoker
	// Blobs keeps checkpoints too large for an item and the images of tool
	// results (screenshots); nil: none, and a tool's image is left out of
	// its result, which says so.
	Blobs BlobStore
	// Folders keeps each fleet's folder (/agent) between runs, for
	// sandboxes that start without it: restored right after a run's
	// sandbox is acquired, saved as the run ends (see Folders for runs that
	// overlap). Nil, or a launcher that keeps the folder itself (a
	// launch.Placer naming an Agent folder), means the runner leaves the
	// folder to the launcher.
	Folders Folders
	// AlwaysFolders uses Folders even with a launcher that keeps folders.
	AlwaysFolders bool
	// Schedules keeps the fleets' schedules for the schedule tools and
	// cron_run, and hears of each schedule-started run that ends (its
	// spend cap); package schedule/keeper provides it (Keeper.Book). Nil:
	// the schedule tools answer that schedules are not configured here.
	Schedules ScheduleBook
	// Secrets reads the values of the secrets a fleet's setup step lists
	// ([x-agentsfleet.setup] secrets: AWS Secrets Manager in AWS, the
	// local secrets otherwise), the only values the runner reads; nil: a
	// setup step that lists secrets fails its run, saying so.
	Secrets secret.Source
	// Callbacks delivers runs' results to their callback_url as they end;
	// nil sends none (a run that names one logs that it was not sent).
	Callbacks *callback.Sender
	// ToolConcurrency is how many tool calls of one model answer run at
	// once, at most (of the calls that may run together: see runTools);
	// the rest wait, in the answer's order. 0 means DefaultToolConcurrency
	// (8); ToolConcurrencyFromEnv reads it. With the runner function's
	// reserved concurrency it bounds how many webtools calls a deployment's
	// runs make at once (infra/stack sizes webtools' reservation by it).
	ToolConcurrency int
	// MessageTimeout is how long the message tool waits for Slack to take
	// a line; 0 means MessageTimeout (12 seconds).
	MessageTimeout time.Duration
	// Prices, when set, have each run's cost reckoned as it ends
	// (run.Result.Cost, package cost); MemoryMiB is the runner function's
	// memory (AWS_LAMBDA_FUNCTION_MEMORY_SIZE), which its time is priced
	// at: 0 leaves the runner's time out.
	Prices    *cost.Prices
	MemoryMiB int
	// Metrics, when set, gets the runs' metrics (package metrics): runs
	// started and ended, tool and model calls, sandbox claims.
	Metrics *metrics.Sink
	// Observer, when set, sees each run's progress as it happens: the
	// events it commits and the model's streamed text. It must not block.
	Observer func(Note)
	// Display says the sandboxes have a headless browser (browser_open,
	// screenshot); without one a Definition allowing them is refused
	// before the model is called. New sets it when Sandboxes can give
	// sandboxes with a browser (launch.CanBrowse), so that the launcher
	// decides; true given here is for a test whose launcher stands in for
	// one.
	Display bool
	// NoBrowser, said in that refusal, is why the sandboxes have no
	// browser and what to set for one (the deployment's setting, or the
	// Chromium to install). Empty says only that they have none.
	NoBrowser string
	// Lease is how long a runner holds a run between renewals; 0 means
	// DefaultLease (2 minutes; LeaseFromEnv reads it). It is renewed every
	// third of it.
	Lease time.Duration
	// Margin is how long before the invocation's deadline the runner stops
	// starting steps and re-invokes itself; 0 means 60 seconds more than
	// the fleet's tool timeout, the longest a step may take.
	Margin time.Duration
	// ContextTokens is the model's context window; 0 means 200,000. Past
	// 80% of it older tool outputs are cut, then earlier turns summarised.
	ContextTokens int64
	// MaxTokens caps each answer's output tokens; 0 means the provider's
	// default.
	MaxTokens int
	// Watch is how often a running run's status is read, to notice a
	// cancellation between turns; 0 means 2 seconds.
	Watch time.Duration
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// After is Now's timer: it sends on the channel once d has passed by
	// Now. The wait for a lapsing lease goes through it; nil means
	// time.After. A clock injected for tests sets both.
	After func(d time.Duration) <-chan time.Time
	// Log receives the runner's log lines; nil means slog.Default().
	Log *slog.Logger
}

// Note is one thing an Observer sees.
type Note struct {
	RunID string
	// Agent is the child agent the note is about; empty for the run's own.
	Agent string
	// Event is a committed event, or nil.
	Event *run.Event
	// Calling is a tool call starting, before its turn commits it.
	Calling *run.ToolCall
	// Thinking is true while a model call is under way; Text carries its
	// streamed text.
	Thinking bool
	Text     string
}

// Runner executes runs: one invocation takes a run's lease and goes on from
// its last committed step until the run ends or the invocation nears its
// deadline. Safe for concurrent use: many invocations of many runs share
// one Runner.
type Runner struct {
	cfg Config
	log *slog.Logger
}

// New returns a Runner over cfg.
func New(cfg Config) (*Runner, error) {
	switch {
	case cfg.Store == nil:
		return nil, errors.New("runner: no store")
	case cfg.Model == nil:
		return nil, errors.New("runner: no model")
	case cfg.Sandboxes == nil:
		return nil, errors.New("runner: no sandbox launcher")
	case cfg.Invoker == nil:
		return nil, errors.New("runner: no invoker")
	}
	cfg.Display = cfg.Display || launch.CanBrowse(cfg.Sandboxes)
	if cfg.Lease <= 0 {
		cfg.Lease = DefaultLease
	}
	if cfg.ToolConcurrency <= 0 {
		cfg.ToolConcurrency = DefaultToolConcurrency
	}
	if cfg.ContextTokens <= 0 {
		cfg.ContextTokens = 200_000
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.After == nil {
		cfg.After = time.After
	}
	if cfg.Watch <= 0 {
		cfg.Watch = 2 * time.Second
	}
	log := cfg.Log
	if log == nil {
		log = slog.Default()
	}
	return &Runner{cfg: cfg, log: log}, nil
}

// Handle is the runner function's handler: payload is a Payload as JSON.
func (r *Runner) Handle(ctx context.Context, payload []byte) ([]byte, error) {
	var p run.Payload
	if err := json.Unmarshal(payload, &p); err != nil || p.RunID == "" {
		return nil, fmt.Errorf("runner: the payload must be {\"run_id\": \"…\"} or {\"run_id\": \"…\", \"child_id\": \"…\"}, not %.200q", payload)
	}
	if p.ChildID != "" {
		return nil, r.RunChild(ctx, p.RunID, p.ChildID)
	}
	return nil, r.Run(ctx, p.RunID)
}

// Run is one invocation for the run runID. It returns nil when the run
// ended, when another invocation holds the run (a duplicate delivery), and
// when it handed the run to a new invocation before its deadline; an error
// only when the environment is broken (the store unreachable), in which
// case the run stays as its last committed step left it, for a retry.
func (r *Runner) Run(ctx context.Context, runID string) error {
	return r.execute(ctx, run.Payload{RunID: runID})
}

// RunChild is one invocation for the child agent childID of the run runID,
// as Run is for a run: the child has a lease, steps and a checkpoint of its
// own, so that it goes on whichever invocation the run's own agent is in.
func (r *Runner) RunChild(ctx context.Context, runID, childID string) error {
	return r.execute(ctx, run.Payload{RunID: runID, ChildID: childID})
}

func (r *Runner) execute(ctx context.Context, p run.Payload) error {
	a := r.agentOf(p)
	logArgs := []any{"run_id", p.RunID, "child_id", p.ChildID}
	l := r.newLease(a)
	rn, err := l.take(ctx, logArgs...)
	if errors.Is(err, fault.RunLeaseHeld) {
		r.log.Info("held by another invocation", append(logArgs, "error", err)...)
		return nil
	}
	if err != nil {
		return fmt.Errorf("runner: %w", err)
	}
	ctx, stop, release := l.keep(ctx, logArgs...)
	defer release()
	x := &execution{r: r, run: rn, agent: a, holder: l.holder, unlease: release, stop: stop, began: time.Now()}
	defer x.addRunTime(ctx)
	if ok, err := a.load(ctx, x); !ok {
		return err
	}
	if l.takeovers >= maxTakeovers {
		// Killed again and again at some point of the run (memory, most
		// likely): Lambda retries an invocation twice, and a run left to a
		// last one that is killed too would stay running for ever. A child
		// fails the same way, and its parent hears why.
		return x.end(ctx, store.StatusFailed, "", stoppedError(l.takeovers, a.what()))
	}
	if err := x.loop(ctx); !errors.Is(err, errHandedOver) && !errors.Is(err, errChildGone) {
		return err
	}
	return nil
}

// stoppedError is why a run (what: "run") or a child ("child agent") fails
// after takeovers takeovers.
func stoppedError(takeovers int, what string) *run.Error {
	return &run.Error{Code: run.CodeStopped, Message: fmt.Sprintf(
		"the runner was stopped %d times without handing the %s over (killed for memory or time: the runner function's logs say which); the %s cannot go on", takeovers, what, what)}
}
