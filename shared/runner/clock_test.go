//go:build linux

package runner_test

import (
	"sync"
	"time"

	"github.com/agentsfleet/agentsfleet/shared/runner"
)

// fakeClock is a clock that moves only when told to, or when a wait on it
// is asked for: After moves it on by the wait at once, so a runner waiting
// for a lease to lapse waits no real time. Safe for concurrent use.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func newFakeClock() *fakeClock { return &fakeClock{now: time.Now()} }

// Now returns the clock's time.
func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Advance moves the clock on by d.
func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// After moves the clock on by d and returns a channel that has fired.
func (c *fakeClock) After(d time.Duration) <-chan time.Time {
	c.Advance(d)
	ch := make(chan time.Time, 1)
	ch <- c.Now()
	return ch
}

// Since is how far the clock has moved since t.
func (c *fakeClock) Since(t time.Time) time.Duration { return c.Now().Sub(t) }

// on runs the runner on c; newEnv, seeing Config.After set, runs the
// store on it too.
func (c *fakeClock) on(cfg *runner.Config) {
	cfg.Now = c.Now
	cfg.After = c.After
}
