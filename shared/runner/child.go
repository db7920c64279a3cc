package runner

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/agentsfleet/agentsfleet/shared/fault"
	"github.com/agentsfleet/agentsfleet/shared/fleet"
	"github.com/agentsfleet/agentsfleet/shared/model"
	"github.com/agentsfleet/agentsfleet/shared/run"
	"github.com/agentsfleet/agentsfleet/shared/store"
)

// Child agents are executed as runs are: each in runner invocations of its
// own (invoke.Runner with a Payload naming the child), holding a lease of
// its own, committing steps of its own with a checkpoint of its own, and
// handing itself over before an invocation's deadline. So a child goes on
// while its parent waits, hands over or is re-invoked, runs concurrently
// with its siblings in as many invocations as there are children (in AWS,
// each a Lambda invocation with its own 15 minutes and memory), and no
// committed step of it runs twice. Goroutines inside the parent's
// invocation would have tied every child to the parent's deadline, memory
// and crashes.
//
// A child's events go to the run's log, marked with its id (Event.Agent);
// its spending counts on the run's budget and on its share; it uses the
// run's sandbox, whose exec_command sessions it starts are tagged with its
// id and closed when it ends.

// childAgent is a child agent of a run: its lease, checkpoint and steps
// are the child's; it starts from its task, holds the share of the fleet's
// tools, secrets and hosts its parent gave it, stops at once when it is
// interrupted or its run ends, and its end is child.ended, whose answer its
// parent receives. The run's sandbox is its own agent's to release.
type childAgent struct {
	st             *store.Store
	runID, childID string
	// c is the child as its lease was taken; its Spent follows the commits.
	c store.Child
	// ending ends the child with the next commit.
	ending *store.ChildEnd
}

var _ agent = (*childAgent)(nil)

func (a *childAgent) id() string   { return a.childID }
func (a *childAgent) what() string { return "child agent" }

func (a *childAgent) acquire(ctx context.Context, holder string, d time.Duration) (store.Run, string, error) {
	c, err := a.st.AcquireChildLease(ctx, a.runID, a.childID, holder, d)
	if err != nil {
		return store.Run{}, "", err
	}
	a.c = c
	run, err := a.st.GetRun(ctx, a.runID)
	return run, c.LapsedHolder, err
}

func (a *childAgent) renew(ctx context.Context, holder string, d time.Duration) error {
	_, err := a.st.RenewChildLease(ctx, a.runID, a.childID, holder, d)
	return err
}

func (a *childAgent) release(ctx context.Context, holder string) error {
	return a.st.ReleaseChildLease(ctx, a.runID, a.childID, holder)
}

func (a *childAgent) noteTakeover(ctx context.Context, holder string) (int, error) {
	return a.st.NoteChildTakeover(ctx, a.runID, a.childID, holder)
}

// load reads the child's checkpoint and the run's Definition. A child
// that ended has nothing left to do; one whose run ended ends cancelled.
func (a *childAgent) load(ctx context.Context, x *execution) (bool, error) {
	ckpt, err := a.st.LoadChildCheckpoint(ctx, x.run.ID, a.c.ID)
	if err != nil {
		return false, fmt.Errorf("runner: %w", err)
	}
	if x.st, err = x.r.decode(ctx, x.run.ID, a.c.ID, ckpt); err != nil {
		return false, fmt.Errorf("runner: child %s of run %s: %w", a.c.ID, x.run.ID, err)
	}
	x.step, x.resumed = ckpt.Step, ckpt.Step > 0
	if a.c.Status != store.ChildRunning {
		return false, nil
	}
	if x.run.Status != store.StatusRunning {
		return false, x.end(ctx, store.StatusCancelled, "", nil)
	}
	return x.loadDefinition(ctx, nonNil(a.c.Tools))
}

// start commits the child's step 1: child.started and its task as the
// first message.
func (a *childAgent) start(ctx context.Context, x *execution) error {
	c := a.c
	x.st.Messages = []model.Message{{Role: model.User, Content: []model.Part{{Text: c.Task}}}}
	started := run.ChildStarted{ChildID: c.ID, Status: store.ChildRunning, ParentID: c.ParentID, Depth: c.Depth, Task: c.Task, Tools: nonNil(c.Tools)}
	var sc screen
	sc.add(&started.Task)
	x.screen(ctx, &sc) // the event's task; the child's model gets it whole
	err := x.commit(ctx, store.Step{}, newEvent(run.EventChildStarted, started))
	switch {
	case errors.Is(err, store.ErrChildEnded):
		x.gone(ctx)
		return errChildGone
	case errors.Is(err, store.ErrRunEnded):
		if err := x.end(ctx, store.StatusCancelled, "", nil); err != nil {
			return err
		}
		return errChildGone
	}
	return err
}

// errChildGone ends an execution whose child ended elsewhere (interrupted,
// its run ended): nothing more to do, no failure.
var errChildGone = errors.New("the child ended elsewhere")

// errChildStopped cancels the work of a child seen interrupted, or whose
// run ended.
var errChildStopped = errors.New("the child was interrupted or its run ended")

// commit commits the child's step (a child's steps are all taken while
// its run is running), ending it when end set a.ending.
func (a *childAgent) commit(ctx context.Context, x *execution, st store.Step) (int64, error) {
	st.WhileRunning = false // implied for a child
	first, err := a.st.CommitChildStep(ctx, x.run.ID, a.c.ID, store.ChildStep{Step: st, End: a.ending})
	if err == nil {
		a.c.Spent.Tokens += st.Spend.Tokens
		a.c.Spent.ToolCalls += st.Spend.ToolCalls
	}
	return first, err
}

// end ends the child: done with its answer, failed saying why, or
// interrupted (cancelled: its run ended or someone interrupted it). Its own
// children still working end interrupted first, and the exec_command
// sessions it started are closed.
func (a *childAgent) end(ctx context.Context, x *execution, status store.Status, answer string, runErr *run.Error, spend store.Budget) error {
	c := a.c
	x.interruptChildrenOf(ctx, c.ID)
	defer x.closeSessions(ctx, c.ID)
	ended := run.ChildEnded{ChildID: c.ID, ParentID: c.ParentID, Error: runErr, Usage: &run.Usage{}}
	*ended.Usage = x.st.Usage
	end := &store.ChildEnd{}
	switch status {
	case store.StatusSucceeded:
		ended.Status, end.Status, end.Result = store.ChildDone, store.ChildDone, cutUTF8(answer, run.MaxEventAnswer)
		ended.Answer = answer
	case store.StatusFailed:
		ended.Status, end.Status = store.ChildFailed, store.ChildFailed
		if runErr != nil {
			end.Result = runErr.Code + ": " + runErr.Message
		}
	default:
		return a.endInterrupted(ctx, x, ended)
	}
	// child.ended is screened (and its answer cut); the result its parent
	// reads is the parent's model's to see, and is screened in the
	// parent's step that reads it.
	var sc screen
	sc.addCut(&ended.Answer, &ended.AnswerTruncated, run.MaxEventAnswer)
	if ended.Error != nil {
		e := *ended.Error
		ended.Error = &e
		sc.addLong(&e.Message)
	}
	x.screen(ctx, &sc)
	a.ending = end
	err := x.commit(ctx, store.Step{Spend: spend}, newEvent(run.EventChildEnded, ended))
	a.ending = nil
	switch {
	case errors.Is(err, fault.RunBudgetSpent) && spend != (store.Budget{}):
		return x.budgetSpent(ctx, err)
	case errors.Is(err, store.ErrRunEnded):
		return x.end(ctx, store.StatusCancelled, "", nil)
	case errors.Is(err, store.ErrChildEnded):
		return nil
	}
	return err
}

// endInterrupted ends a child whose run ended (or is cancelled) without
// interrupting it yet: it ends itself the way the run's end would have.
func (a *childAgent) endInterrupted(ctx context.Context, x *execution, ended run.ChildEnded) error {
	ended.Status, ended.InterruptedBy = store.ChildInterrupted, run.InterruptedByRunEnd
	ev := agentEvent(newEvent(run.EventChildEnded, ended), a.c.ID)
	_, seq, err := a.st.FinishChild(ctx, x.run.ID, a.c.ID, store.ChildInterrupted, "", ev)
	if errors.Is(err, store.ErrChildEnded) {
		return nil
	}
	x.noteEvent(seq, ev)
	return err
}

// stopped stops the child's work at once when it was interrupted or its
// run ended: the tool call or model call under way is cancelled.
func (a *childAgent) stopped(ctx context.Context, x *execution) bool {
	c, err := a.st.GetChild(ctx, x.run.ID, a.c.ID)
	stop := err == nil && c.Status != store.ChildRunning
	if !stop {
		run, err := a.st.GetRun(ctx, x.run.ID)
		stop = err == nil && run.Status != store.StatusRunning
	}
	if stop {
		x.cancelled.Store(true)
		x.stop(errChildStopped)
	}
	return stop
}

// share checks spend against the child's share of the run's budget.
func (a *childAgent) share(spend store.Budget) (string, bool) {
	c := a.c
	switch {
	case c.Limits.ToolCalls > 0 && c.Spent.ToolCalls+spend.ToolCalls > c.Limits.ToolCalls:
		return fmt.Sprintf("child %s has %d of the %d tool calls of its share left and the model asked for %d", c.ID, c.Limits.ToolCalls-c.Spent.ToolCalls, c.Limits.ToolCalls, spend.ToolCalls), false
	case c.Limits.Tokens > 0 && c.Spent.Tokens+spend.Tokens > c.Limits.Tokens:
		return fmt.Sprintf("child %s has %d of the %d tokens of its share left and the last model call used %d", c.ID, max(c.Limits.Tokens-c.Spent.Tokens, 0), c.Limits.Tokens, spend.Tokens), false
	}
	return "", true
}

func (a *childAgent) prompt(x *execution) (who, answer string) {
	return fmt.Sprintf("You are a child agent in a run of the fleet %q, run by agentsfleet: another agent of the run started you to do one task, the first message. You do not see its conversation; you share the run's sandbox, files and budget.",
			x.def.Name),
		"Use the tools to do the task. When you are done, answer with your final message and no tool call: that answer is what the agent that started you receives."
}

// grant is the child's share: the secrets it names that the Definition
// has, its hosts.
func (a *childAgent) grant(def *fleet.Definition) grant {
	secrets := map[string]string{}
	for _, name := range a.c.Secrets {
		if id, ok := def.Secrets[name]; ok {
			secrets[name] = id
		}
	}
	return grant{tools: nonNil(a.c.Tools), secrets: secrets, hosts: a.c.Hosts, depth: a.c.Depth}
}

// releaseSandbox leaves the run's sandbox to the run's own agent.
func (a *childAgent) releaseSandbox(context.Context, *execution) error { return nil }
