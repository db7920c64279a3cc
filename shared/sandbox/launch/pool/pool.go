// Package pool is a launch.Launcher with a warm pool: idle sandboxes of
// each kind (size, and with or without a browser), started ahead of runs
// by a launch.Starter (launch/ecs on Fargate, launch/local on this
// machine) and recorded in the store's
// DynamoDB table, so that a run claims one in milliseconds instead of
// waiting for a cold start, from any process.
//
// A claim is one conditional write on the sandbox's record (store's
// ClaimIdleSandbox): whatever races, no two runs get one sandbox. A
// claimed sandbox serves its run (and the run's children) only and is
// stopped when the run ends; it never returns to the pool. After each
// claim the pool is topped up, in the background, to its target for that
// kind; Sweep stops idle sandboxes past MaxIdle and forgets records whose
// sandbox is dead, then tops up. Idle sandboxes also stop themselves
// (sandboxd's idle timeout), so nothing is left billing when no sweep runs.
//
// A record holds a sandbox's id, address and nonce (launch.Warm), never its
// token: the Starter makes the token again from the nonce (launch/ecs with
// the runner's key), so that a reader of the table cannot call a sandbox.
//
// The records of a kind are under its key where the store takes a size:
// "small" for a plain sandbox, as before browsers came, and
// "small+browser" for one with a browser. A run that needs a browser never
// claims a plain sandbox, nor the reverse, and records written before
// browsers came read as plain sandboxes.
package pool

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentsfleet/agentsfleet/shared/fleet"
	"github.com/agentsfleet/agentsfleet/shared/sandbox/launch"
	"github.com/agentsfleet/agentsfleet/shared/store"
)

// Records is what the pool needs of the store; *store.Store has it.
type Records interface {
	PutIdleSandbox(ctx context.Context, ps store.PoolSandbox) error
	PutClaimedSandbox(ctx context.Context, ps store.PoolSandbox, runID string) error
	ClaimIdleSandbox(ctx context.Context, size, runID string) (store.PoolSandbox, bool, error)
	ClaimedSandbox(ctx context.Context, size, runID string) (store.PoolSandbox, bool, error)
	DropIdleSandbox(ctx context.Context, size, id string) (bool, error)
	DropClaimedSandbox(ctx context.Context, size, id, runID string) (bool, error)
	CountIdle(ctx context.Context, size string) (int, error)
	ListPool(ctx context.Context, size string) ([]store.PoolSandbox, error)
}

var _ Records = (*store.Store)(nil)

// Defaults of Config.
const (
	DefaultMaxIdle   = 10 * time.Minute
	DefaultMaxStarts = 4
)

// Config configures a Pool.
type Config struct {
	// Starter starts, connects to and stops the sandboxes.
	Starter launch.Starter
	// Records keeps the pool's records (a *store.Store).
	Records Records
	// Target is how many idle sandboxes to keep of each size; a size
	// missing or at 0 keeps none (every run starts cold).
	Target map[fleet.SandboxSize]int
	// BrowserTarget is the same for sandboxes with a browser, kept apart
	// (BrowserTargetsEnv). It needs a Starter that can give them
	// (launch.Browsers).
	BrowserTarget map[fleet.SandboxSize]int
	// MaxIdle is how long an idle sandbox may wait before Sweep stops it;
	// its record stops being claimable then too. It should not exceed
	// sandboxd's idle timeout. Zero means DefaultMaxIdle.
	MaxIdle time.Duration
	// MaxStarts bounds the sandboxes one top-up starts at once. Zero means
	// DefaultMaxStarts.
	MaxStarts int
	// Logger gets what goes wrong in the background. Nil discards it.
	Logger *slog.Logger
	// Now is the clock Sweep judges ages by. Nil means time.Now.
	Now func() time.Time
}

// Stats counts what a Pool has done since New.
type Stats struct {
	Claimed   int // runs given an idle sandbox
	Cold      int // runs given a sandbox started for them
	Resumed   int // Acquires that found the run's sandbox recorded (another invocation)
	Discarded int // idle sandboxes found dead at claim time
}

// Pool is a launch.Launcher over a warm pool. It is safe for concurrent use,
// and several Pools (processes) may share one table and Starter.
type Pool struct {
	cfg Config
	log *slog.Logger

	bg     context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu       sync.Mutex
	cond     *sync.Cond
	runs     map[string]*claim // by run id, the sandboxes this Pool handed out
	inflight map[launch.Kind]int
	pending  map[launch.Kind]bool // a background top-up is waiting
	kindMu   map[launch.Kind]*sync.Mutex
	mine     map[string]bool // ids of the sandboxes this Pool started, until stopped

	claimed, cold, resumed, discarded atomic.Int64
}

type claim struct {
	mu   sync.Mutex
	kind launch.Kind
	warm launch.Warm
	sb   *launch.Sandbox
}

var (
	_ launch.Launcher = (*Pool)(nil)
	_ launch.Browsers = (*Pool)(nil)
)

// New returns a Pool. It starts nothing: call TopUp or Sweep to fill it,
// and Close to wait for background top-ups when done.
func New(cfg Config) (*Pool, error) {
	if cfg.Starter == nil || cfg.Records == nil {
		return nil, errors.New("pool: a Starter and Records are required")
	}
	for size, n := range cfg.Target {
		if !size.Valid() || n < 0 {
			return nil, fmt.Errorf("pool: target %d for size %q", n, size)
		}
	}
	for size, n := range cfg.BrowserTarget {
		if !size.Valid() || n < 0 {
			return nil, fmt.Errorf("pool: browser target %d for size %q", n, size)
		}
		if n > 0 && !launch.CanBrowse(cfg.Starter) {
			return nil, fmt.Errorf("pool: a browser target (%s=%d) needs a Starter that can start sandboxes with a browser", size, n)
		}
	}
	if cfg.MaxIdle <= 0 {
		cfg.MaxIdle = DefaultMaxIdle
	}
	if cfg.MaxStarts <= 0 {
		cfg.MaxStarts = DefaultMaxStarts
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	p := &Pool{cfg: cfg, log: log, runs: map[string]*claim{}, inflight: map[launch.Kind]int{},
		pending: map[launch.Kind]bool{}, kindMu: map[launch.Kind]*sync.Mutex{}, mine: map[string]bool{}}
	p.cond = sync.NewCond(&p.mu)
	p.bg, p.cancel = context.WithCancel(context.Background())
	return p, nil
}

// Stats returns what the Pool has done so far.
func (p *Pool) Stats() Stats {
	return Stats{Claimed: int(p.claimed.Load()), Cold: int(p.cold.Load()), Resumed: int(p.resumed.Load()),
		Discarded: int(p.discarded.Load())}
}

// Browser says the Pool can give sandboxes with a browser: its Starter
// can.
func (p *Pool) Browser() bool { return launch.CanBrowse(p.cfg.Starter) }

// kindOf is the kind of sandbox spec asks for, its size defaulted.
func kindOf(spec launch.Spec) launch.Kind {
	k := launch.KindOf(spec)
	if k.Size == "" {
		k.Size = fleet.DefaultSandboxSize
	}
	return k
}

// kinds are every kind of sandbox, plain ones first.
func kinds() []launch.Kind {
	var out []launch.Kind
	for _, browser := range []bool{false, true} {
		for _, size := range fleet.SandboxSizes() {
			out = append(out, launch.Kind{Size: size, Browser: browser})
		}
	}
	return out
}

// browserSuffix ends the store's size of a sandbox with a browser.
const browserSuffix = "+browser"

// key is the store's size for the records of kind k: the size alone for
// a plain sandbox, so that records of before browsers stay readable.
func key(k launch.Kind) string {
	if k.Browser {
		return string(k.Size) + browserSuffix
	}
	return string(k.Size)
}

func warmOf(ps store.PoolSandbox) launch.Warm {
	size, browser := strings.CutSuffix(ps.Size, browserSuffix)
	return launch.Warm{ID: ps.ID, Size: fleet.SandboxSize(size), Browser: browser, URL: ps.URL, Nonce: ps.Nonce, Started: ps.Started}
}

func recordOf(w launch.Warm) store.PoolSandbox {
	return store.PoolSandbox{ID: w.ID, Size: key(w.Kind()), URL: w.URL, Nonce: w.Nonce, Started: w.Started}
}

func (p *Pool) target(k launch.Kind) int {
	if k.Browser {
		return p.cfg.BrowserTarget[k.Size]
	}
	return p.cfg.Target[k.Size]
}

// Acquire returns the run's sandbox. A run that has one (claimed by this
// Pool, or recorded as claimed by it from another invocation) gets it
// back. Otherwise it claims the oldest idle sandbox of the spec's kind
// (its size, with a browser when spec.Browser and without one otherwise);
// one that does not answer is stopped, its record dropped, and the next
// taken. With none idle it starts one cold (an error wraps launch.ErrStart;
// launch.ErrNoBrowser too when spec.Browser and the Starter has no
// browser). Every Acquire that takes from the pool or misses it tops the
// kind up in the background.
func (p *Pool) Acquire(ctx context.Context, spec launch.Spec) (*launch.Sandbox, error) {
	if spec.RunID == "" {
		return nil, fmt.Errorf("%w: no run id", launch.ErrStart)
	}
	kind := kindOf(spec)
	if !kind.Size.Valid() {
		return nil, fmt.Errorf("%w: %q is not a sandbox size", launch.ErrStart, kind.Size)
	}
	if kind.Browser && !p.Browser() {
		return nil, fmt.Errorf("%w: run %s: %w", launch.ErrStart, spec.RunID, launch.ErrNoBrowser)
	}
	p.mu.Lock()
	c, ok := p.runs[spec.RunID]
	if !ok {
		c = &claim{kind: kind}
		p.runs[spec.RunID] = c
	}
	p.inflight[kind]++
	p.mu.Unlock()
	defer p.done(kind)

	c.mu.Lock()
	defer c.mu.Unlock()
	if c.sb != nil {
		return c.sb, nil
	}
	w, sb, err := p.acquire(ctx, spec.RunID, kind)
	if err != nil {
		p.mu.Lock()
		if p.runs[spec.RunID] == c {
			delete(p.runs, spec.RunID)
		}
		p.mu.Unlock()
		return nil, fmt.Errorf("acquire sandbox for run %s: %w", spec.RunID, err)
	}
	c.kind, c.warm, c.sb = kind, w, sb
	return sb, nil
}

// done ends an Acquire of kind: background top-ups wait for none to be in
// flight, so that runs get the start capacity first.
func (p *Pool) done(kind launch.Kind) {
	p.mu.Lock()
	p.inflight[kind]--
	p.mu.Unlock()
	p.cond.Broadcast()
}

func (p *Pool) acquire(ctx context.Context, runID string, kind launch.Kind) (launch.Warm, *launch.Sandbox, error) {
	// Another invocation for this run may have claimed one.
	if ps, ok, err := p.cfg.Records.ClaimedSandbox(ctx, key(kind), runID); err != nil {
		return launch.Warm{}, nil, err
	} else if ok {
		w := warmOf(ps)
		sb, err := p.cfg.Starter.Connect(ctx, w)
		if err == nil {
			p.resumed.Add(1)
			sb.Claim = launch.ClaimResumed
			return w, sb, nil
		}
		// Dead: forget it, and give the run another.
		p.log.Warn("run's sandbox is dead, replacing it", "run", runID, "sandbox", w.ID, "err", err)
		p.discard(ctx, w, runID)
	}
	for {
		ps, ok, err := p.cfg.Records.ClaimIdleSandbox(ctx, key(kind), runID)
		if err != nil {
			return launch.Warm{}, nil, err
		}
		if !ok {
			break
		}
		w := warmOf(ps)
		sb, err := p.cfg.Starter.Connect(ctx, w)
		if err != nil {
			p.log.Warn("idle sandbox is dead, discarding it", "sandbox", w.ID, "err", err)
			p.discarded.Add(1)
			p.discard(ctx, w, runID)
			continue
		}
		p.claimed.Add(1)
		p.topUpLater(kind)
		sb.Claim = launch.ClaimWarm
		return w, sb, nil
	}
	p.topUpLater(kind)
	w, err := p.startOne(ctx, kind)
	if err != nil {
		return launch.Warm{}, nil, wrapStart(err)
	}
	if err := p.cfg.Records.PutClaimedSandbox(ctx, recordOf(w), runID); err != nil {
		p.stop(w)
		return launch.Warm{}, nil, err
	}
	sb, err := p.cfg.Starter.Connect(ctx, w)
	if err != nil {
		p.discard(ctx, w, runID)
		return launch.Warm{}, nil, wrapStart(err)
	}
	p.cold.Add(1)
	sb.Claim = launch.ClaimCold
	return w, sb, nil
}

func wrapStart(err error) error {
	if errors.Is(err, launch.ErrStart) {
		return err
	}
	return fmt.Errorf("%w: %w", launch.ErrStart, err)
}

// discard stops a sandbox claimed by runID and drops its record.
func (p *Pool) discard(ctx context.Context, w launch.Warm, runID string) {
	p.stop(w)
	if _, err := p.cfg.Records.DropClaimedSandbox(ctx, key(w.Kind()), w.ID, runID); err != nil {
		p.log.Warn("drop sandbox record", "sandbox", w.ID, "err", err)
	}
}

// stop stops w even when the caller's context has ended: a sandbox must
// not be left billing.
func (p *Pool) stop(w launch.Warm) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := p.stopCtx(ctx, w); err != nil {
		p.log.Warn("stop sandbox", "sandbox", w.ID, "err", err)
	}
}

// stopCtx stops w and forgets it was this Pool's.
func (p *Pool) stopCtx(ctx context.Context, w launch.Warm) error {
	err := p.cfg.Starter.Stop(ctx, w)
	if err == nil {
		p.mu.Lock()
		delete(p.mine, w.ID)
		p.mu.Unlock()
	}
	return err
}

// Release stops the run's sandbox and drops its record; a claimed sandbox
// never goes back to the pool. A run this Pool did not serve is looked up
// in the records (every kind), so a re-invoked runner can release it too.
// Releasing a run without a sandbox is not an error.
func (p *Pool) Release(ctx context.Context, runID string) error {
	p.mu.Lock()
	c, ok := p.runs[runID]
	delete(p.runs, runID)
	p.mu.Unlock()
	if ok {
		c.mu.Lock()
		w, sb := c.warm, c.sb
		c.mu.Unlock()
		if sb != nil {
			return p.release(ctx, w, runID)
		}
	}
	var errs []error
	for _, k := range kinds() {
		ps, found, err := p.cfg.Records.ClaimedSandbox(ctx, key(k), runID)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if found {
			errs = append(errs, p.release(ctx, warmOf(ps), runID))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("release sandbox of run %s: %w", runID, err)
	}
	return nil
}

func (p *Pool) release(ctx context.Context, w launch.Warm, runID string) error {
	if err := p.stopCtx(ctx, w); err != nil {
		return fmt.Errorf("release sandbox %s of run %s: %w", w.ID, runID, err)
	}
	if _, err := p.cfg.Records.DropClaimedSandbox(ctx, key(w.Kind()), w.ID, runID); err != nil {
		return fmt.Errorf("release sandbox %s of run %s: %w", w.ID, runID, err)
	}
	return nil
}

// topUpLater tops kind up in the background, once no Acquire of the kind
// is in flight. Calls while one is waiting add nothing.
func (p *Pool) topUpLater(kind launch.Kind) {
	if p.target(kind) == 0 {
		return
	}
	p.mu.Lock()
	if p.pending[kind] || p.bg.Err() != nil {
		p.mu.Unlock()
		return
	}
	p.pending[kind] = true
	p.wg.Add(1)
	p.mu.Unlock()
	go func() {
		defer p.wg.Done()
		p.mu.Lock()
		for p.inflight[kind] > 0 && p.bg.Err() == nil {
			p.cond.Wait()
		}
		p.pending[kind] = false
		p.mu.Unlock()
		if _, err := p.topUp(p.bg, kind); err != nil && p.bg.Err() == nil {
			p.log.Warn("top up the pool", "kind", kind.String(), "err", err)
		}
	}()
}

// TopUp starts idle sandboxes of size, plain ones and ones with a browser,
// until the records count each kind's target (Target, BrowserTarget), at
// most MaxStarts at a time for each, and returns how many it started.
// Top-ups of one kind do not overlap within a Pool; Pools in other
// processes may overshoot the target a little, which the next sweep's ages
// even out.
func (p *Pool) TopUp(ctx context.Context, size fleet.SandboxSize) (int, error) {
	var started int
	var errs []error
	for _, browser := range []bool{false, true} {
		n, err := p.topUp(ctx, launch.Kind{Size: size, Browser: browser})
		started += n
		errs = append(errs, err)
	}
	return started, errors.Join(errs...)
}

func (p *Pool) topUp(ctx context.Context, kind launch.Kind) (int, error) {
	target := p.target(kind)
	if target == 0 {
		return 0, nil
	}
	p.mu.Lock()
	m, ok := p.kindMu[kind]
	if !ok {
		m = &sync.Mutex{}
		p.kindMu[kind] = m
	}
	p.mu.Unlock()
	m.Lock()
	defer m.Unlock()

	n, err := p.cfg.Records.CountIdle(ctx, key(kind))
	if err != nil {
		return 0, fmt.Errorf("top up %s: %w", kind, err)
	}
	need := target - n
	if need <= 0 {
		return 0, nil
	}
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		started int
		errs    []error
	)
	sem := make(chan struct{}, p.cfg.MaxStarts)
	for range need {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			err := p.startIdle(ctx, kind)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs = append(errs, err)
			} else {
				started++
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return started, fmt.Errorf("top up %s: %w", kind, err)
	}
	return started, nil
}

// startOne starts a sandbox and notes it as this Pool's, for Drain.
func (p *Pool) startOne(ctx context.Context, kind launch.Kind) (launch.Warm, error) {
	w, err := p.cfg.Starter.Start(ctx, kind)
	if err != nil {
		return launch.Warm{}, err
	}
	// The record's kind is the one asked for, whatever the Starter says.
	w.Size, w.Browser = kind.Size, kind.Browser
	p.mu.Lock()
	p.mine[w.ID] = true
	p.mu.Unlock()
	return w, nil
}

func (p *Pool) startIdle(ctx context.Context, kind launch.Kind) error {
	w, err := p.startOne(ctx, kind)
	if err != nil {
		return err
	}
	rec := recordOf(w)
	rec.ExpiresAt = w.Started.Add(p.cfg.MaxIdle)
	if err := p.cfg.Records.PutIdleSandbox(ctx, rec); err != nil {
		p.stop(w)
		return err
	}
	return nil
}

// Sweep goes through the records of every kind: it stops idle sandboxes
// older than MaxIdle and those that do not answer, drops the records of
// claimed sandboxes that do not answer (a runner that crashed, a task that
// died), and then tops every kind up to its target. An idle sandbox a run
// claims while Sweep looks at it is left to the run.
func (p *Pool) Sweep(ctx context.Context) error {
	var errs []error
	for _, k := range kinds() {
		recs, err := p.cfg.Records.ListPool(ctx, key(k))
		if err != nil {
			errs = append(errs, err)
			continue
		}
		for _, ps := range recs {
			if err := p.sweepOne(ctx, ps); err != nil {
				errs = append(errs, err)
			}
		}
		if _, err := p.topUp(ctx, k); err != nil {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("sweep the pool: %w", err)
	}
	return nil
}

func (p *Pool) sweepOne(ctx context.Context, ps store.PoolSandbox) error {
	w := warmOf(ps)
	now := p.cfg.Now()
	switch ps.State {
	case store.PoolIdle:
		if now.Sub(ps.Started) < p.cfg.MaxIdle && now.Before(ps.ExpiresAt) {
			if _, err := p.cfg.Starter.Connect(ctx, w); err == nil {
				return nil
			}
		}
		// Past its age, expired or dead: drop the record first, so that no
		// run claims a sandbox being stopped.
		dropped, err := p.cfg.Records.DropIdleSandbox(ctx, ps.Size, ps.ID)
		if err != nil || !dropped {
			return err
		}
		p.stop(w)
	case store.PoolClaimed:
		p.mu.Lock()
		_, mine := p.runs[ps.ClaimedBy]
		p.mu.Unlock()
		if mine {
			return nil
		}
		if _, err := p.cfg.Starter.Connect(ctx, w); err == nil {
			return nil
		}
		p.stop(w)
		if _, err := p.cfg.Records.DropClaimedSandbox(ctx, ps.Size, ps.ID, ps.ClaimedBy); err != nil {
			return err
		}
	}
	return nil
}

// Wait returns once the background top-ups started so far have finished.
func (p *Pool) Wait() { p.wg.Wait() }

// Drain closes the Pool (Close), then stops every sandbox it started that
// is still recorded, idle or claimed, and drops its record: for a pool
// whose sandboxes live and die with this process (launch/local), so that
// its end leaves no process and no record behind. Sandboxes other Pools
// started are left alone. It returns the errors it met, joined, having
// tried every sandbox.
func (p *Pool) Drain(ctx context.Context) error {
	p.Close()
	var errs []error
	for _, k := range kinds() {
		recs, err := p.cfg.Records.ListPool(ctx, key(k))
		if err != nil {
			errs = append(errs, err)
			continue
		}
		for _, ps := range recs {
			p.mu.Lock()
			mine := p.mine[ps.ID]
			p.mu.Unlock()
			if !mine {
				continue
			}
			w := warmOf(ps)
			var dropErr error
			if ps.State == store.PoolIdle {
				_, dropErr = p.cfg.Records.DropIdleSandbox(ctx, ps.Size, ps.ID)
			} else {
				_, dropErr = p.cfg.Records.DropClaimedSandbox(ctx, ps.Size, ps.ID, ps.ClaimedBy)
			}
			errs = append(errs, dropErr, p.stopCtx(ctx, w))
		}
	}
	p.mu.Lock()
	clear(p.runs)
	p.mu.Unlock()
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("drain the pool: %w", err)
	}
	return nil
}

// Close stops background top-ups (a start under way is abandoned through
// its context) and waits for them. It stops no sandbox: idle ones stay in
// the pool for other processes, claimed ones are their runs' (Drain stops
// them).
func (p *Pool) Close() {
	p.mu.Lock()
	p.cancel()
	p.cond.Broadcast()
	p.mu.Unlock()
	p.wg.Wait()
}
