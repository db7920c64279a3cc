package keeper_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/agentsfleet/agentsfleet/shared/awstest"
	"github.com/agentsfleet/agentsfleet/shared/fleet"
	"github.com/agentsfleet/agentsfleet/shared/invoke"
	"github.com/agentsfleet/agentsfleet/shared/model/scripted"
	"github.com/agentsfleet/agentsfleet/shared/run"
	afrun "github.com/agentsfleet/agentsfleet/shared/run"
	"github.com/agentsfleet/agentsfleet/shared/runner"
	"github.com/agentsfleet/agentsfleet/shared/sandbox/launch"
	"github.com/agentsfleet/agentsfleet/shared/schedule/eventbridge"
	"github.com/agentsfleet/agentsfleet/shared/schedule/keeper"
	"github.com/agentsfleet/agentsfleet/shared/store"
)

// offsetClock is the real time moved on by what the test advanced it: the
// store's leases lapse on it without the test sleeping, while the
// runner's own timers tick as usual.
type offsetClock struct{ by atomic.Int64 }

func (c *offsetClock) Now() time.Time          { return time.Now().Add(time.Duration(c.by.Load())) }
func (c *offsetClock) Advance(d time.Duration) { c.by.Add(int64(d)) }

// recorder is an Invoker that notes the runner invocations started
// through it.
type recorder struct {
	invoke.Invoker
	mu      sync.Mutex
	started []run.Payload
}

func (r *recorder) Start(ctx context.Context, function string, payload []byte) error {
	if function == invoke.Runner {
		var p run.Payload
		if err := json.Unmarshal(payload, &p); err != nil {
			return err
		}
		r.mu.Lock()
		r.started = append(r.started, p)
		r.mu.Unlock()
	}
	return r.Invoker.Start(ctx, function, payload)
}

func (r *recorder) take() []run.Payload {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.started
	r.started = nil
	return out
}

// noScheduler registers nothing: the sweep never touches schedules.
type noScheduler struct{}

func (noScheduler) Put(context.Context, eventbridge.Schedule) error { return nil }
func (noScheduler) Delete(context.Context, string) error            { return nil }

// sweepEnv is a Keeper and a real runner over one store whose clock the
// test moves, the runner started in-process (invoke.Local) as the sweep
// starts it in AWS.
type sweepEnv struct {
	t      *testing.T
	clock  *offsetClock
	store  *store.Store
	local  *invoke.Local
	inv    *recorder
	keeper *keeper.Keeper
}

const sweepGrace = time.Minute

// The model answers each agent, a run's or a child's, at once.
const answerAtOnce = "[[turn]]\ntext = \"done\"\n"

func newSweepEnv(t *testing.T, limit int) *sweepEnv {
	t.Helper()
	return newSweepEnvScript(t, limit, answerAtOnce)
}

// newSweepEnvScript is newSweepEnv with the model's script.
func newSweepEnvScript(t *testing.T, limit int, script string) *sweepEnv {
	t.Helper()
	db := dynamodb.NewFromConfig(awstest.Config(t))
	table := awstest.UniqueName(t, "sweep")
	if err := store.CreateTable(ctx, db, table); err != nil {
		t.Fatal(err)
	}
	e := &sweepEnv{t: t, clock: &offsetClock{}, local: invoke.NewLocal(quiet())}
	t.Cleanup(e.local.Close)
	e.store = store.New(db, table, store.WithClock(e.clock.Now))
	e.inv = &recorder{Invoker: e.local}
	m, err := scripted.Parse([]byte(script), "sweep.toml")
	if err != nil {
		t.Fatal(err)
	}
	r, err := runner.New(runner.Config{Store: e.store, Model: m, DefaultModel: "scripted", Invoker: e.local,
		Sandboxes: launch.None{Why: "no sandbox in the sweep's tests"}, Lease: 30 * time.Second, Log: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	e.local.Register(invoke.Runner, r.Handle)
	e.keeper, err = keeper.New(keeper.Config{Store: e.store, Scheduler: noScheduler{}, Invoker: e.inv,
		SweepGrace: sweepGrace, SweepLimit: limit, Now: e.clock.Now, Log: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	d, err := fleet.ParseTOML([]byte("name = \"ops\"\ninstructions = \"Answer.\"\n[x-agentsfleet]\ntools = [\"read\"]\n"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.store.CreateFleet(ctx, store.NewFleet{Name: d.Name, Definition: d.Canonical(), Hash: d.Hash()}); err != nil {
		t.Fatal(err)
	}
	return e
}

// run records a queued run, as the API does before it invokes the runner.
func (e *sweepEnv) run() string {
	e.t.Helper()
	r, _, err := e.store.CreateRun(ctx, store.NewRun{Fleet: "ops", Source: store.SourceAPI, Input: []byte("status?")})
	if err != nil {
		e.t.Fatal(err)
	}
	return r.ID
}

// killed is an invocation that took the run's lease (and moved it to
// running) and died: it never renews nor releases it.
func (e *sweepEnv) killed(id, holder string) {
	e.t.Helper()
	if _, err := e.store.AcquireLease(ctx, id, holder, 30*time.Second); err != nil {
		e.t.Fatal(err)
	}
	if _, err := e.store.Transition(ctx, id, store.StatusRunning, ""); err != nil && !strings.Contains(err.Error(), "cannot move") {
		e.t.Fatal(err)
	}
}

// sweep fires the schedule function's handler with payload (the sweep
// schedule's Input when nil), waits for the invocations it started to
// return, and returns them.
func (e *sweepEnv) sweep(payload []byte) []run.Payload {
	e.t.Helper()
	if payload == nil {
		payload = eventbridge.SweepInput()
	}
	if err := e.keeper.Fire(ctx, payload); err != nil {
		e.t.Fatalf("Fire(%s): %v", payload, err)
	}
	e.settle()
	return e.inv.take()
}

// settle waits, bounded, for the started invocations to return.
func (e *sweepEnv) settle() {
	e.t.Helper()
	done := make(chan struct{})
	go func() { e.local.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		e.t.Fatal("the runner invocations the sweep started did not return within 30 s")
	}
}

func (e *sweepEnv) get(id string) store.Run {
	e.t.Helper()
	r, err := e.store.GetRun(ctx, id)
	if err != nil {
		e.t.Fatal(err)
	}
	return r
}

// eventTypes are the types of the run's events, in order.
func (e *sweepEnv) eventTypes(id string) []string {
	e.t.Helper()
	evs, _, err := e.store.ListEvents(ctx, id, 1, 100)
	if err != nil {
		e.t.Fatal(err)
	}
	out := make([]string, len(evs))
	for i, ev := range evs {
		out[i] = ev.Type
	}
	return out
}

// TestSweepFinishesAKilledRun: a run whose invocation died holding its
// lease is left alone while the lease could still be renewed, and re-invoked
// once it ran out and the grace passed; the real runner takes it over and
// finishes it. Two sweeps at once start it twice, and it runs once.
func TestSweepFinishesAKilledRun(t *testing.T) {
	t.Parallel()
	e := newSweepEnv(t, 0)
	id := e.run()
	e.killed(id, "inv_killed")

	if got := e.sweep(nil); len(got) != 0 {
		t.Fatalf("sweep while the lease holds: re-invoked %+v", got)
	}
	e.clock.Advance(30*time.Second + sweepGrace - time.Second)
	if got := e.sweep(nil); len(got) != 0 {
		t.Fatalf("sweep within the grace: re-invoked %+v", got)
	}
	e.clock.Advance(2 * time.Second)
	var wg sync.WaitGroup
	for range 2 {
		wg.Go(func() {
			if err := e.keeper.Fire(ctx, eventbridge.SweepInput()); err != nil {
				t.Errorf("Fire: %v", err)
			}
		})
	}
	wg.Wait()
	e.settle()
	got := e.inv.take()
	if len(got) < 1 || len(got) > 2 || got[0] != (run.Payload{RunID: id}) {
		t.Fatalf("two sweeps after the lapse re-invoked %+v, want {run_id: %s} once or twice", got, id)
	}
	r := e.get(id)
	if r.Status != store.StatusSucceeded || r.LeaseHolder != "" {
		t.Fatalf("run %s held by %q; want it finished by the re-invoked runner", r.Status, r.LeaseHolder)
	}
	if types := strings.Join(e.eventTypes(id), " "); types != "run.started run.ended" {
		t.Errorf("events %s; want the run started and ended once", types)
	}
	if got := e.sweep(nil); len(got) != 0 {
		t.Errorf("a sweep after the run ended re-invoked %+v", got)
	}
}

// TestSweepLeavesALiveHolder: a holder that renews its lease every third
// of it is never re-invoked, however long its run takes and whatever the
// grace.
func TestSweepLeavesALiveHolder(t *testing.T) {
	t.Parallel()
	e := newSweepEnv(t, 0)
	id := e.run()
	e.killed(id, "inv_alive")
	for range 30 { // 5 minutes
		e.clock.Advance(10 * time.Second)
		if _, err := e.store.RenewLease(ctx, id, "inv_alive", 30*time.Second); err != nil {
			t.Fatal(err)
		}
		if got := e.sweep([]byte(`{"kind": "sweep", "grace_seconds": 0}`)); len(got) != 0 {
			t.Fatalf("re-invoked %+v while its holder renews", got)
		}
	}
	if r := e.get(id); r.Status != store.StatusRunning || r.LeaseHolder != "inv_alive" {
		t.Fatalf("run %s held by %q; want it left to its live holder", r.Status, r.LeaseHolder)
	}
}

// TestSweepFailsARunKilledAgain: a run whose lease was taken over once
// already (Lambda's retry, which died too) is failed with runner_stopped
// by the invocation the sweep starts, instead of being run again.
func TestSweepFailsARunKilledAgain(t *testing.T) {
	t.Parallel()
	e := newSweepEnv(t, 0)
	id := e.run()
	e.killed(id, "inv_first")
	e.clock.Advance(31 * time.Second)
	r, err := e.store.AcquireLease(ctx, id, "inv_retry", 30*time.Second)
	if err != nil || r.LapsedHolder != "inv_first" {
		t.Fatalf("the retry's AcquireLease = %q, %v", r.LapsedHolder, err)
	}
	if n, err := e.store.NoteTakeover(ctx, id, "inv_retry"); err != nil || n != 1 {
		t.Fatalf("NoteTakeover = %d, %v", n, err)
	}
	e.clock.Advance(30*time.Second + sweepGrace + time.Second)
	if got := e.sweep(nil); len(got) != 1 || got[0].RunID != id {
		t.Fatalf("re-invoked %+v, want the run", got)
	}
	r = e.get(id)
	if r.Status != store.StatusFailed || !strings.HasPrefix(r.StatusReason, afrun.CodeStopped+":") {
		t.Fatalf("run %s (%q); want it failed with %s", r.Status, r.StatusReason, afrun.CodeStopped)
	}
	if types := strings.Join(e.eventTypes(id), " "); types != "run.ended" {
		t.Errorf("events %s; want run.ended alone, no step run", types)
	}
}

// TestSweepStartsQueuedRuns: a run whose start invocation was lost is
// started once it is older than the grace, a page of them a sweep, oldest
// first; a run just queued is left to its start invocation.
func TestSweepStartsQueuedRuns(t *testing.T) {
	t.Parallel()
	e := newSweepEnv(t, 2)
	var ids []string
	for range 3 {
		ids = append(ids, e.run())
		e.clock.Advance(time.Second)
	}
	if got := e.sweep(nil); len(got) != 0 {
		t.Fatalf("young queued runs re-invoked: %+v", got)
	}
	e.clock.Advance(sweepGrace)
	young := e.run()
	first := e.sweep(nil)
	if len(first) != 2 || first[0].RunID != ids[0] || first[1].RunID != ids[1] {
		t.Fatalf("first sweep started %+v; want the two oldest of %v", first, ids)
	}
	second := e.sweep(nil)
	if len(second) != 1 || second[0].RunID != ids[2] {
		t.Fatalf("second sweep started %+v; want %s", second, ids[2])
	}
	for _, id := range ids {
		if r := e.get(id); r.Status != store.StatusSucceeded {
			t.Errorf("run %s: %s, want succeeded", id, r.Status)
		}
	}
	if r := e.get(young); r.Status != store.StatusQueued {
		t.Errorf("the young run: %s, want it left queued", r.Status)
	}
}

// TestSweepReinvokesAChild: a child agent whose invocation died is
// re-invoked as a child ({run_id, child_id}) and finished by the runner,
// while its run, whose holder is alive, is left alone.
func TestSweepReinvokesAChild(t *testing.T) {
	t.Parallel()
	e := newSweepEnv(t, 0)
	id := e.run()
	e.killed(id, "inv_parent")
	kid, _, err := e.store.StartChild(ctx, store.NewChild{RunID: id, Task: "look", Tools: []string{"read"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.store.AcquireChildLease(ctx, id, kid.ID, "inv_child", 30*time.Second); err != nil {
		t.Fatal(err)
	}
	for range 10 { // the parent renews, the child's holder is gone
		e.clock.Advance(10 * time.Second)
		if _, err := e.store.RenewLease(ctx, id, "inv_parent", 30*time.Second); err != nil {
			t.Fatal(err)
		}
	}
	got := e.sweep(nil)
	if len(got) != 1 || got[0] != (run.Payload{RunID: id, ChildID: kid.ID}) {
		t.Fatalf("re-invoked %+v; want the child %s alone", got, kid.ID)
	}
	c, err := e.store.GetChild(ctx, id, kid.ID)
	if err != nil || c.Status != store.ChildDone || c.Result != "done" {
		t.Fatalf("child %s %q, %v; want it finished", c.Status, c.Result, err)
	}
	if r := e.get(id); r.Status != store.StatusRunning || r.LeaseHolder != "inv_parent" || r.ChildrenRunning != 0 {
		t.Fatalf("run %s held by %q with %d children running; want it left to its holder", r.Status, r.LeaseHolder, r.ChildrenRunning)
	}
}

// TestSweepExpiresApprovals: a run waiting for a person nobody answers is
// left alone until its approval expires, then the sweep expires it and
// starts the runner, which tells the model and finishes the run.
func TestSweepExpiresApprovals(t *testing.T) {
	t.Parallel()
	e := newSweepEnvScript(t, 10, "[[turn]]\n[[turn.tool_call]]\nname = \"read\"\narguments = { path = \"a.txt\" }\n[[turn]]\ntext = \"{{last_error}}\"\n")
	d, err := fleet.ParseTOML([]byte("name = \"gated\"\ninstructions = \"Answer.\"\n[x-agentsfleet]\ntools = [\"read\"]\n[x-agentsfleet.approval]\ntools = [\"read\"]\nexpire_hours = 2\n"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.store.CreateFleet(ctx, store.NewFleet{Name: d.Name, Definition: d.Canonical(), Hash: d.Hash()}); err != nil {
		t.Fatal(err)
	}
	r, _, err := e.store.CreateRun(ctx, store.NewRun{Fleet: "gated", Source: store.SourceAPI, Input: []byte("read it")})
	if err != nil {
		t.Fatal(err)
	}
	payload, _ := json.Marshal(run.Payload{RunID: r.ID})
	if err := e.local.Start(ctx, invoke.Runner, payload); err != nil {
		t.Fatal(err)
	}
	e.settle()
	if got := e.get(r.ID); got.Status != store.StatusWaiting {
		t.Fatalf("the run is %s, want waiting for its read", got.Status)
	}
	e.clock.Advance(time.Hour)
	if got := e.sweep(nil); len(got) != 0 {
		t.Fatalf("a sweep before the expiry started %+v", got)
	}
	e.clock.Advance(time.Hour + time.Second)
	if got := e.sweep(nil); len(got) != 1 || got[0].RunID != r.ID {
		t.Fatalf("the sweep after the expiry started %+v, want run %s", got, r.ID)
	}
	all, err := e.store.ListApprovals(ctx, r.ID)
	if err != nil || len(all) != 1 || all[0].Status != run.DecisionExpired || all[0].By != run.DecidedByExpiry {
		t.Fatalf("approvals = %+v, %v; want the one expired", all, err)
	}
	if got := e.get(r.ID); got.Status != store.StatusSucceeded {
		t.Fatalf("the run is %s after its approval expired, want succeeded", got.Status)
	}
	if got := e.sweep(nil); len(got) != 0 {
		t.Fatalf("a later sweep started %+v", got)
	}
}
