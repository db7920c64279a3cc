package runner

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/agentsfleet/agentsfleet/shared/fault"
	"github.com/agentsfleet/agentsfleet/shared/fleet"
	"github.com/agentsfleet/agentsfleet/shared/metrics"
	"github.com/agentsfleet/agentsfleet/shared/model"
	"github.com/agentsfleet/agentsfleet/shared/run"
	"github.com/agentsfleet/agentsfleet/shared/slack/thread"
	"github.com/agentsfleet/agentsfleet/shared/store"
)

// ownAgent is the run's own agent: its lease, checkpoint and steps are the
// run's; it starts from the run's input, reads the run's Slack thread and
// shows its work there, and its end ends the run: its children still
// working are interrupted, the fleet's folder saved, the sandbox released,
// and where the run came from told.
type ownAgent struct {
	st    *store.Store
	runID string
}

var _ agent = ownAgent{}

func (a ownAgent) id() string   { return "" }
func (a ownAgent) what() string { return "run" }

func (a ownAgent) acquire(ctx context.Context, holder string, d time.Duration) (store.Run, string, error) {
	run, err := a.st.AcquireLease(ctx, a.runID, holder, d)
	return run, run.LapsedHolder, err
}

func (a ownAgent) renew(ctx context.Context, holder string, d time.Duration) error {
	_, err := a.st.RenewLease(ctx, a.runID, holder, d)
	return err
}

func (a ownAgent) release(ctx context.Context, holder string) error {
	return a.st.ReleaseLease(ctx, a.runID, holder)
}

func (a ownAgent) noteTakeover(ctx context.Context, holder string) (int, error) {
	return a.st.NoteTakeover(ctx, a.runID, holder)
}

// load reads the run's checkpoint and its pinned Definition. A run that
// has ended, or whose last step is committed, is finished here instead.
func (a ownAgent) load(ctx context.Context, x *execution) (bool, error) {
	ckpt, err := a.st.LoadCheckpoint(ctx, x.run.ID)
	if err != nil {
		return false, fmt.Errorf("runner: %w", err)
	}
	if x.st, err = x.r.decode(ctx, x.run.ID, "", ckpt); err != nil {
		return false, fmt.Errorf("runner: run %s: %w", x.run.ID, err)
	}
	x.step = ckpt.Step
	x.resumed = ckpt.Step > 0
	x.thread = x.run.Thread
	if x.run.Status.Terminal() {
		return false, a.ended(ctx, x)
	}
	if x.st.Ended != nil { // the final step is committed; the status move is not
		return false, a.settle(ctx, x)
	}
	if x.run.Status == store.StatusWaiting {
		// Started again before a person answered (a retry, a sweep):
		// the decision that leaves none pending starts the run's next
		// invocation.
		x.r.log.Info("waiting for approval; nothing to do until it is decided", "run_id", x.run.ID, "pending", x.run.PendingApprovals)
		return false, nil
	}
	if x.run.Status == store.StatusQueued {
		if x.run, err = a.st.Transition(ctx, x.run.ID, store.StatusRunning, ""); err != nil {
			return false, fmt.Errorf("runner: %w", err)
		}
	}
	return x.loadDefinition(ctx, nil)
}

// ended finishes what is left of a run that has ended.
func (a ownAgent) ended(ctx context.Context, x *execution) error {
	if x.st.Ended == nil && x.run.Status == store.StatusCancelled {
		// Cancelled from outside before this invocation: say so in the log.
		return x.end(ctx, store.StatusCancelled, "", nil)
	}
	if x.st.Ended != nil && !x.run.Notified {
		// The invocation that settled it died before it told anyone.
		a.notify(ctx, x)
	}
	x.releaseSandbox(ctx)
	return nil
}

// start commits step 1: run.started and the input as the first message.
func (a ownAgent) start(ctx context.Context, x *execution) error {
	input, err := a.st.GetRunInput(ctx, x.run.ID)
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
	if err := x.commit(ctx, store.Step{}, newEvent(run.EventRunStarted, run.RunStarted{Fleet: x.run.Fleet, Revision: x.run.Revision, Source: x.run.Source})); err != nil {
		return err
	}
	x.record(metrics.Dim{Name: metrics.DimSource, Value: string(x.run.Source)}, count(metrics.RunsStarted, 1))
	x.show(ctx, thread.Request{Op: thread.OpWorking})
	return nil
}

func (a ownAgent) commit(ctx context.Context, x *execution, st store.Step) (int64, error) {
	return a.st.CommitStep(ctx, x.run.ID, st)
}

// end commits run.ended, moves the run to status, and stops its sandbox.
// A budget that spend itself spent ends the run failed, saying so.
func (a ownAgent) end(ctx context.Context, x *execution, status store.Status, answer string, runErr *run.Error, spend store.Budget) error {
	ended := x.screenEnd(ctx, &run.RunEnded{Result: run.Result{Status: status, Answer: answer, Error: runErr, Usage: x.st.Usage, Cost: x.cost(ctx)}})
	x.st.Ended = ended
	// Children still working end interrupted, and the folder is saved,
	// before run.ended, which stays the last event.
	x.interruptAll(ctx)
	events := append(x.saveFolder(ctx), newEvent(run.EventRunEnded, ended))
	err := x.commit(ctx, store.Step{Spend: spend}, events...)
	if errors.Is(err, fault.RunBudgetSpent) && spend != (store.Budget{}) {
		return x.budgetSpent(ctx, err)
	}
	if err != nil {
		return err
	}
	return a.settle(ctx, x)
}

// settle moves the run to the status its committed run.ended says, and
// stops its sandbox. A run already moved there (or cancelled meanwhile) is
// left as it is.
func (a ownAgent) settle(ctx context.Context, x *execution) error {
	defer x.releaseSandbox(ctx)
	defer x.scheduleRunEnded(ctx)
	e := x.st.Ended
	reason := ""
	if e.Error != nil {
		reason = e.Error.Code + ": " + e.Error.Message
	}
	settled := true                      // by this invocation: the run's end is counted once
	if e.Status != run.StatusCancelled { // else the canceller moved it
		_, err := a.st.Transition(ctx, x.run.ID, e.Status, reason)
		if errors.Is(err, fault.RunBadTransition) {
			// Settled by an earlier invocation, which told of the end
			// unless it died first.
			if run, err := a.st.GetRun(ctx, x.run.ID); err != nil || run.Notified {
				return nil
			}
			settled = false
		} else if err != nil {
			return fmt.Errorf("runner: %w", err)
		}
	}
	if settled {
		x.record(metrics.Dim{Name: metrics.DimStatus, Value: string(e.Status)}, count(metrics.RunsEnded, 1))
	}
	a.notify(ctx, x)
	return nil
}

// notify tells where the ended run came from that it ended — its Slack
// thread, its callback_url — and records that it has: an invocation that
// dies in between leaves the run ended and not notified, and the next one
// (Lambda's retry, which takes the lapsed lease over) tells it. So each is
// told at least once; a receiver dedupes a callback by its run_id.
func (a ownAgent) notify(ctx context.Context, x *execution) {
	x.showEnd(ctx)
	x.deliverCallback(ctx)
	if err := a.st.MarkRunNotified(context.WithoutCancel(ctx), x.run.ID); err != nil {
		x.r.log.Warn("the run's end was told but not recorded as told", "run_id", x.run.ID, "error", err)
	}
}

// stopped notices the run cancelled: the turn under way finishes, and the
// loop ends the run before the next.
func (a ownAgent) stopped(ctx context.Context, x *execution) bool {
	if run, err := a.st.GetRun(ctx, x.run.ID); err == nil && run.Status == store.StatusCancelled {
		x.cancelled.Store(true)
		testHookCancelSeen(x.run.ID)
		return true
	}
	return false
}

// share: the run's own agent spends from the run's budget alone.
func (a ownAgent) share(store.Budget) (string, bool) { return "", true }

func (a ownAgent) prompt(x *execution) (who, answer string) {
	return fmt.Sprintf("You are the agent of the fleet %q, run by agentsfleet. This run was started from %s on %s.",
			x.def.Name, x.run.Source, x.run.CreatedAt.UTC().Format("Monday 2 January 2006, 15:04 UTC")),
		"Use the tools to do the work. When you are done, answer with your final message and no tool call: that answer is what the person who started the run receives."
}

// grant is all the Definition allows.
func (a ownAgent) grant(def *fleet.Definition) grant {
	return grant{tools: def.AllowedTools(), secrets: def.Secrets, hosts: []string(def.Hosts)}
}

// releaseSandbox stops the run's sandbox, which its own agent holds.
func (a ownAgent) releaseSandbox(ctx context.Context, x *execution) error {
	return x.r.cfg.Sandboxes.Release(ctx, x.run.ID)
}

// secretNames are the names of the secrets in g, sorted.
func (g grant) secretNames() []string {
	return slices.Sorted(maps.Keys(g.secrets))
}
