package store_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/agentsfleet/agentsfleet/shared/awstest"
	"github.com/agentsfleet/agentsfleet/shared/fault"
	"github.com/agentsfleet/agentsfleet/shared/store"
)

func TestMain(m *testing.M) { awstest.Main(m) }

// clock is a settable clock for store.WithClock.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock() *clock { return &clock{t: time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)} }

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// env is a Store over a fresh table of its own, with a settable clock.
type env struct {
	*store.Store
	db    *dynamodb.Client
	table string
	clock *clock
}

func newEnv(t testing.TB) *env {
	t.Helper()
	db := dynamodb.NewFromConfig(awstest.Config(t))
	table := awstest.UniqueName(t, "tbl")
	if err := store.CreateTable(context.Background(), db, table); err != nil {
		t.Fatalf("CreateTable: %v", err)
	}
	c := newClock()
	return &env{Store: store.New(db, table, store.WithClock(c.Now)), db: db, table: table, clock: c}
}

var ctx = context.Background()

// fleet creates a fleet named name with a small Definition.
func (e *env) fleet(t testing.TB, name string) store.Fleet {
	t.Helper()
	f, err := e.CreateFleet(ctx, store.NewFleet{Name: name, Definition: []byte(`{"name":"` + name + `"}`), Hash: "h1"})
	if err != nil {
		t.Fatalf("CreateFleet(%s): %v", name, err)
	}
	return f
}

// run creates a run of fleet from the API, or from Slack with a thread when slack.
func (e *env) run(t testing.TB, fleet string, slack bool) store.Run {
	t.Helper()
	nr := store.NewRun{Fleet: fleet, Source: store.SourceAPI}
	if slack {
		nr.Source = store.SourceSlack
		nr.Thread = &store.Thread{Channel: "C1", ThreadTS: "1700000000.000100"}
	}
	r, created, err := e.CreateRun(ctx, nr)
	if err != nil || !created {
		t.Fatalf("CreateRun: %v, created %v", err, created)
	}
	return r
}

// running creates a run and moves it to running.
func (e *env) running(t testing.TB, fleet string) store.Run {
	t.Helper()
	r := e.run(t, fleet, false)
	r, err := e.Transition(ctx, r.ID, store.StatusRunning, "")
	if err != nil {
		t.Fatalf("Transition to running: %v", err)
	}
	return r
}

// wantCode fails unless err carries code (nil code: unless err is nil).
func wantCode(t testing.TB, err error, code fault.Code) {
	t.Helper()
	if code == (fault.Code{}) {
		if err != nil {
			t.Fatalf("err = %v, want nil", err)
		}
		return
	}
	if !errors.Is(err, code) {
		t.Fatalf("err = %v, want %s", err, code.ID())
	}
}

// parallel runs n copies of f at once and waits for all.
func parallel(n int, f func(i int)) {
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		wg.Go(func() {
			<-start
			f(i)
		})
	}
	close(start)
	wg.Wait()
}

func errorsIs(err error, code fault.Code) bool { return errors.Is(err, code) }
