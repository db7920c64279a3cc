package clock_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/service/scheduler"

	"github.com/agentsfleet/agentsfleet/shared/awstest"
	"github.com/agentsfleet/agentsfleet/shared/schedule/clock"
	"github.com/agentsfleet/agentsfleet/shared/schedule/eventbridge"
)

func TestMain(m *testing.M) { awstest.Main(m) }

// client talks to the emulator without keeping connections: the emulator
// serves one connection at a time, and a connection the transport dialed
// for a request cancelled meanwhile would otherwise sit idle in its pool,
// holding the emulator (and every other test) until the idle timeout.
func client(t *testing.T) *scheduler.Client {
	t.Helper()
	return scheduler.NewFromConfig(awstest.Config(t), func(o *scheduler.Options) {
		o.HTTPClient = awshttp.NewBuildableClient().WithTransportOptions(func(tr *http.Transport) { tr.DisableKeepAlives = true })
	})
}

func group(t *testing.T) *eventbridge.Scheduler {
	t.Helper()
	s, err := eventbridge.New(client(t), eventbridge.Config{
		Group:     awstest.UniqueName(t, "clock"),
		TargetARN: "arn:aws:lambda:us-east-1:123456789012:function:agentsfleet-schedule",
		RoleARN:   "arn:aws:iam::123456789012:role/agentsfleet-scheduler",
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.EnsureGroup(context.Background()); err != nil {
		t.Fatal(err)
	}
	return s
}

type firing struct {
	input string
	due   time.Time
}

// recorder is a target that records its firings.
type recorder struct {
	ch  chan firing
	err error
}

func newRecorder() *recorder { return &recorder{ch: make(chan firing, 100)} }

func (r *recorder) target(ctx context.Context, input []byte) error {
	due, _ := eventbridge.ScheduledTime(ctx)
	r.ch <- firing{string(input), due}
	return r.err
}

// next waits for a firing.
func (r *recorder) next(t *testing.T, within time.Duration) firing {
	t.Helper()
	select {
	case f := <-r.ch:
		return f
	case <-time.After(within):
		t.Fatalf("no firing within %s", within)
		return firing{}
	}
}

// none checks that nothing fires for a while (several polls).
func (r *recorder) none(t *testing.T, d time.Duration) {
	t.Helper()
	select {
	case f := <-r.ch:
		t.Fatalf("unexpected firing %+v", f)
	case <-time.After(d):
	}
}

// fakeNow is an injectable clock.
type fakeNow struct {
	mu sync.Mutex
	t  time.Time
}

func (f *fakeNow) Now() time.Time  { f.mu.Lock(); defer f.mu.Unlock(); return f.t }
func (f *fakeNow) Set(t time.Time) { f.mu.Lock(); f.t = t; f.mu.Unlock() }

// firstRead wraps now: the channel is closed once the clock has read it
// the first time, when Run takes its start time.
func firstRead(now func() time.Time) (func() time.Time, <-chan struct{}) {
	read := make(chan struct{})
	var once sync.Once
	return func() time.Time {
		t := now()
		once.Do(func() { close(read) })
		return t
	}, read
}

// await waits, up to 30 seconds, for ch to be closed.
func await(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(30 * time.Second):
		t.Fatalf("%s: not after 30 s", what)
	}
}

// run starts the clock and stops it, checking Run's result, at cleanup.
func run(t *testing.T, src clock.Schedules, target clock.Target, opt clock.Options) {
	t.Helper()
	c, err := clock.New(src, target, opt)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Run = %v, want nil", err)
			}
		case <-time.After(10 * time.Second):
			t.Error("Run did not return after its context was done")
		}
	})
}

func put(t *testing.T, s *eventbridge.Scheduler, sc eventbridge.Schedule) eventbridge.Schedule {
	t.Helper()
	ctx := context.Background()
	if err := s.Put(ctx, sc); err != nil {
		t.Fatalf("Put: %v", err)
	}
	got, err := s.Get(ctx, sc.Name)
	if err != nil {
		t.Fatalf("Get: %v", err)
	}
	return got
}

func gone(t *testing.T, s *eventbridge.Scheduler, name string, within time.Duration) {
	t.Helper()
	for deadline := time.Now().Add(within); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if _, err := s.Get(context.Background(), name); errors.Is(err, eventbridge.ErrNotFound) {
			return
		}
	}
	t.Fatalf("schedule %s still exists after %s", name, within)
}

// Real time: an at() follow-up two seconds ahead fires once, with its
// Input, and is deleted (ActionAfterCompletion DELETE).
func TestAtFiresOnceAndIsDeleted(t *testing.T) {
	t.Parallel()
	s := group(t)
	rec := newRecorder()
	run(t, s, rec.target, clock.Options{Poll: 100 * time.Millisecond})

	ny, _ := time.LoadLocation("America/New_York")
	at := time.Now().Add(2 * time.Second).In(ny).Truncate(time.Second)
	name := eventbridge.Name("ops", "sch_at")
	payload := eventbridge.Payload{Fleet: "ops", ScheduleID: "sch_at"}.Marshal()
	put(t, s, eventbridge.Schedule{Name: name, Expression: "at(" + at.Format("2006-01-02T15:04:05") + ")",
		Timezone: "America/New_York", Input: payload})

	f := rec.next(t, 6*time.Second)
	if f.input != string(payload) || !f.due.Equal(at) {
		t.Fatalf("fired %+v, want input %s due %s", f, payload, at)
	}
	if now := time.Now(); now.Before(at) {
		t.Fatalf("fired at %s, before its time %s", now, at)
	}
	gone(t, s, name, 3*time.Second)
	rec.none(t, 500*time.Millisecond)
}

// Injected time: rate(1 minute) fires at its creation and every minute
// after, catches up within MaxLate, and skips what is later than that.
func TestRateFiresAtItsTimes(t *testing.T) {
	t.Parallel()
	s := group(t)
	rec := newRecorder()
	name := eventbridge.Name("ops", "sch_rate")
	sc := put(t, s, eventbridge.Schedule{Name: name, Expression: "rate(1 minute)", Input: []byte(`{"n":1}`)})
	c0 := sc.Created
	now := &fakeNow{t: c0.Add(-time.Second)} // the clock starts just before the creation
	run(t, s, rec.target, clock.Options{Poll: 10 * time.Millisecond, Now: now.Now, MaxLate: 90 * time.Second})

	poll := 150 * time.Millisecond
	rec.none(t, poll)
	steps := []struct {
		at   time.Duration
		want []time.Duration // due times fired, after c0
	}{
		{0, []time.Duration{0}}, // no StartDate: it starts at once
		{59 * time.Second, nil},
		{60 * time.Second, []time.Duration{60 * time.Second}},
		{61 * time.Second, nil},
		{185 * time.Second, []time.Duration{120 * time.Second, 180 * time.Second}}, // catch up
		{1000 * time.Second, []time.Duration{960 * time.Second}},                   // older than 90 s: skipped
		{1010 * time.Second, nil},
	}
	for _, st := range steps {
		now.Set(c0.Add(st.at))
		// Firings run concurrently, as Scheduler's invocations do: any order.
		var got []time.Duration
		for range st.want {
			f := rec.next(t, 3*time.Second)
			if f.input != `{"n":1}` {
				t.Fatalf("fired input %s", f.input)
			}
			got = append(got, f.due.Sub(c0))
		}
		slices.Sort(got)
		if !slices.Equal(got, st.want) {
			t.Fatalf("at c0+%s: fired due c0+%v, want c0+%v", st.at, got, st.want)
		}
		rec.none(t, poll)
	}
}

// A disabled schedule never fires; a deleted one stops; one re-enabled
// fires only from then on; a clock started late does not backfill.
func TestDisabledAndDeleted(t *testing.T) {
	t.Parallel()
	s := group(t)
	rec := newRecorder()
	on := put(t, s, eventbridge.Schedule{Name: "on", Expression: "rate(1 minute)", Input: []byte(`on`)})
	off := eventbridge.Schedule{Name: "off", Expression: "rate(1 minute)", State: eventbridge.Disabled, Input: []byte(`off`)}
	put(t, s, off)
	c0 := on.Created
	now := &fakeNow{t: c0.Add(30 * time.Second)} // starts after c0: c0 itself is not backfilled
	run(t, s, rec.target, clock.Options{Poll: 10 * time.Millisecond, Now: now.Now})
	poll := 150 * time.Millisecond

	rec.none(t, poll)
	now.Set(c0.Add(60 * time.Second))
	if f := rec.next(t, 3*time.Second); f.input != "on" || !f.due.Equal(c0.Add(time.Minute)) {
		t.Fatalf("fired %+v, want on at c0+1m", f)
	}
	rec.none(t, poll)

	if err := s.Delete(context.Background(), on.Name); err != nil {
		t.Fatal(err)
	}
	rec.none(t, poll) // let the clock see the deletion
	now.Set(c0.Add(5 * time.Minute))
	rec.none(t, poll)
}

// A target's error is logged and not retried; a failed at() follow-up is
// still deleted.
func TestTargetErrorIsLoggedNotRetried(t *testing.T) {
	t.Parallel()
	s := group(t)
	rec := newRecorder()
	rec.err = errors.New("fleet unreachable")
	var buf syncBuffer
	log := slog.New(slog.NewTextHandler(&buf, nil))
	now := &fakeNow{t: time.Now()}
	run(t, s, rec.target, clock.Options{Poll: 10 * time.Millisecond, Now: now.Now, Logger: log})

	due := time.Now().Add(time.Hour).UTC().Truncate(time.Second)
	put(t, s, eventbridge.Schedule{Name: "fails", Expression: "at(" + due.Format("2006-01-02T15:04:05") + ")",
		Input: []byte(`{}`)})
	now.Set(due.Add(2 * time.Second))
	if f := rec.next(t, 3*time.Second); !f.due.Equal(due) {
		t.Fatalf("fired due %s, want %s", f.due, due)
	}
	gone(t, s, "fails", 3*time.Second)
	now.Set(due.Add(time.Minute))
	rec.none(t, 200*time.Millisecond)
	if out := buf.String(); !strings.Contains(out, "not retried") || !strings.Contains(out, "fleet unreachable") {
		t.Fatalf("log %q lacks the target's error", out)
	}
}

// Stopping waits for firings under way: no goroutine is left.
func TestRunWaitsForFirings(t *testing.T) {
	t.Parallel()
	s := group(t)
	started, returned := make(chan struct{}), make(chan struct{})
	var once sync.Once
	target := func(ctx context.Context, _ []byte) error {
		once.Do(func() { close(started) })
		<-ctx.Done()
		time.Sleep(50 * time.Millisecond)
		close(returned)
		return ctx.Err()
	}
	put(t, s, eventbridge.Schedule{Name: "slow", Expression: "rate(1 hour)", Input: []byte(`{}`)})
	nowFn, began := firstRead(time.Now)
	c, err := clock.New(s, target, clock.Options{Poll: 10 * time.Millisecond, Now: nowFn})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	// The rate was created before the clock started, so its first time
	// (the creation) is not backfilled; its next is an hour away. Use Run's
	// second-run refusal meanwhile.
	await(t, began, "Run started")
	second, stop := context.WithTimeout(context.Background(), time.Second)
	defer stop()
	if err := c.Run(second); err == nil {
		t.Fatal("a second Run while running = nil error")
	}
	cancel()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Run did not return")
	}
	select {
	case <-started:
		t.Fatal("a schedule created before the clock started fired its creation time")
	default:
	}

	if err := s.Delete(context.Background(), "slow"); err != nil {
		t.Fatal(err)
	}

	// Now one that fires at once (created after the clock started) and
	// blocks until the clock stops.
	now := &fakeNow{t: time.Now().Add(-time.Minute)}
	nowFn, began = firstRead(now.Now)
	c, _ = clock.New(s, target, clock.Options{Poll: 10 * time.Millisecond, Now: nowFn})
	ctx, cancel = context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go func() { done <- c.Run(ctx) }()
	await(t, began, "the second clock's Run started") // its start time is before the schedule's creation
	put(t, s, eventbridge.Schedule{Name: "slow2", Expression: "rate(2 hours)", Input: []byte(`{}`)})
	now.Set(time.Now().Add(time.Second))
	select {
	case <-started:
	case <-time.After(5 * time.Second):
		t.Fatal("the schedule did not fire")
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run = %v", err)
	}
	select {
	case <-returned:
	default:
		t.Fatal("Run returned before the target it started")
	}
}

func TestNewRefuses(t *testing.T) {
	t.Parallel()
	if _, err := clock.New(nil, func(context.Context, []byte) error { return nil }, clock.Options{}); err == nil {
		t.Error("New without schedules = nil error")
	}
	if _, err := clock.New(&eventbridge.Scheduler{}, nil, clock.Options{}); err == nil {
		t.Error("New without a target = nil error")
	}
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}
func (s *syncBuffer) String() string { s.mu.Lock(); defer s.mu.Unlock(); return s.b.String() }
