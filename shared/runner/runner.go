package runner

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentsfleet/agentsfleet/shared/api/callback"
	"github.com/agentsfleet/agentsfleet/shared/fault"
	"github.com/agentsfleet/agentsfleet/shared/fleet"
	"github.com/agentsfleet/agentsfleet/shared/invoke"
	"github.com/agentsfleet/agentsfleet/shared/model"
	"github.com/agentsfleet/agentsfleet/shared/run"
	"github.com/agentsfleet/agentsfleet/shared/sandbox/launch"
	"github.com/agentsfleet/agentsfleet/shared/slack/thread"
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
	// Blobs keeps checkpoints too large for an item; nil: none.
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
	// Callbacks delivers runs' results to their callback_url as they end;
	// nil sends none (a run that names one logs that it was not sent).
	Callbacks *callback.Sender
	// MessageTimeout is how long the message tool waits for Slack to take
	// a line; 0 means MessageTimeout (12 seconds).
	MessageTimeout time.Duration
	// Observer, when set, sees each run's progress as it happens: the
	// events it commits and the model's streamed text. It must not block.
	Observer func(Note)
	// Display says the sandboxes have a headless browser (browser_open,
	// screenshot); without one a Definition allowing them is refused.
	Display bool
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
	Event *Event
	// Calling is a tool call starting, before its turn commits it.
	Calling *ToolCall
	// Thinking is true while a model call is under way; Text carries its
	// streamed text.
	Thinking bool
	Text     string
}

// Payload is the runner function's invocation payload: a run, or one of
// its child agents.
type Payload struct {
	RunID   string `json:"run_id"`
	ChildID string `json:"child_id,omitempty"`
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
	if cfg.Lease <= 0 {
		cfg.Lease = DefaultLease
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
	var p Payload
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
func (r *Runner) Run(ctx context.Context, runID string) error { return r.execute(ctx, runID, "") }

// RunChild is one invocation for the child agent childID of the run runID,
// as Run is for a run: the child has a lease, steps and a checkpoint of its
// own, so that it goes on whichever invocation the run's own agent is in.
func (r *Runner) RunChild(ctx context.Context, runID, childID string) error {
	return r.execute(ctx, runID, childID)
}

func (r *Runner) execute(ctx context.Context, runID, childID string) error {
	holder := newHolder()
	st := r.cfg.Store
	var run store.Run
	var child *store.Child
	// lapsed is the holder whose lease ran out unrenewed, when this
	// invocation took it over from one that died holding it.
	var lapsed string
	err := r.awaitLease(ctx, func() (err error) {
		if childID == "" {
			run, err = st.AcquireLease(ctx, runID, holder, r.cfg.Lease)
			lapsed = run.LapsedHolder
			return err
		}
		c, err := st.AcquireChildLease(ctx, runID, childID, holder, r.cfg.Lease)
		if err == nil {
			child, lapsed = &c, c.LapsedHolder
			run, err = st.GetRun(ctx, runID)
		}
		return err
	})
	if errors.Is(err, fault.RunLeaseHeld) {
		r.log.Info("held by another invocation", "run_id", runID, "child_id", childID, "error", err)
		return nil
	}
	if err != nil {
		return fmt.Errorf("runner: %w", err)
	}
	takeovers := 0
	if lapsed != "" {
		// Lambda's retry of an invocation that died, or the sweep's
		// re-invocation (schedule/keeper, Keeper.Sweep): counted alike.
		r.log.Warn("took over a lease that lapsed", "run_id", runID, "child_id", childID, "lapsed_holder", lapsed)
		if child == nil {
			takeovers, err = st.NoteTakeover(ctx, runID, holder)
		} else {
			takeovers, err = st.NoteChildTakeover(ctx, runID, childID, holder)
		}
		if err != nil {
			return fmt.Errorf("runner: %w", err)
		}
	}
	renew := func(ctx context.Context) error {
		_, err := st.RenewLease(ctx, runID, holder, r.cfg.Lease)
		return err
	}
	release := func(ctx context.Context) error { return st.ReleaseLease(ctx, runID, holder) }
	if child != nil {
		renew = func(ctx context.Context) error {
			_, err := st.RenewChildLease(ctx, runID, childID, holder, r.cfg.Lease)
			return err
		}
		release = func(ctx context.Context) error { return st.ReleaseChildLease(ctx, runID, childID, holder) }
	}
	if dl, ok := ctx.Deadline(); ok {
		// Keep time to hand the run over when a turn runs into the deadline.
		var stop context.CancelFunc
		ctx, stop = context.WithDeadline(ctx, dl.Add(-handOverReserve))
		defer stop()
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	renewed := r.keepLease(ctx, cancel, renew, runID, childID)
	unlease := sync.OnceFunc(func() {
		cancel(nil)
		<-renewed
		// A fresh context: the invocation's may be done, the lease must go.
		rctx, rcancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer rcancel()
		if err := release(rctx); err != nil && !errors.Is(err, fault.RunLeaseHeld) {
			r.log.Warn("release the lease", "run_id", runID, "child_id", childID, "error", err)
		}
	})
	defer unlease()
	var x *execution
	if child != nil {
		x, err = r.loadChild(ctx, run, *child, holder, unlease)
	} else {
		x, err = r.load(ctx, run, holder, unlease)
	}
	if err != nil || x == nil {
		return err
	}
	if takeovers >= maxTakeovers {
		// Killed again and again at some point of the run (memory, most
		// likely): Lambda retries an invocation twice, and a run left to a
		// last one that is killed too would stay running for ever. A child
		// fails the same way, and its parent hears why.
		what := "run"
		if child != nil {
			what = "child agent"
		}
		return x.end(ctx, store.StatusFailed, "", stoppedError(takeovers, what))
	}
	x.stop = cancel
	if err := x.loop(ctx); !errors.Is(err, errHandedOver) && !errors.Is(err, errChildGone) {
		return err
	}
	return nil
}

// keepLease renews the lease until ctx is done; losing it cancels ctx.
// The returned channel closes when it has stopped.
func (r *Runner) keepLease(ctx context.Context, cancel context.CancelCauseFunc, renew func(context.Context) error, runID, childID string) <-chan struct{} {
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(r.cfg.Lease / 3)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				if err := renew(ctx); err != nil && ctx.Err() == nil {
					r.log.Error("lost the lease", "run_id", runID, "child_id", childID, "error", err)
					cancel(fmt.Errorf("lost the lease: %w", err))
					return
				}
			}
		}
	}()
	return done
}

// stoppedError is why a run (what: "run") or a child ("child agent") fails
// after takeovers takeovers.
func stoppedError(takeovers int, what string) *RunError {
	return &RunError{Code: run.CodeStopped, Message: fmt.Sprintf(
		"the runner was stopped %d times without handing the %s over (killed for memory or time: the runner function's logs say which); the %s cannot go on", takeovers, what, what)}
}

// awaitLease calls acquire until it takes the lease, or until it is plain
// that a live invocation holds it. A live holder renews its lease every
// Lease/3, so it always has more than two thirds of Lease left; a lease
// with less has missed a renewal, and one that runs out was held by an
// invocation that died without releasing it (killed for memory or time).
// This invocation — Lambda's retry of that one, most often — then waits
// for the lease to lapse and takes the run over, instead of leaving it
// running forever. A holder that renews meanwhile, or another that takes
// the lease, is alive: acquire's fault.RunLeaseHeld is returned and the
// run left to it, as it is at once for a fresh lease, or one that would
// lapse past ctx's deadline. (A lease that has already run out is taken
// by the first acquire; the store says whose it was, for the count.)
// It reads and waits on Config.Now and Config.After, the clock the store's
// lease expiry is by.
func (r *Runner) awaitLease(ctx context.Context, acquire func() error) error {
	err := acquire()
	var held *store.LeaseHeld
	if !errors.As(err, &held) || held.Until.Sub(r.cfg.Now()) > r.cfg.Lease*2/3-r.cfg.Lease/12 {
		return err
	}
	first := *held
	for {
		wait := held.Until.Sub(r.cfg.Now()) + leasePoll/10
		if dl, ok := ctx.Deadline(); ok && r.cfg.Now().Add(wait).After(dl) {
			return err
		}
		// Poll: a holder that hands over releases the lease before it
		// lapses, and the run need not wait for the lapse then.
		select {
		case <-ctx.Done():
			return err
		case <-r.cfg.After(min(wait, leasePoll)):
		}
		if err = acquire(); !errors.As(err, &held) {
			return err // taken (lapsed or released), or the store failing
		}
		if held.Holder != first.Holder || held.Until.After(first.Until) {
			return err // renewed, or taken by another: alive
		}
	}
}

// maxTakeovers is how many times a run's (or a child's) lease may be taken
// over from a dead invocation before it fails: with Lambda's two retries
// of an invocation, the second takeover is the last chance it would get.
const maxTakeovers = 2

// leasePoll is how often awaitLease tries a lapsing lease again.
const leasePoll = 2 * time.Second

func newHolder() string {
	b := make([]byte, 12)
	rand.Read(b)
	return "inv_" + hex.EncodeToString(b)
}

// execution is one invocation's work on one run.
type execution struct {
	r      *Runner
	run    store.Run
	holder string
	// unlease stops renewing the lease and releases it, once.
	unlease func()
	// cancelled is set when the run is seen cancelled between turns.
	cancelled atomic.Bool
	def       *fleet.Definition
	st        *state
	step      int64 // the last committed step
	tools     *toolset
	// sandbox is the run's sandbox once a tool needed it; mu guards it
	// across concurrent tool calls.
	mu      sync.Mutex
	sandbox *launch.Sandbox
	// folder is the fleet's folder in the sandbox (Config.Folders).
	folder folderState
	// resumed says an earlier invocation committed steps of the run.
	resumed bool
	// child is the child agent this invocation executes; nil for the
	// run's own agent.
	child *store.Child
	// childEnd ends the child with the next commit.
	childEnd *store.ChildEnd
	// stop cancels the invocation's work with a cause.
	stop context.CancelCauseFunc
	// messages are the step's message.posted events, guarded by mu.
	messages []store.NewEvent
	// inbox are the run.input events of messages taken into the
	// conversation since the last commit.
	inbox []store.NewEvent
	// spawned says this invocation started a child agent.
	spawned atomic.Bool
}

// load reads the run, its pinned Definition and its checkpoint. It returns
// nil (and no error) for a run with nothing left to do.
func (r *Runner) load(ctx context.Context, run store.Run, holder string, unlease func()) (*execution, error) {
	x := &execution{r: r, run: run, holder: holder, unlease: unlease}
	ckpt, err := r.cfg.Store.LoadCheckpoint(ctx, run.ID)
	if err != nil {
		return nil, fmt.Errorf("runner: %w", err)
	}
	if x.st, err = r.decode(ctx, run.ID, "", ckpt); err != nil {
		return nil, fmt.Errorf("runner: run %s: %w", run.ID, err)
	}
	x.step = ckpt.Step
	x.resumed = ckpt.Step > 0
	if run.Status.Terminal() {
		if x.st.Ended == nil && run.Status == store.StatusCancelled {
			// Cancelled from outside before this invocation: say so in the log.
			return nil, x.end(ctx, store.StatusCancelled, "", nil)
		}
		if x.st.Ended != nil && !run.Notified {
			// The invocation that settled it died before it told anyone.
			x.notify(ctx)
		}
		x.releaseSandbox(ctx)
		return nil, nil
	}
	if x.st.Ended != nil { // the final step is committed; the status move is not
		return nil, x.settle(ctx)
	}
	if run.Status == store.StatusQueued {
		if x.run, err = r.cfg.Store.Transition(ctx, run.ID, store.StatusRunning, ""); err != nil {
			return nil, fmt.Errorf("runner: %w", err)
		}
	}
	if ok, err := x.loadDefinition(ctx, nil); !ok {
		return nil, err
	}
	return x, nil
}

// loadDefinition reads the run's pinned Definition and the tools of the
// agent: the Definition's, or a child's (tools). A Definition that cannot
// run here ends the agent failed, saying why; ok is false then, and err
// is the end's.
func (x *execution) loadDefinition(ctx context.Context, tools []string) (ok bool, err error) {
	rev, err := x.r.cfg.Store.GetRevision(ctx, x.run.Fleet, x.run.Revision)
	if err != nil {
		return false, fmt.Errorf("runner: %w", err)
	}
	if x.def, err = fleet.ParseJSON(rev.Definition); err != nil {
		return false, x.end(ctx, store.StatusFailed, "", &RunError{Code: run.CodeDefinition,
			Message: fmt.Sprintf("revision %d of fleet %s cannot be read: %v", x.run.Revision, x.run.Fleet, err)})
	}
	if err := x.def.CheckAvailable(fleet.AvailableTools(x.r.cfg.Display)); err != nil {
		return false, x.end(ctx, store.StatusFailed, "", &RunError{Code: run.CodeDefinition, Message: err.Error()})
	}
	if tools == nil {
		tools = x.def.Tools
	}
	if x.tools, err = newToolset(x.def, tools); err != nil {
		return false, x.end(ctx, store.StatusFailed, "", &RunError{Code: run.CodeDefinition, Message: err.Error()})
	}
	return true, nil
}

// loop runs turns until the run ends or the deadline nears.
func (x *execution) loop(ctx context.Context) error {
	if x.step == 0 {
		start := x.start
		if x.child != nil {
			start = x.startChild
		}
		if err := start(ctx); err != nil {
			return err
		}
	}
	defer x.watch(ctx)()
	x.awaitBurst(ctx)
	for {
		if ctx.Err() != nil {
			return x.interrupted(ctx, context.Cause(ctx))
		}
		if x.cancelled.Load() {
			return x.end(ctx, store.StatusCancelled, "", nil)
		}
		if x.nearDeadline(ctx) {
			return x.handOver(ctx)
		}
		done, err := x.turn(ctx)
		if err != nil || done {
			return err
		}
	}
}

// watch notices a cancellation between turns without a read on each: it
// reads the run's status every Config.Watch. (The turn's commit refuses a
// cancelled run too, so a cancel that lands between two reads stops the
// run at that commit.) It returns the function that stops it.
func (x *execution) watch(ctx context.Context) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(x.r.cfg.Watch)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				if x.child != nil {
					// A child's work stops at once: the tool call or model
					// call under way is cancelled.
					if x.childStopped(ctx) {
						x.cancelled.Store(true)
						x.stop(errChildStopped)
						return
					}
					continue
				}
				if run, err := x.r.cfg.Store.GetRun(ctx, x.run.ID); err == nil && run.Status == store.StatusCancelled {
					x.cancelled.Store(true)
					testHookCancelSeen(x.run.ID)
					return
				}
			}
		}
	}()
	return func() { cancel(); <-done }
}

// testHookCancelSeen is called once watch has seen the run cancelled, so
// tests wait for that instead of sleeping; a no-op outside them.
var testHookCancelSeen = func(runID string) {}

// start commits step 1: run.started and the input as the first message.
func (x *execution) start(ctx context.Context) error {
	input, err := x.r.cfg.Store.GetRunInput(ctx, x.run.ID)
	if err != nil {
		return fmt.Errorf("runner: %w", err)
	}
	text := strings.TrimSpace(string(input))
	if text == "" {
		text = "(The run was started without input.)"
	}
	history, err := x.history(ctx)
	if err != nil {
		return err
	}
	x.st.Messages = append(history, model.Message{Role: model.User, Content: []model.Part{{Text: text}}})
	if err := x.commit(ctx, store.Step{}, newEvent(EventRunStarted, RunStarted{Fleet: x.run.Fleet, Revision: x.run.Revision, Source: x.run.Source})); err != nil {
		return err
	}
	x.show(ctx, thread.Request{Op: thread.OpWorking})
	return nil
}

// turn is one step: the model's next answer, the tool calls it asks for,
// and one commit of both — the answer and the results, a tool.call and a
// tool.result event each, the tokens and the calls spent — or the run's
// end when it answers without a tool call.
//
// A turn cut short (the invocation's deadline, the process stopping)
// commits nothing: the next invocation asks the model again. Its sandbox
// calls carry keys made from the run, the step, the call's place, name and
// arguments, so that a call the new answer repeats is answered from
// sandboxd's cache instead of running twice.
func (x *execution) turn(ctx context.Context) (done bool, err error) {
	if err := x.takeInbox(ctx); err != nil {
		return true, err
	}
	if err := x.fitContext(ctx); err != nil || x.st.Ended != nil {
		return true, err
	}
	x.note(Note{Thinking: true})
	resp, err := x.r.cfg.Model.Converse(ctx, model.Request{
		Model:     x.modelID(),
		System:    x.system(),
		Messages:  x.st.Messages,
		Tools:     x.tools.offered,
		MaxTokens: x.r.cfg.MaxTokens,
		OnText:    func(d string) { x.note(Note{Thinking: true, Text: d}) },
	})
	x.note(Note{})
	if err != nil {
		if ctx.Err() != nil {
			return true, x.interrupted(ctx, context.Cause(ctx))
		}
		return true, x.end(ctx, store.StatusFailed, "", &RunError{Code: run.CodeModel, Message: err.Error()})
	}
	x.st.Usage.InputTokens += resp.Usage.InputTokens
	x.st.Usage.OutputTokens += resp.Usage.OutputTokens
	x.st.LastInput = resp.Usage.InputTokens
	spend := store.Budget{Tokens: resp.Usage.Total()}
	resp.Message.Role = model.Assistant
	for i := range resp.Message.Content {
		if tc := resp.Message.Content[i].ToolCall; tc != nil && len(tc.Arguments) == 0 {
			tc.Arguments = json.RawMessage("{}")
		}
	}
	calls := resp.Message.ToolCalls()
	x.st.Messages = append(x.st.Messages, resp.Message)
	if len(calls) == 0 {
		answer := strings.TrimSpace(resp.Message.Text())
		switch {
		case answer == "":
			return true, x.end(ctx, store.StatusFailed, "", &RunError{Code: run.CodeNoAnswer,
				Message: fmt.Sprintf("the model stopped (%s) without an answer or a tool call", resp.Stop)}, spend)
		case resp.Stop == model.StopMaxTokens:
			answer += "\n\n[The answer was cut at the model's output limit.]"
		}
		return true, x.end(ctx, store.StatusSucceeded, answer, nil, spend)
	}
	if x.cancelled.Load() {
		return true, x.end(ctx, store.StatusCancelled, "", nil)
	}
	spend.ToolCalls = int64(len(calls))
	if msg, ok := x.affords(spend); !ok {
		// Refused before any call runs; the commit would refuse it after.
		return true, x.end(ctx, store.StatusFailed, "", &RunError{Code: fault.RunBudgetSpent.ID(), Message: msg})
	}
	x.st.Usage.ToolCalls += spend.ToolCalls
	events := make([]store.NewEvent, 0, 2*len(calls))
	for _, c := range calls {
		tc := ToolCall{CallID: c.ID, Name: c.Name, Arguments: c.Arguments}
		events = append(events, newEvent(EventToolCall, tc))
		x.note(Note{Calling: &tc})
	}
	results, resultEvents := x.runTools(ctx, calls)
	if ctx.Err() != nil {
		return true, x.interrupted(ctx, context.Cause(ctx))
	}
	parts := make([]model.Part, len(results))
	for i := range results {
		parts[i] = model.Part{ToolResult: &results[i]}
	}
	x.st.Messages = append(x.st.Messages, model.Message{Role: model.User, Content: parts})
	err = x.commit(ctx, store.Step{Spend: spend, WhileRunning: true}, append(events, resultEvents...)...)
	switch {
	case errors.Is(err, store.ErrRunEnded):
		return true, x.end(ctx, store.StatusCancelled, "", nil)
	case errors.Is(err, store.ErrChildEnded):
		return true, x.childGone(ctx)
	case errors.Is(err, fault.RunBudgetSpent):
		return true, x.budgetSpent(ctx, err)
	}
	return false, err
}

// affords reports whether the run's budget, as this invocation knows it,
// still holds spend; if not, it says which figure runs out. The commit
// checks again atomically: children spending the same budget at once may
// still make it refuse.
func (x *execution) affords(spend store.Budget) (string, bool) {
	lim, used := x.run.Limits, x.run.Spent
	if c := x.child; c != nil {
		switch {
		case c.Limits.ToolCalls > 0 && c.Spent.ToolCalls+spend.ToolCalls > c.Limits.ToolCalls:
			return fmt.Sprintf("child %s has %d of the %d tool calls of its share left and the model asked for %d", c.ID, c.Limits.ToolCalls-c.Spent.ToolCalls, c.Limits.ToolCalls, spend.ToolCalls), false
		case c.Limits.Tokens > 0 && c.Spent.Tokens+spend.Tokens > c.Limits.Tokens:
			return fmt.Sprintf("child %s has %d of the %d tokens of its share left and the last model call used %d", c.ID, max(c.Limits.Tokens-c.Spent.Tokens, 0), c.Limits.Tokens, spend.Tokens), false
		}
	}
	switch {
	case lim.ToolCalls > 0 && used.ToolCalls+spend.ToolCalls > lim.ToolCalls:
		return fmt.Sprintf("run %s has %d of %d tool calls left and the model asked for %d", x.run.ID, lim.ToolCalls-used.ToolCalls, lim.ToolCalls, spend.ToolCalls), false
	case lim.Tokens > 0 && used.Tokens+spend.Tokens > lim.Tokens:
		return fmt.Sprintf("run %s has %d of %d tokens left and the last model call used %d", x.run.ID, max(lim.Tokens-used.Tokens, 0), lim.Tokens, spend.Tokens), false
	}
	return "", true
}

// commit commits the next step: the state as it is now, with st's spend
// and condition, and events.
func (x *execution) commit(ctx context.Context, st store.Step, events ...store.NewEvent) error {
	next := x.step + 1
	events = append(x.inbox, events...)
	data, turns, err := x.r.encode(ctx, x.blobPrefix(), next, x.st)
	if err != nil {
		return fmt.Errorf("runner: run %s: %w", x.run.ID, err)
	}
	st.Holder, st.Number, st.Checkpoint, st.Turns, st.Events = x.holder, next, data, turns, events
	var first int64
	if x.child != nil {
		st.WhileRunning = false // implied for a child
		first, err = x.r.cfg.Store.CommitChildStep(ctx, x.run.ID, x.child.ID, store.ChildStep{Step: st, End: x.childEnd})
	} else {
		first, err = x.r.cfg.Store.CommitStep(ctx, x.run.ID, st)
	}
	if err != nil {
		return fmt.Errorf("runner: %w", err)
	}
	x.st.committed()
	x.step, x.inbox = next, nil
	x.run.Spent.Tokens += st.Spend.Tokens
	x.run.Spent.ToolCalls += st.Spend.ToolCalls
	if x.child != nil {
		x.child.Spent.Tokens += st.Spend.Tokens
		x.child.Spent.ToolCalls += st.Spend.ToolCalls
	}
	if x.r.cfg.Observer != nil {
		at := x.r.cfg.Now().UTC().Format(time.RFC3339Nano)
		for i, ev := range events {
			x.note(Note{Event: &Event{Seq: first + int64(i), Type: ev.Type, Time: at, Agent: x.agentID(), Data: ev.Data}})
		}
	}
	return nil
}

// end commits run.ended, moves the run to status, and stops its sandbox.
// answer is the final answer (succeeded); runErr says why it did not
// succeed (nil for succeeded and cancelled).
//
// spend is the last model call's tokens, when that call is what ended the
// run: a budget that call itself spent ends it failed, saying so.
func (x *execution) end(ctx context.Context, status store.Status, answer string, runErr *RunError, spend ...store.Budget) error {
	if x.child != nil {
		return x.endChild(ctx, status, answer, runErr, spend...)
	}
	ended := &RunEnded{Result: run.Result{Status: run.Status(status), Answer: answer, Error: runErr, Usage: x.st.Usage}}
	if len(answer) > MaxEventAnswer {
		ended.Answer, ended.AnswerTruncated = cutUTF8(answer, MaxEventAnswer), true
	}
	x.st.Ended = ended
	var b store.Budget
	if len(spend) > 0 {
		b = spend[0]
	}
	// Children still working end interrupted, and the folder is saved,
	// before run.ended, which stays the last event.
	x.interruptAll(ctx)
	events := append(x.saveFolder(ctx), newEvent(EventRunEnded, ended))
	err := x.commit(ctx, store.Step{Spend: b}, events...)
	if errors.Is(err, fault.RunBudgetSpent) && b != (store.Budget{}) {
		return x.budgetSpent(ctx, err)
	}
	if err != nil {
		return err
	}
	return x.settle(ctx)
}

// budgetSpent ends the run failed with the budget's code and which figure.
func (x *execution) budgetSpent(ctx context.Context, err error) error {
	var fe *fault.Error
	msg := fault.RunBudgetSpent.Error()
	if errors.As(err, &fe) {
		msg = fe.Msg
	}
	x.st.Ended, x.childEnd = nil, nil
	return x.end(ctx, store.StatusFailed, "", &RunError{Code: fault.RunBudgetSpent.ID(), Message: msg})
}

// settle moves the run to the status its committed run.ended says, and
// stops its sandbox. A run already moved there (or cancelled meanwhile) is
// left as it is.
func (x *execution) settle(ctx context.Context) error {
	defer x.releaseSandbox(ctx)
	defer x.scheduleRunEnded(ctx)
	e := x.st.Ended
	reason := ""
	if e.Error != nil {
		reason = e.Error.Code + ": " + e.Error.Message
	}
	if e.Status != run.StatusCancelled { // else the canceller moved it
		_, err := x.r.cfg.Store.Transition(ctx, x.run.ID, store.Status(e.Status), reason)
		if errors.Is(err, fault.RunBadTransition) {
			// Settled by an earlier invocation, which told of the end
			// unless it died first.
			if run, err := x.r.cfg.Store.GetRun(ctx, x.run.ID); err != nil || run.Notified {
				return nil
			}
		} else if err != nil {
			return fmt.Errorf("runner: %w", err)
		}
	}
	x.notify(ctx)
	return nil
}

// notify tells where the ended run came from that it ended — its Slack
// thread, its callback_url — and records that it has: an invocation that
// dies in between leaves the run ended and not notified, and the next one
// (Lambda's retry, which takes the lapsed lease over) tells it. So each is
// told at least once; a receiver dedupes a callback by its run_id.
func (x *execution) notify(ctx context.Context) {
	if x.child != nil {
		return
	}
	x.showEnd(ctx)
	x.deliverCallback(ctx)
	if err := x.r.cfg.Store.MarkRunNotified(context.WithoutCancel(ctx), x.run.ID); err != nil {
		x.r.log.Warn("the run's end was told but not recorded as told", "run_id", x.run.ID, "error", err)
	}
}

// interrupted is the invocation stopping short (its context done, or the
// store failing): nothing more is committed; the run goes on from its last
// step in the next invocation.
//
// Only the invocation's deadline hands the run over at once; any other
// stop (the lease lost, the process stopping, the store failing) leaves it
// to whoever starts the run again, or to the one that took the lease.
func (x *execution) interrupted(ctx context.Context, cause error) error {
	if errors.Is(cause, context.DeadlineExceeded) {
		return x.handOver(ctx)
	}
	if errors.Is(cause, errChildStopped) {
		if err := x.end(context.WithoutCancel(ctx), store.StatusCancelled, "", nil); err != nil {
			return err
		}
		return errChildGone
	}
	return fmt.Errorf("runner: run %s stopped after step %d: %w", x.run.ID, x.step, cause)
}

// handOver starts a new invocation for the run, which takes over once this
// one has released the lease.
//
// The lease goes first: the new invocation may start at once, and one that
// found the lease still held would take it for a duplicate and stop.
func (x *execution) handOver(ctx context.Context) error {
	x.unlease()
	payload, _ := json.Marshal(Payload{RunID: x.run.ID, ChildID: x.agentID()})
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	if err := x.r.cfg.Invoker.Start(sctx, invoke.Runner, payload); err != nil {
		return fmt.Errorf("runner: hand run %s over to a new invocation: %w", x.run.ID, err)
	}
	x.r.log.Info("handed over before the deadline", "run_id", x.run.ID, "child_id", x.agentID(), "step", x.step)
	return errHandedOver
}

// handOverReserve is the time kept before an invocation's deadline for
// handing the run over when a turn runs into it.
const handOverReserve = 15 * time.Second

// errHandedOver ends an invocation that handed its run to a new one: no
// failure, and nothing more to do here.
var errHandedOver = errors.New("the run was handed over to a new invocation")

// nearDeadline reports whether the invocation's deadline is closer than
// the margin a step may need.
func (x *execution) nearDeadline(ctx context.Context) bool {
	dl, ok := ctx.Deadline()
	if !ok {
		return false
	}
	margin := x.r.cfg.Margin
	if margin <= 0 {
		margin = x.def.Limits.ToolTimeout() + time.Minute
	}
	return dl.Sub(x.r.cfg.Now()) < margin
}

func (x *execution) modelID() string {
	if x.def.Model != "" {
		return x.def.Model
	}
	return x.r.cfg.DefaultModel
}

// system is the system prompt: the fleet's instructions, then what the run
// is and how tools work here.
func (x *execution) system() string {
	var b strings.Builder
	b.WriteString(strings.TrimSpace(x.def.Instructions))
	if x.child != nil {
		fmt.Fprintf(&b, "\n\nYou are a child agent in a run of the fleet %q, run by agentsfleet: another agent of the run started you to do one task, the first message. You do not see its conversation; you share the run's sandbox, files and budget.",
			x.def.Name)
	} else {
		fmt.Fprintf(&b, "\n\nYou are the agent of the fleet %q, run by agentsfleet. This run was started from %s on %s.",
			x.def.Name, x.run.Source, x.run.CreatedAt.UTC().Format("Monday 2 January 2006, 15:04 UTC"))
	}
	places := launch.Places{Workdir: x.def.Workdir, Agent: launch.DefaultAgent}
	x.mu.Lock()
	sb := x.sandbox
	x.mu.Unlock()
	switch p, ok := x.r.cfg.Sandboxes.(launch.Placer); {
	case sb != nil && sb.Places != (launch.Places{}):
		// A sandbox whose folders are known once it is had (a warm local
		// one): from the turn after, the prompt names them.
		places = sb.Places
	case ok:
		places = p.Places(x.spec())
	}
	fmt.Fprintf(&b, " Your working directory is %s", places.Workdir)
	if places.Agent != "" {
		fmt.Fprintf(&b, "; the fleet's folder %s keeps files from one run to the next", places.Agent)
	}
	b.WriteString(".")
	if x.child != nil {
		b.WriteString(" Use the tools to do the task. When you are done, answer with your final message and no tool call: that answer is what the agent that started you receives.")
	} else {
		b.WriteString(" Use the tools to do the work. When you are done, answer with your final message and no tool call: that answer is what the person who started the run receives.")
	}
	return b.String()
}

func (x *execution) note(n Note) {
	if x.r.cfg.Observer != nil {
		n.RunID, n.Agent = x.run.ID, x.agentID()
		x.r.cfg.Observer(n)
	}
}

// spec is what the run asks of its sandbox.
func (x *execution) spec() launch.Spec {
	return launch.Spec{RunID: x.run.ID, Fleet: x.run.Fleet, Workdir: x.def.Workdir,
		Size: x.def.Sandbox.Size, ToolTimeout: x.def.Limits.ToolTimeout()}
}
