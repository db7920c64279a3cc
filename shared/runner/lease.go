package runner

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/agentsfleet/agentsfleet/shared/fault"
	"github.com/agentsfleet/agentsfleet/shared/store"
)

// DefaultLease is how long a runner holds a run (or a child agent) between
// renewals when Config.Lease is 0. An invocation that dies holding it
// leaves the run to whoever comes once it runs out: Lambda's retry, or the
// sweep (schedule/keeper, Keeper.Sweep).
const DefaultLease = 2 * time.Minute

// EnvLease is the runner function's setting for Config.Lease, in whole
// seconds: shorter makes a dead invocation's run taken over sooner (and
// the lease renewed more often, every third of it).
const EnvLease = "AGENTSFLEET_RUN_LEASE_SECONDS"

// LeaseFromEnv reads Config.Lease from EnvLease: 0 (DefaultLease) when it
// is unset; a value that is not a whole number of seconds from 3 to 3600 is
// an error naming it.
func LeaseFromEnv(getenv func(string) string) (time.Duration, error) {
	v := strings.TrimSpace(getenv(EnvLease))
	if v == "" {
		return 0, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 3 || n > 3600 {
		return 0, fmt.Errorf("%s=%q: want whole seconds from 3 to 3600 (default %d)", EnvLease, v, int(DefaultLease.Seconds()))
	}
	return time.Duration(n) * time.Second, nil
}

// lease is one invocation's hold on one agent of a run, the run's own or a
// child's (whose lease is its own: leased says which store item): taken,
// waiting out a lease that lapses (awaitLease), renewed every third of its
// length while the invocation works, and released once.
type lease struct {
	r      *Runner
	of     leased
	holder string
	// takeovers counts the leases of the agent taken over from dead
	// invocations, this one included.
	takeovers int
}

// leased is the store's lease of one agent of a run.
type leased interface {
	// acquire takes the lease for holder for d, and returns the run and
	// the holder whose lease lapsed unrenewed, if it was taken over.
	acquire(ctx context.Context, holder string, d time.Duration) (run store.Run, lapsed string, err error)
	renew(ctx context.Context, holder string, d time.Duration) error
	release(ctx context.Context, holder string) error
	// noteTakeover counts a takeover and returns how many there were.
	noteTakeover(ctx context.Context, holder string) (int, error)
}

// newLease is a lease of of for a new holder, not taken yet.
func (r *Runner) newLease(of leased) *lease {
	return &lease{r: r, of: of, holder: newHolder()}
}

// take takes the lease (waiting for one that lapses) and returns the run.
// fault.RunLeaseHeld says a live invocation holds it.
func (l *lease) take(ctx context.Context, logArgs ...any) (store.Run, error) {
	var run store.Run
	var lapsed string
	err := l.r.awaitLease(ctx, func() (err error) {
		run, lapsed, err = l.of.acquire(ctx, l.holder, l.r.cfg.Lease)
		return err
	})
	if err != nil || lapsed == "" {
		return run, err
	}
	// Lambda's retry of an invocation that died, or the sweep's
	// re-invocation (schedule/keeper, Keeper.Sweep): counted alike.
	l.r.log.Warn("took over a lease that lapsed", append(logArgs, "lapsed_holder", lapsed)...)
	l.takeovers, err = l.of.noteTakeover(ctx, l.holder)
	return run, err
}

// keep renews the taken lease while the returned context lives. That
// context ends handOverReserve before ctx's deadline, and is cancelled
// with a cause when the lease is lost or stop is called. release stops
// renewing and releases the lease, once; it is safe to call again.
func (l *lease) keep(ctx context.Context, logArgs ...any) (_ context.Context, stop context.CancelCauseFunc, release func()) {
	var trim context.CancelFunc = func() {}
	if dl, ok := ctx.Deadline(); ok {
		// Keep time to hand the run over when a turn runs into the deadline.
		ctx, trim = context.WithDeadline(ctx, dl.Add(-handOverReserve))
	}
	ctx, stop = context.WithCancelCause(ctx)
	renewed := l.renewing(ctx, stop, logArgs)
	release = sync.OnceFunc(func() {
		stop(nil)
		<-renewed
		// A fresh context: the invocation's may be done, the lease must go.
		rctx, rcancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer rcancel()
		if err := l.of.release(rctx, l.holder); err != nil && !errors.Is(err, fault.RunLeaseHeld) {
			l.r.log.Warn("release the lease", append(logArgs, "error", err)...)
		}
		trim()
	})
	return ctx, stop, release
}

// renewing renews the lease until ctx is done; losing it cancels ctx.
// The returned channel closes when it has stopped.
func (l *lease) renewing(ctx context.Context, cancel context.CancelCauseFunc, logArgs []any) <-chan struct{} {
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(l.r.cfg.Lease / 3)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				if err := l.of.renew(ctx, l.holder, l.r.cfg.Lease); err != nil && ctx.Err() == nil {
					l.r.log.Error("lost the lease", append(logArgs, "error", err)...)
					cancel(fmt.Errorf("lost the lease: %w", err))
					return
				}
			}
		}
	}()
	return done
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
