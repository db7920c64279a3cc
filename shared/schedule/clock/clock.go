// Package clock is the local stand-in for EventBridge Scheduler's firing:
// `agentsfleet dev` runs it because the emulator (moto) stores schedules
// but never fires them. It reads the group's schedules through
// schedule/eventbridge, so it sees every change anyone makes, and calls a
// target with each ENABLED schedule's Input at the schedule's times, as
// Scheduler would invoke the schedule function.
//
// When it fires (see package schedule for the expressions):
//
//   - cron(…) at its times in the schedule's time zone, on or after the
//     schedule's StartDate;
//   - rate(…) at its start and every interval after it, the start being the
//     StartDate or else the schedule's creation time, as Scheduler counts
//     (no StartDate: it "starts invoking immediately");
//   - at(…) once; with ActionAfterCompletion DELETE the schedule is then
//     deleted, whether the target succeeded or not, as Scheduler deletes it
//     once the invocation (and its retries) is over.
//
// What it promises: a due time fires at most once; nothing due before the
// clock started, or before a schedule was created, changed or re-enabled,
// fires (Scheduler does not backfill either); a due time more than MaxLate
// in the past when the clock sees it (the machine slept) is skipped and
// logged instead of fired. A target error is logged with slog and not
// retried: Scheduler would retry for up to a day, but locally a failing
// target is a bug to read in the log, not something to hammer. Scheduler's
// context attributes (<aws.scheduler.scheduled-time> and the others) are
// replaced in the Input as Scheduler replaces them.
package clock

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/agentsfleet/agentsfleet/shared/schedule"
	"github.com/agentsfleet/agentsfleet/shared/schedule/eventbridge"
)

// Schedules is what the clock reads and deletes: the deployment's schedule
// group, an *eventbridge.Scheduler.
type Schedules interface {
	List(ctx context.Context) ([]eventbridge.Summary, error)
	Get(ctx context.Context, name string) (eventbridge.Schedule, error)
	Delete(ctx context.Context, name string) error
}

var _ Schedules = (*eventbridge.Scheduler)(nil)

// Target receives a firing schedule's Input, as the schedule function
// receives Scheduler's invocation. eventbridge.ScheduledTime(ctx) is the due time.
type Target func(ctx context.Context, input []byte) error

// Options tune a Clock; the zero Options are the defaults.
type Options struct {
	// Poll is how often the schedules are read and due ones fired; default 1 s.
	Poll time.Duration
	// Now is the clock's time; default time.Now. Tests inject their own.
	Now func() time.Time
	// MaxLate is how late a due time may still fire; default 5 minutes.
	MaxLate time.Duration
	// Logger receives firings, skips and errors; default slog.Default().
	Logger *slog.Logger
}

// Clock fires a schedule group's schedules. Create it with New and run it
// with Run.
type Clock struct {
	src    Schedules
	target Target
	opt    Options

	mu      sync.Mutex
	running bool

	// Touched only by Run's goroutine.
	started time.Time
	entries map[string]*entry
	wg      sync.WaitGroup // firings under way
}

// entry is what the clock knows of one ENABLED schedule.
type entry struct {
	created, modified time.Time // as listed, to tell when to read it again
	sched             eventbridge.Schedule
	expr              schedule.Expression
	loc               *time.Location
	anchor            time.Time // a rate's start; a cron expression's StartDate
	after             time.Time // due times up to here are fired or skipped
}

// New returns a clock firing the schedules of src into target.
func New(src Schedules, target Target, opt Options) (*Clock, error) {
	if src == nil || target == nil {
		return nil, errors.New("schedule clock: want the schedules and a target")
	}
	if opt.Poll <= 0 {
		opt.Poll = time.Second
	}
	if opt.Now == nil {
		opt.Now = time.Now
	}
	if opt.MaxLate <= 0 {
		opt.MaxLate = 5 * time.Minute
	}
	if opt.Logger == nil {
		opt.Logger = slog.Default()
	}
	return &Clock{src: src, target: target, opt: opt}, nil
}

// Run fires due schedules every Poll until ctx is done, then waits for the
// firings under way (their targets see ctx done) and returns nil. Failing
// reads of the schedules are logged and tried again at the next poll. A
// Clock runs once at a time: a second Run while one runs fails.
func (c *Clock) Run(ctx context.Context) error {
	c.mu.Lock()
	if c.running {
		c.mu.Unlock()
		return errors.New("schedule clock: already running")
	}
	c.running = true
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		c.running = false
		c.mu.Unlock()
	}()

	c.started = c.opt.Now()
	c.entries = map[string]*entry{}
	defer c.wg.Wait()
	tick := time.NewTicker(c.opt.Poll)
	defer tick.Stop()
	for {
		c.poll(ctx)
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
	}
}

func (c *Clock) poll(ctx context.Context) {
	now := c.opt.Now()
	list, err := c.src.List(ctx)
	if err != nil {
		if ctx.Err() == nil {
			c.opt.Logger.Warn("schedule clock: list schedules", "err", err)
		}
		return
	}
	seen := make(map[string]bool, len(list))
	for _, sum := range list {
		if sum.State != eventbridge.Enabled {
			continue // disabled: forgotten, so re-enabling starts afresh
		}
		e := c.refresh(ctx, sum)
		if e == nil {
			continue
		}
		seen[sum.Name] = true
		c.fireDue(ctx, e, now)
	}
	for name := range c.entries {
		if !seen[name] {
			delete(c.entries, name)
		}
	}
}

// refresh returns the entry of a listed ENABLED schedule, reading it again
// when it is new or has changed; nil when it cannot be fired.
func (c *Clock) refresh(ctx context.Context, sum eventbridge.Summary) *entry {
	old := c.entries[sum.Name]
	if old != nil && old.created.Equal(sum.Created) && old.modified.Equal(sum.Modified) {
		return old
	}
	sc, err := c.src.Get(ctx, sum.Name)
	if err != nil {
		if !errors.Is(err, eventbridge.ErrNotFound) && ctx.Err() == nil {
			c.opt.Logger.Warn("schedule clock: read schedule", "schedule", sum.Name, "err", err)
		}
		return nil
	}
	if sc.State != eventbridge.Enabled {
		return nil
	}
	e := &entry{created: sum.Created, modified: sum.Modified, sched: sc}
	// Nothing before the clock started, or before the schedule took its
	// present form, is due: Scheduler does not backfill.
	since := later(c.started, sc.Created, sc.Modified)
	e.after = since.Add(-time.Nanosecond)
	if old != nil {
		e.after = later(e.after, old.after)
	}
	expr, err := schedule.Parse(sc.Expression)
	if err == nil {
		e.loc, err = schedule.LoadTimezone(sc.Timezone)
	}
	if err != nil {
		// Remember it so that the error is logged once per version.
		c.opt.Logger.Error("schedule clock: schedule cannot fire", "schedule", sc.Name, "err", err)
		e.expr = schedule.Expression{}
		c.entries[sc.Name] = e
		return e
	}
	e.expr = expr
	e.anchor = sc.Start
	if expr.Kind() == schedule.Rate && e.anchor.IsZero() {
		e.anchor = sc.Created
	}
	c.entries[sc.Name] = e
	return e
}

func (c *Clock) fireDue(ctx context.Context, e *entry, now time.Time) {
	for {
		due, ok := e.expr.NextSince(e.anchor, e.after, e.loc)
		if !ok || due.After(now) {
			break
		}
		if now.Sub(due) > c.opt.MaxLate {
			// One line for the whole backlog, then on to the first due time
			// still in time.
			c.opt.Logger.Warn("schedule clock: skipped due times seen too late",
				"schedule", e.sched.Name, "first", due, "max_late", c.opt.MaxLate)
			e.after = now.Add(-c.opt.MaxLate)
			continue
		}
		e.after = due
		c.wg.Add(1)
		go c.fire(ctx, e.sched, e.expr, due)
	}
	e.after = later(e.after, now)
}

// fire invokes the target once for a due time, then deletes a finished
// at() schedule with ActionAfterCompletion DELETE.
func (c *Clock) fire(ctx context.Context, sc eventbridge.Schedule, expr schedule.Expression, due time.Time) {
	defer c.wg.Done()
	log := c.opt.Logger.With("schedule", sc.Name, "due", due)
	input := contextAttributes(sc.Input, sc.ARN, due)
	if err := c.target(eventbridge.WithScheduledTime(ctx, due), input); err != nil {
		log.Error("schedule clock: target failed; not retried", "err", err)
	} else {
		log.Info("schedule clock: fired")
	}
	if expr.OneShot() && sc.ActionAfterCompletion == eventbridge.AfterCompletionDelete {
		// Deleted even while stopping: the follow-up has had its one run.
		dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		if err := c.src.Delete(dctx, sc.Name); err != nil {
			log.Error("schedule clock: delete a completed at() schedule", "err", err)
		}
	}
}

// contextAttributes replaces Scheduler's context attribute keywords in an
// Input, as Scheduler does when it invokes the target.
func contextAttributes(input []byte, arn string, due time.Time) []byte {
	s := string(input)
	if !strings.Contains(s, "<aws.scheduler.") {
		return input
	}
	var id [8]byte
	_, _ = rand.Read(id[:])
	return []byte(strings.NewReplacer(
		"<aws.scheduler.schedule-arn>", arn,
		"<aws.scheduler.scheduled-time>", due.UTC().Format(time.RFC3339),
		"<aws.scheduler.execution-id>", hex.EncodeToString(id[:]),
		"<aws.scheduler.attempt-number>", "1",
	).Replace(s))
}

func later(ts ...time.Time) time.Time {
	var m time.Time
	for _, t := range ts {
		if t.After(m) {
			m = t
		}
	}
	return m
}
