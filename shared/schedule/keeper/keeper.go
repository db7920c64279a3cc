package keeper

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/agentsfleet/agentsfleet/shared/fault"
	"github.com/agentsfleet/agentsfleet/shared/fleet"
	"github.com/agentsfleet/agentsfleet/shared/invoke"
	"github.com/agentsfleet/agentsfleet/shared/run"
	"github.com/agentsfleet/agentsfleet/shared/run/start"
	"github.com/agentsfleet/agentsfleet/shared/schedule"
	"github.com/agentsfleet/agentsfleet/shared/schedule/eventbridge"
	"github.com/agentsfleet/agentsfleet/shared/store"
	"github.com/agentsfleet/agentsfleet/shared/web/wire"
)

// Scheduler is where the schedules are registered: the deployment's
// schedule group in EventBridge Scheduler, an *eventbridge.Scheduler. Its
// group must exist (eventbridge.Scheduler.EnsureGroup).
type Scheduler interface {
	Put(ctx context.Context, sc eventbridge.Schedule) error
	Delete(ctx context.Context, name string) error
}

var _ Scheduler = (*eventbridge.Scheduler)(nil)

// Config is what a Keeper needs.
type Config struct {
	Store     *store.Store
	Scheduler Scheduler
	// Invoker starts the runner on the runs schedules start (start.Run).
	Invoker invoke.Invoker
	// Scrub returns text with the values of the fleet's secrets replaced by
	// «secret:NAME» (WebtoolsScrub: the webtools function, the only part of
	// agentsfleet that reads them). Nil: messages are saved as given, for
	// tests and callers without secrets.
	Scrub func(ctx context.Context, fleet string, text string) (string, error)
	// SweepGrace is how long a run or child agent may go without a holder
	// before Sweep re-invokes it (AGENTSFLEET_SWEEP_GRACE_SECONDS,
	// SweepFromEnv); 0 means DefaultSweepGrace. SweepLimit is how many one
	// sweep re-invokes at most; 0 means store.DefaultLapsedLimit.
	SweepGrace time.Duration
	SweepLimit int
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Log receives firings, skips and removals; nil means slog.Default().
	Log *slog.Logger
}

// Keeper keeps the fleets' schedules. It is safe for concurrent use.
type Keeper struct {
	st    *store.Store
	sched Scheduler
	inv   invoke.Invoker
	scrub func(ctx context.Context, fleet string, text string) (string, error)
	now   func() time.Time
	log   *slog.Logger
	// The sweep's grace and page limit (Config.SweepGrace, SweepLimit).
	sweepGrace time.Duration
	sweepLimit int
}

// New returns a Keeper over cfg.
func New(cfg Config) (*Keeper, error) {
	switch {
	case cfg.Store == nil:
		return nil, errors.New("schedule keeper: no store")
	case cfg.Scheduler == nil:
		return nil, errors.New("schedule keeper: no scheduler")
	case cfg.Invoker == nil:
		return nil, errors.New("schedule keeper: no invoker")
	}
	k := &Keeper{st: cfg.Store, sched: cfg.Scheduler, inv: cfg.Invoker, scrub: cfg.Scrub, now: cfg.Now, log: cfg.Log,
		sweepGrace: cfg.SweepGrace, sweepLimit: cfg.SweepLimit}
	if k.sweepGrace <= 0 {
		k.sweepGrace = DefaultSweepGrace
	}
	if k.now == nil {
		k.now = time.Now
	}
	if k.log == nil {
		k.log = slog.Default()
	}
	return k, nil
}

// Input is a new schedule.
type Input struct {
	// Expression is EventBridge Scheduler's cron(…), rate(…) or
	// at(yyyy-mm-ddThh:mm:ss).
	Expression string
	// Message is each run's input; secret values are scrubbed from it.
	Message string
	// Timezone is the IANA zone the expression is read in; "" is UTC.
	Timezone string
	// SpendCap is the tokens a day the schedule's runs may spend; 0: none.
	SpendCap int64
}

// Patch changes a schedule; nil fields stay as they are.
type Patch struct {
	Expression, Message, Timezone *string
	// Paused true pauses the schedule, false resumes it.
	Paused *bool
	// SpendCap 0 removes the cap.
	SpendCap *int64
}

func invalid(format string, args ...any) error {
	return fault.New(fault.RequestInvalid, format, args...)
}

// when checks an expression and a time zone, naming the field at fault.
func when(expression, timezone string) (schedule.Expression, *time.Location, error) {
	expr, err := schedule.Parse(expression)
	if err != nil {
		return schedule.Expression{}, nil, invalid("expression: %v", err)
	}
	loc, err := schedule.LoadTimezone(timezone)
	if err != nil {
		return schedule.Expression{}, nil, invalid("timezone: %v", err)
	}
	return expr, loc, nil
}

// due returns an at() expression's moment, refusing one already past.
func (k *Keeper) due(expr schedule.Expression, loc *time.Location) (time.Time, error) {
	now := k.now()
	t, ok := expr.Next(now, loc)
	if expr.OneShot() && !ok {
		return t, invalid("expression: %s in %s is already past (it is now %s there)", expr, loc, now.In(loc).Format("2006-01-02T15:04:05"))
	}
	return t, nil
}

// fleetActive refuses what the fleet asks while it is paused.
func (k *Keeper) fleetActive(ctx context.Context, name string, actor store.Actor) error {
	if actor != store.ActorFleet {
		return nil
	}
	f, err := k.st.GetFleet(ctx, name)
	if err != nil {
		return err
	}
	if f.Paused {
		return fault.New(fault.FleetPaused, "fleet %s is paused: its schedules cannot be changed or run from a run until it is resumed", name)
	}
	return nil
}

func (k *Keeper) scrubbed(ctx context.Context, fleet, text string) (string, error) {
	if k.scrub == nil {
		return text, nil
	}
	out, err := k.scrub(ctx, fleet, text)
	if err != nil {
		return "", fmt.Errorf("replace the secrets of fleet %s in the message: %w", fleet, err)
	}
	return out, nil
}

// Create creates a schedule of the fleet with source actor (person or
// fleet) and registers it, enabled, in Scheduler. Errors: fault.RequestInvalid
// naming the field (expression, timezone, message, spend_cap; an at() whose
// moment is past, or passed before it could be registered); the store's
// caps (fault.SchedFleetCap, UZ-SCHED-009, for the fleet's 17th;
// fault.SchedTotalCap) and fault.FleetNotFound; fault.FleetPaused when the
// fleet asks while paused. A schedule Scheduler refuses is removed again
// and the error returned.
func (k *Keeper) Create(ctx context.Context, fleet string, actor store.Actor, createdBy string, in Input) (store.Schedule, error) {
	if err := k.fleetActive(ctx, fleet, actor); err != nil {
		return store.Schedule{}, err
	}
	expr, loc, err := when(in.Expression, in.Timezone)
	if err != nil {
		return store.Schedule{}, err
	}
	if strings.TrimSpace(in.Message) == "" {
		return store.Schedule{}, invalid("message: required, the input of each run the schedule starts")
	}
	if in.SpendCap < 0 {
		return store.Schedule{}, invalid("spend_cap: %d is negative; want tokens a day, or 0 for no cap", in.SpendCap)
	}
	at, err := k.due(expr, loc)
	if err != nil {
		return store.Schedule{}, err
	}
	msg, err := k.scrubbed(ctx, fleet, in.Message)
	if err != nil {
		return store.Schedule{}, err
	}
	sc, err := k.st.CreateSchedule(ctx, store.NewSchedule{Fleet: fleet, Source: actor, CreatedBy: createdBy,
		Expression: in.Expression, Timezone: loc.String(), Message: msg, SpendCap: in.SpendCap})
	if err != nil {
		return store.Schedule{}, err
	}
	if err := k.register(ctx, sc); err != nil {
		k.forget(ctx, sc, "Scheduler refused it")
		return store.Schedule{}, err
	}
	if expr.OneShot() && !at.After(k.now()) {
		k.forget(ctx, sc, "its moment passed before it was registered")
		return store.Schedule{}, invalid("expression: %s passed before the follow-up could be registered; it was removed without running", in.Expression)
	}
	return sc, nil
}

// List returns the fleet's schedules, oldest first (fault.FleetNotFound
// for an unknown fleet).
func (k *Keeper) List(ctx context.Context, fleet string) ([]store.Schedule, error) {
	return k.st.ListSchedules(ctx, fleet)
}

// Get returns one schedule, or fault.SchedNotFound.
func (k *Keeper) Get(ctx context.Context, fleet, id string) (store.Schedule, error) {
	return k.st.GetSchedule(ctx, fleet, id)
}

// Update changes a schedule and its Scheduler schedule. The fleet cannot
// change a person's (fault.SchedPersonOwns, UZ-SCHED-010) nor change any
// while paused (fault.FleetPaused); a schedule being removed is
// fault.SchedNotFound; an empty patch, a field that is not valid, or the
// fleet resuming a schedule its spend cap paused, is fault.RequestInvalid. If Scheduler refuses the change, the record's
// previous expression, time zone, message and cap are put back.
func (k *Keeper) Update(ctx context.Context, fleet, id string, actor store.Actor, p Patch) (store.Schedule, error) {
	if p.Expression == nil && p.Message == nil && p.Timezone == nil && p.Paused == nil && p.SpendCap == nil {
		return store.Schedule{}, invalid("give at least one of expression, message, timezone, paused or spend_cap")
	}
	if err := k.fleetActive(ctx, fleet, actor); err != nil {
		return store.Schedule{}, err
	}
	old, err := k.st.GetSchedule(ctx, fleet, id)
	if err != nil {
		return store.Schedule{}, err
	}
	if actor == store.ActorFleet && p.Paused != nil && !*p.Paused && old.PausedReason != "" {
		// The cap is people's limit on the fleet: the fleet does not lift it.
		return store.Schedule{}, invalid("paused: schedule %s was paused by its spend cap (%s); only a person can resume it", id, old.PausedReason)
	}
	sp := store.SchedulePatch{Expression: p.Expression, Timezone: p.Timezone, SpendCap: p.SpendCap}
	if p.Expression != nil || p.Timezone != nil {
		x, tz := old.Expression, old.Timezone
		if p.Expression != nil {
			x = *p.Expression
		}
		if p.Timezone != nil {
			tz = *p.Timezone
		}
		expr, loc, err := when(x, tz)
		if err != nil {
			return store.Schedule{}, err
		}
		if _, err := k.due(expr, loc); err != nil {
			return store.Schedule{}, err
		}
		if p.Timezone != nil {
			name := loc.String()
			sp.Timezone = &name
		}
	}
	if p.Message != nil {
		if strings.TrimSpace(*p.Message) == "" {
			return store.Schedule{}, invalid("message: must not be blank")
		}
		msg, err := k.scrubbed(ctx, fleet, *p.Message)
		if err != nil {
			return store.Schedule{}, err
		}
		sp.Message = &msg
	}
	if p.SpendCap != nil && *p.SpendCap < 0 {
		return store.Schedule{}, invalid("spend_cap: %d is negative; want tokens a day, or 0 for no cap", *p.SpendCap)
	}
	sc := old
	if sp != (store.SchedulePatch{}) {
		if sc, err = k.st.UpdateSchedule(ctx, fleet, id, actor, sp); err != nil {
			return store.Schedule{}, err
		}
	}
	if p.Paused != nil {
		if *p.Paused {
			sc, err = k.st.PauseSchedule(ctx, fleet, id, actor)
		} else {
			sc, err = k.st.ResumeSchedule(ctx, fleet, id, actor)
		}
		if err != nil {
			return store.Schedule{}, err
		}
	}
	if err := k.register(ctx, sc); err != nil {
		if sp != (store.SchedulePatch{}) {
			back := store.SchedulePatch{Expression: &old.Expression, Timezone: &old.Timezone, Message: &old.Message, SpendCap: &old.SpendCap}
			if _, rerr := k.st.UpdateSchedule(ctx, fleet, id, store.ActorSystem, back); rerr != nil {
				k.log.Error("schedule change not undone after Scheduler refused it", "fleet", fleet, "schedule_id", id, "error", rerr)
			}
		}
		return store.Schedule{}, err
	}
	return sc, nil
}

// Pause stops a schedule from firing (Scheduler: DISABLED). Permissions as
// Update.
func (k *Keeper) Pause(ctx context.Context, fleet, id string, actor store.Actor) (store.Schedule, error) {
	yes := true
	return k.Update(ctx, fleet, id, actor, Patch{Paused: &yes})
}

// Resume makes a paused schedule fire again (Scheduler: ENABLED), clearing
// a spend-cap pause's reason. Permissions as Update.
func (k *Keeper) Resume(ctx context.Context, fleet, id string, actor store.Actor) (store.Schedule, error) {
	no := false
	return k.Update(ctx, fleet, id, actor, Patch{Paused: &no})
}

// Delete removes a schedule: the record is marked removing (it no longer
// fires or changes, cron_run refuses it), the Scheduler schedule deleted,
// then the record. The fleet cannot delete a person's
// (fault.SchedPersonOwns) nor delete any while paused (fault.FleetPaused);
// an unknown schedule is fault.SchedNotFound. After a failure, calling
// Delete again finishes the job.
func (k *Keeper) Delete(ctx context.Context, fleet, id string, actor store.Actor) error {
	if err := k.fleetActive(ctx, fleet, actor); err != nil {
		return err
	}
	if _, err := k.st.MarkScheduleRemoving(ctx, fleet, id, actor); err != nil {
		return err
	}
	if err := k.sched.Delete(ctx, eventbridge.Name(fleet, id)); err != nil {
		return err
	}
	err := k.st.DeleteSchedule(ctx, fleet, id, store.ActorSystem)
	if errors.Is(err, fault.SchedNotFound) {
		return nil // a concurrent Delete finished first
	}
	return err
}

// RunNow starts a run of a schedule now, with its message as input
// (cron_run, POST …/schedules/{id}/run), under store.ScheduleRunnable's
// rule: fault.FleetPaused (UZ-AGT-012) while the fleet is paused,
// fault.SchedNotRunnable (UZ-SCHED-011) for a paused schedule, one being
// removed, or when callerRunID (the run calling cron_run; "" for a person)
// was itself started by a schedule. The schedule keeps its own times.
// idem, when set, makes a retry return the first run instead of starting
// another (a crash-retried cron_run step, an API retry).
func (k *Keeper) RunNow(ctx context.Context, fleet, id string, actor store.Actor, callerRunID string, idem *store.IdempotencyKey) (store.Run, error) {
	if err := k.fleetActive(ctx, fleet, actor); err != nil {
		return store.Run{}, err
	}
	sc, err := k.st.ScheduleRunnable(ctx, fleet, id, callerRunID)
	if err != nil {
		return store.Run{}, err
	}
	run, _, err := start.Run(ctx, k.st, k.inv, store.NewRun{Fleet: fleet, Source: store.SourceSchedule,
		ScheduleID: sc.ID, Input: []byte(sc.Message), Idempotency: idem})
	return run, err
}

// register puts the record's Scheduler schedule: enabled while the record
// is active, or paused by its spend cap and not yet fired since (that
// firing records why, see Fire); disabled otherwise.
func (k *Keeper) register(ctx context.Context, sc store.Schedule) error {
	state := eventbridge.Disabled
	if sc.State == store.ScheduleActive || sc.State == store.SchedulePaused && sc.PausedReason != "" {
		state = eventbridge.Enabled
	}
	return k.put(ctx, sc, state)
}

func (k *Keeper) put(ctx context.Context, sc store.Schedule, state eventbridge.State) error {
	return k.sched.Put(ctx, eventbridge.Schedule{
		Name: eventbridge.Name(sc.Fleet, sc.ID), Expression: sc.Expression, Timezone: sc.Timezone, State: state,
		Input: eventbridge.Payload{Fleet: sc.Fleet, ScheduleID: sc.ID, ScheduledTime: eventbridge.ScheduledTimeAttribute}.Marshal(),
	})
}

// forget removes a schedule agentsfleet itself gives up on (a follow-up
// that fired, could not run, or could not be registered), from Scheduler
// and the store; failures are logged, a schedule already gone is fine.
func (k *Keeper) forget(ctx context.Context, sc store.Schedule, why string) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	log := k.log.With("fleet", sc.Fleet, "schedule_id", sc.ID, "why", why)
	if _, err := k.st.MarkScheduleRemoving(ctx, sc.Fleet, sc.ID, store.ActorSystem); err != nil && !errors.Is(err, fault.SchedNotFound) {
		log.Error("schedule not removed", "error", err)
		return
	}
	if err := k.sched.Delete(ctx, eventbridge.Name(sc.Fleet, sc.ID)); err != nil {
		log.Error("schedule not removed from Scheduler", "error", err)
		return
	}
	if err := k.st.DeleteSchedule(ctx, sc.Fleet, sc.ID, store.ActorSystem); err != nil && !errors.Is(err, fault.SchedNotFound) {
		log.Error("schedule not removed", "error", err)
		return
	}
	log.Info("schedule removed")
}

// scope is a fleet's idempotency scope for prefix, within the store's 128
// characters whatever the fleet's name.
func scope(prefix, fleet string) string {
	if s := prefix + ":" + fleet; len(s) <= 128 {
		return s
	}
	sum := sha256.Sum256([]byte(fleet))
	return prefix + ":" + hex.EncodeToString(sum[:16])
}

// scheduledTime is the firing's due time: the payload's (Scheduler fills
// it), else the local clock's, else now to the minute, so that duplicate
// deliveries of a payload without one (written before it existed) within a
// minute still start one run.
func (k *Keeper) scheduledTime(ctx context.Context, p eventbridge.Payload) time.Time {
	if p.ScheduledTime != "" && p.ScheduledTime != eventbridge.ScheduledTimeAttribute {
		if t, err := time.Parse(time.RFC3339, p.ScheduledTime); err == nil {
			return t.UTC()
		}
		k.log.Warn("schedule payload: scheduled_time is not RFC 3339", "scheduled_time", p.ScheduledTime)
	}
	if t, ok := eventbridge.ScheduledTime(ctx); ok {
		return t.UTC().Truncate(time.Second)
	}
	return k.now().UTC().Truncate(time.Minute)
}

// Fire is the schedule function's handler: payload is the eventbridge.Payload
// Scheduler sends. It checks the fleet and the schedule and starts a run
// with source schedule, no thread, the schedule's message as input, through
// start.Run. A firing delivered more than once (Scheduler delivers at
// least once) starts one run: the run is keyed by the schedule and the
// firing's scheduled time.
//
// What it does not run: a firing of a schedule that no longer exists (or
// whose fleet does not) deletes its Scheduler schedule; while the fleet is
// paused, or the schedule paused or being removed, a one-shot at() is
// removed without running and a recurring one skipped, both logged. A
// one-shot that started its run is removed. A spend-cap pause's first
// firing records why (see the package doc).
//
// It returns an error only for a payload it cannot read or an environment
// failing (Scheduler then retries, which the key makes safe).
//
// The sweep schedule's eventbridge.SweepPayload ({"kind": "sweep"}) is a
// sweep instead: see Sweep.
func (k *Keeper) Fire(ctx context.Context, payload []byte) error {
	if sp, ok, err := eventbridge.ParseSweep(payload); ok || err != nil {
		if err != nil {
			return err
		}
		_, err = k.Sweep(ctx, sp.Grace(k.sweepGrace))
		return err
	}
	p, err := eventbridge.ParsePayload(payload)
	if err != nil {
		return err
	}
	due := k.scheduledTime(ctx, p)
	log := k.log.With("fleet", p.Fleet, "schedule_id", p.ScheduleID, "due", due)
	sc, err := k.st.GetSchedule(ctx, p.Fleet, p.ScheduleID)
	var f store.Fleet
	if err == nil {
		f, err = k.st.GetFleet(ctx, p.Fleet)
	}
	if errors.Is(err, fault.SchedNotFound) || errors.Is(err, fault.FleetNotFound) {
		log.Info("schedule fired with no schedule or fleet left: its Scheduler schedule is deleted", "error", err)
		return k.sched.Delete(ctx, eventbridge.Name(p.Fleet, p.ScheduleID))
	}
	if err != nil {
		return fmt.Errorf("fire schedule %s of fleet %s: %w", p.ScheduleID, p.Fleet, err)
	}
	key := &store.IdempotencyKey{Scope: scope("schedule", p.Fleet), Key: sc.ID + "@" + due.Format(time.RFC3339)}
	if !f.Paused && sc.State == store.ScheduleActive {
		run, created, err := start.Run(ctx, k.st, k.inv, store.NewRun{Fleet: sc.Fleet, Source: store.SourceSchedule,
			ScheduleID: sc.ID, Input: []byte(sc.Message), Idempotency: key})
		switch {
		case errors.Is(err, fault.FleetPaused):
			f.Paused = true // paused meanwhile: as below
		case err != nil:
			return fmt.Errorf("fire schedule %s of fleet %s: %w", sc.ID, sc.Fleet, err)
		default:
			log.Info("schedule fired", "run_id", run.ID, "created", created)
			if sc.OneShot {
				k.forget(ctx, sc, "the follow-up has started its run")
			}
			return nil
		}
	}
	why := "the fleet is paused"
	if !f.Paused {
		why = "the schedule is " + string(sc.State)
	}
	switch {
	case sc.State == store.ScheduleRemoving:
		log.Info("schedule not run: it is being removed")
	case !f.Paused && sc.State == store.SchedulePaused && sc.PausedReason != "":
		return k.notice(ctx, sc, key, log)
	case sc.OneShot:
		log.Warn("follow-up removed without running", "why", why)
		k.forget(ctx, sc, "due while "+why)
	default:
		log.Info("schedule skipped", "why", why)
	}
	return nil
}

// notice records, in place of the run a spend-capped schedule would have
// started, a run that ends failed at once saying why, then disables the
// Scheduler schedule so that nothing more fires until it is resumed.
func (k *Keeper) notice(ctx context.Context, sc store.Schedule, key *store.IdempotencyKey, log *slog.Logger) error {
	why := &run.Error{Code: fault.SchedNotRunnable.ID(), Message: sc.PausedReason}
	ended, _ := json.Marshal(run.RunEnded{Result: run.Result{Status: run.StatusFailed, Error: why}})
	r, created, err := k.st.CreateRun(ctx, store.NewRun{Fleet: sc.Fleet, Source: store.SourceSchedule,
		ScheduleID: sc.ID, Input: []byte(sc.Message), Idempotency: key})
	if errors.Is(err, fault.FleetPaused) {
		log.Info("schedule skipped: the fleet is paused")
		return nil
	}
	if err != nil {
		return fmt.Errorf("record why schedule %s did not run: %w", sc.ID, err)
	}
	if created {
		started, _ := json.Marshal(run.RunStarted{Fleet: r.Fleet, Revision: r.Revision, Source: r.Source})
		if _, err := k.st.AppendEvents(ctx, r.ID, store.NewEvent{Type: run.EventRunStarted, Data: started},
			store.NewEvent{Type: run.EventRunEnded, Data: ended}); err != nil {
			return fmt.Errorf("record why schedule %s did not run: %w", sc.ID, err)
		}
		for _, to := range []store.Status{store.StatusRunning, store.StatusFailed} {
			if _, err := k.st.Transition(ctx, r.ID, to, why.Code+": "+why.Message); err != nil {
				return fmt.Errorf("record why schedule %s did not run: %w", sc.ID, err)
			}
		}
		log.Warn("schedule did not run: paused by its spend cap", "run_id", r.ID, "reason", sc.PausedReason)
	}
	return k.put(ctx, sc, eventbridge.Disabled)
}

// RunEnded counts what a run a schedule started spent against the
// schedule's spend cap (the tokens of the day the run ended, in the
// schedule's time zone), and pauses the schedule (store.ActorSystem) with
// the reason when the day's runs spent more than the cap. Other runs, a
// schedule without a cap and one gone are no error. Each run is counted
// once however often it is reported. The runner calls it through
// ScheduleBook as a schedule-started run settles.
func (k *Keeper) RunEnded(ctx context.Context, run store.Run) error {
	if run.Source != store.SourceSchedule || run.ScheduleID == "" {
		return nil
	}
	sc, err := k.st.GetSchedule(ctx, run.Fleet, run.ScheduleID)
	if errors.Is(err, fault.SchedNotFound) || err == nil && sc.SpendCap == 0 {
		return nil
	}
	if err != nil {
		return err
	}
	if _, claimed, err := k.st.ClaimIdempotencyKey(ctx, scope("schedule-spend", run.Fleet), run.ID, run.ID, 72*time.Hour); err != nil || !claimed {
		return err
	}
	loc, err := schedule.LoadTimezone(sc.Timezone)
	if err != nil {
		loc = time.UTC
	}
	at := run.EndedAt
	if at.IsZero() {
		at = k.now()
	}
	day := at.In(loc).Format(time.DateOnly)
	sc, err = k.st.AddScheduleSpend(ctx, run.Fleet, run.ScheduleID, day, run.Spent.Tokens)
	if errors.Is(err, fault.SchedNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	if sc.SpendCap == 0 || sc.SpentTokens <= sc.SpendCap || sc.State != store.ScheduleActive {
		return nil
	}
	reason := fmt.Sprintf("schedule %s was paused by agentsfleet: the runs it started spent %d tokens on %s (%s), over its spend cap of %d tokens a day; resume it to run again",
		sc.ID, sc.SpentTokens, day, loc, sc.SpendCap)
	if _, err := k.st.PauseScheduleBecause(ctx, run.Fleet, run.ScheduleID, reason); err != nil {
		if errors.Is(err, fault.SchedNotFound) {
			return nil
		}
		return err
	}
	k.log.Warn("schedule paused by its spend cap", "fleet", run.Fleet, "schedule_id", run.ScheduleID, "run_id", run.ID,
		"spent", sc.SpentTokens, "cap", sc.SpendCap)
	// Its Scheduler schedule stays enabled: the next firing records why
	// (notice), then disables it.
	return nil
}

// WebtoolsScrub is Config.Scrub over the webtools function: it reads the
// secrets the fleet's current Definition declares and asks webtools (the
// only function that reads their values) to replace them in text
// (wire.ToolScrub).
func WebtoolsScrub(st *store.Store, inv invoke.Invoker) func(ctx context.Context, fleet, text string) (string, error) {
	return func(ctx context.Context, name, text string) (string, error) {
		rev, err := st.CurrentRevision(ctx, name)
		if err != nil {
			return "", err
		}
		def, err := fleet.ParseJSON(rev.Definition)
		if err != nil {
			return "", fmt.Errorf("revision %d of fleet %s cannot be read: %w", rev.Number, name, err)
		}
		if len(def.Secrets) == 0 {
			return text, nil
		}
		payload, err := json.Marshal(wire.ScrubRequest(name, def.Secrets, text))
		if err != nil {
			return "", err
		}
		out, err := inv.Call(ctx, invoke.Webtools, payload)
		if err != nil {
			return "", fmt.Errorf("scrub through the webtools function: %w", err)
		}
		var res struct {
			Output  string `json:"output"`
			IsError bool   `json:"is_error"`
		}
		if err := json.Unmarshal(out, &res); err != nil {
			return "", fmt.Errorf("scrub through the webtools function: it answered %.200q", out)
		}
		if res.IsError {
			return "", fault.New(fault.SecretUnreadable, "%s", res.Output)
		}
		return res.Output, nil
	}
}
