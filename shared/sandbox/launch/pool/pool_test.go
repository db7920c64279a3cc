//go:build linux

package pool_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/agentsfleet/agentsfleet/shared/awstest"
	"github.com/agentsfleet/agentsfleet/shared/fleet"
	"github.com/agentsfleet/agentsfleet/shared/sandbox/launch"
	"github.com/agentsfleet/agentsfleet/shared/sandbox/launch/launchtest"
	"github.com/agentsfleet/agentsfleet/shared/sandbox/launch/pool"
	"github.com/agentsfleet/agentsfleet/shared/store"
)

func TestMain(m *testing.M) { awstest.Main(m) }

var ctx = context.Background()

const small = fleet.SizeSmall

// newStore is a Store over a fresh table.
func newStore(t testing.TB) *store.Store {
	t.Helper()
	db := dynamodb.NewFromConfig(awstest.Config(t))
	table := awstest.UniqueName(t, "pool")
	if err := store.CreateTable(ctx, db, table); err != nil {
		t.Fatalf("CreateTable: %v", err)
	}
	return store.New(db, table)
}

func newPool(t testing.TB, st *store.Store, s *launchtest.Starter, target int, mod ...func(*pool.Config)) *pool.Pool {
	t.Helper()
	cfg := pool.Config{Starter: s, Records: st, Target: map[fleet.SandboxSize]int{small: target}}
	for _, m := range mod {
		m(&cfg)
	}
	p, err := pool.New(cfg)
	if err != nil {
		t.Fatalf("pool.New: %v", err)
	}
	t.Cleanup(p.Close)
	return p
}

func idleIDs(t testing.TB, st *store.Store) map[string]bool {
	t.Helper()
	recs, err := st.ListPool(ctx, string(small))
	if err != nil {
		t.Fatalf("ListPool: %v", err)
	}
	ids := map[string]bool{}
	for _, r := range recs {
		if r.State == store.PoolIdle {
			ids[r.ID] = true
		}
	}
	return ids
}

func countIdle(t testing.TB, st *store.Store) int {
	t.Helper()
	n, err := st.CountIdle(ctx, string(small))
	if err != nil {
		t.Fatalf("CountIdle: %v", err)
	}
	return n
}

func spec(run string) launch.Spec { return launch.Spec{RunID: run, Fleet: "f", Size: small} }

func TestConcurrentAcquiresAgainstFourIdle(t *testing.T) {
	t.Parallel()
	st, s := newStore(t), launchtest.NewStarter(t)
	p := newPool(t, st, s, 4)
	if n, err := p.TopUp(ctx, small); err != nil || n != 4 {
		t.Fatalf("TopUp = %d, %v; want 4 started", n, err)
	}
	warm := idleIDs(t, st)

	var mu sync.Mutex
	byID := map[string]string{}   // sandbox → run
	claims := map[string]string{} // sandbox → how it was claimed
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range 10 {
		wg.Go(func() {
			<-start
			run := fmt.Sprintf("run-%02d", i)
			sb, err := p.Acquire(ctx, spec(run))
			if err != nil {
				t.Errorf("Acquire(%s): %v", run, err)
				return
			}
			if err := sb.Client.Health(ctx); err != nil {
				t.Errorf("sandbox of %s: %v", run, err)
			}
			mu.Lock()
			defer mu.Unlock()
			if prev, dup := byID[sb.ID]; dup {
				t.Errorf("sandbox %s given to %s and %s", sb.ID, prev, run)
			}
			byID[sb.ID] = run
			claims[sb.ID] = sb.Claim
		})
	}
	close(start)
	wg.Wait()

	fromPool := 0
	for id := range byID {
		want := launch.ClaimCold
		if warm[id] {
			fromPool++
			want = launch.ClaimWarm
		}
		if claims[id] != want {
			t.Errorf("sandbox %s says it was claimed %q, want %q", id, claims[id], want)
		}
	}
	if got, want := len(byID), 10; got != want {
		t.Fatalf("%d distinct sandboxes, want %d", got, want)
	}
	if got, want := fromPool, 4; got != want {
		t.Errorf("%d runs got an idle sandbox, want %d", got, want)
	}
	if st := p.Stats(); st.Claimed != 4 || st.Cold != 6 {
		t.Errorf("Stats = %+v, want 4 claimed, 6 cold", st)
	}
	p.Wait() // the top-up after the claims
	if got, want := countIdle(t, st), 4; got != want {
		t.Errorf("after top-up %d idle, want %d", got, want)
	}
	if got, want := s.Started(), 4+6+4; got != want {
		t.Errorf("started %d sandboxes, want %d", got, want)
	}
}

func TestDeadIdleSandboxDiscarded(t *testing.T) {
	t.Parallel()
	st, s := newStore(t), launchtest.NewStarter(t)
	p := newPool(t, st, s, 2)
	if _, err := p.TopUp(ctx, small); err != nil {
		t.Fatal(err)
	}
	recs, err := st.ListPool(ctx, string(small))
	if err != nil || len(recs) != 2 {
		t.Fatalf("ListPool = %d, %v; want 2", len(recs), err)
	}
	oldest, next := recs[0].ID, recs[1].ID
	s.Kill(oldest) // dies behind the pool's back

	sb, err := p.Acquire(ctx, spec("run-a"))
	if err != nil {
		t.Fatalf("Acquire: %v", err)
	}
	if sb.ID != next {
		t.Errorf("Acquire gave %s, want the next idle one, %s", sb.ID, next)
	}
	if got := p.Stats(); got.Discarded != 1 || got.Claimed != 1 || got.Cold != 0 {
		t.Errorf("Stats = %+v, want 1 discarded, 1 claimed, 0 cold", got)
	}
	p.Wait()
	for _, r := range must(st.ListPool(ctx, string(small))) {
		if r.ID == oldest {
			t.Errorf("the dead sandbox's record %s is still there: %+v", oldest, r)
		}
	}
	if got, want := countIdle(t, st), 2; got != want {
		t.Errorf("after top-up %d idle, want %d", got, want)
	}
}

func TestSweep(t *testing.T) {
	t.Parallel()
	st, s := newStore(t), launchtest.NewStarter(t)
	var mu sync.Mutex
	offset := time.Duration(0)
	now := func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		return time.Now().Add(offset)
	}
	p := newPool(t, st, s, 3, func(c *pool.Config) { c.MaxIdle = time.Hour; c.Now = now })
	if _, err := p.TopUp(ctx, small); err != nil {
		t.Fatal(err)
	}
	first := idleIDs(t, st)

	// A dead one is dropped and replaced; the live ones stay.
	var dead string
	for id := range first {
		dead = id
		break
	}
	s.Kill(dead)
	if err := p.Sweep(ctx); err != nil {
		t.Fatalf("Sweep: %v", err)
	}
	second := idleIDs(t, st)
	if second[dead] || len(second) != 3 {
		t.Errorf("after sweep idle = %v; want 3 without %s", second, dead)
	}
	for id := range first {
		if id != dead && !second[id] {
			t.Errorf("live idle sandbox %s was swept", id)
		}
	}
	if got, want := s.Stopped(), 0; got != want {
		t.Errorf("stopped %d, want %d (the dead one was killed, not stopped)", got, want)
	}

	// Past MaxIdle every idle one is stopped and the pool refilled.
	mu.Lock()
	offset = 2 * time.Hour
	mu.Unlock()
	if err := p.Sweep(ctx); err != nil {
		t.Fatalf("Sweep: %v", err)
	}
	third := idleIDs(t, st)
	for id := range second {
		if third[id] || s.Running(id) {
			t.Errorf("idle sandbox %s past MaxIdle: still recorded %v, running %v", id, third[id], s.Running(id))
		}
	}
	if got, want := len(third), 3; got != want {
		t.Errorf("after sweep %d idle, want %d", got, want)
	}
	if got, want := s.Stopped(), 3; got != want {
		t.Errorf("stopped %d, want %d", got, want)
	}
}

func TestReleaseAndReacquire(t *testing.T) {
	t.Parallel()
	st, s := newStore(t), launchtest.NewStarter(t)
	p := newPool(t, st, s, 1)
	if _, err := p.TopUp(ctx, small); err != nil {
		t.Fatal(err)
	}
	sb, err := p.Acquire(ctx, spec("run-a"))
	if err != nil {
		t.Fatal(err)
	}
	again, err := p.Acquire(ctx, spec("run-a"))
	if err != nil || again.ID != sb.ID {
		t.Fatalf("Acquire again = %v, %v; want %s", again, err, sb.ID)
	}
	// Another invocation (a new Pool over the same table) finds it too.
	other := newPool(t, st, s, 1)
	resumed, err := other.Acquire(ctx, spec("run-a"))
	if err != nil || resumed.ID != sb.ID {
		t.Fatalf("Acquire from another Pool = %v, %v; want %s", resumed, err, sb.ID)
	}
	if sb.Claim != launch.ClaimWarm || resumed.Claim != launch.ClaimResumed {
		t.Errorf("claims %q then %q, want warm then resumed", sb.Claim, resumed.Claim)
	}
	if got := other.Stats(); got.Resumed != 1 || got.Claimed != 0 || got.Cold != 0 {
		t.Errorf("other Stats = %+v, want 1 resumed only", got)
	}
	p.Wait()

	stopped := s.Stopped()
	if err := p.Release(ctx, "run-a"); err != nil {
		t.Fatalf("Release: %v", err)
	}
	if s.Running(sb.ID) {
		t.Errorf("sandbox %s still running after Release", sb.ID)
	}
	if got, want := s.Stopped(), stopped+1; got != want {
		t.Errorf("stopped %d, want %d", got, want)
	}
	if _, ok, err := st.ClaimedSandbox(ctx, string(small), "run-a"); err != nil || ok {
		t.Errorf("record of run-a after Release: %v, %v; want none", ok, err)
	}
	if err := p.Release(ctx, "run-a"); err != nil {
		t.Errorf("second Release: %v", err)
	}
	// A released run that comes back gets a new sandbox, never its old one.
	sb2, err := other.Acquire(ctx, spec("run-b"))
	if err != nil || sb2.ID == sb.ID {
		t.Errorf("Acquire(run-b) = %v, %v; want another sandbox than %s", sb2, err, sb.ID)
	}
	// The other Pool handed run-a out too: its Release finds nothing to stop.
	if err := other.Release(ctx, "run-a"); err != nil {
		t.Errorf("Release from the other Pool: %v", err)
	}
}

func TestColdStartFailure(t *testing.T) {
	t.Parallel()
	st := newStore(t)
	p, err := pool.New(pool.Config{Starter: failing{}, Records: st})
	if err != nil {
		t.Fatal(err)
	}
	_, err = p.Acquire(ctx, spec("run-a"))
	if !errors.Is(err, launch.ErrStart) {
		t.Errorf("Acquire err = %v, want launch.ErrStart", err)
	}
}

type failing struct{}

func (failing) Start(context.Context, launch.Kind) (launch.Warm, error) {
	return launch.Warm{}, errors.New("no capacity")
}
func (failing) Connect(context.Context, launch.Warm) (*launch.Sandbox, error) {
	return nil, errors.New("unreachable")
}
func (failing) Stop(context.Context, launch.Warm) error { return nil }

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// BenchmarkClaimWarm measures claiming an idle sandbox against starting
// one cold, with the in-process Starter and the store on moto, in the
// same run. In AWS the cold start is a Fargate task (30-60 s) and the
// claim is the same two DynamoDB requests plus a health check.
func BenchmarkClaimWarm(b *testing.B) {
	st, s := newStore(b), launchtest.NewStarter(b)
	warmPool := newPool(b, st, s, 1)
	coldPool := newPool(b, st, s, 0, func(c *pool.Config) {
		c.Target = map[fleet.SandboxSize]int{fleet.SizeMedium: 0}
	})
	var warm, cold time.Duration
	i := 0
	for b.Loop() {
		b.StopTimer()
		if _, err := warmPool.TopUp(ctx, small); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		i++
		t0 := time.Now()
		if _, err := warmPool.Acquire(ctx, spec(fmt.Sprintf("warm-%d", i))); err != nil {
			b.Fatal(err)
		}
		t1 := time.Now()
		if _, err := coldPool.Acquire(ctx, launch.Spec{RunID: fmt.Sprintf("cold-%d", i), Size: fleet.SizeMedium}); err != nil {
			b.Fatal(err)
		}
		t2 := time.Now()
		warm += t1.Sub(t0)
		cold += t2.Sub(t1)
		b.StopTimer()
		warmPool.Wait()
		warmPool.Release(ctx, fmt.Sprintf("warm-%d", i))
		coldPool.Release(ctx, fmt.Sprintf("cold-%d", i))
		b.StartTimer()
	}
	if i > 0 && warm > 0 {
		b.ReportMetric(float64(warm.Microseconds())/float64(i), "µs/warm")
		b.ReportMetric(float64(cold.Microseconds())/float64(i), "µs/cold")
		b.ReportMetric(float64(cold)/float64(warm), "cold/warm")
	}
}

// Drain stops every sandbox its Pool started, idle or claimed, and drops
// their records, leaving another Pool's alone.
func TestDrain(t *testing.T) {
	t.Parallel()
	st, s := newStore(t), launchtest.NewStarter(t)
	mine, other := newPool(t, st, s, 2), newPool(t, st, s, 0)
	if n, err := mine.TopUp(ctx, small); n != 2 || err != nil {
		t.Fatalf("TopUp = %d, %v", n, err)
	}
	if _, err := mine.Acquire(ctx, spec("claimed")); err != nil { // a warm claim
		t.Fatal(err)
	}
	if _, err := mine.Acquire(ctx, launch.Spec{RunID: "cold", Size: fleet.SizeMedium}); err != nil { // a cold start
		t.Fatal(err)
	}
	if _, err := other.Acquire(ctx, spec("theirs")); err != nil { // claims mine's last idle one
		t.Fatal(err)
	}
	theirs, ok, err := st.ClaimedSandbox(ctx, string(small), "theirs")
	if err != nil || !ok {
		t.Fatalf("the other Pool's claim: %v, %v", ok, err)
	}
	otherCold := newPool(t, st, s, 0)
	if _, err := otherCold.Acquire(ctx, launch.Spec{RunID: "theirs-cold", Size: fleet.SizeLarge}); err != nil {
		t.Fatal(err)
	}
	// The top-up after the claims may add idle ones: Drain takes them too.
	if err := mine.Drain(ctx); err != nil {
		t.Fatalf("Drain: %v", err)
	}
	recs := map[string]store.PoolSandbox{}
	for _, size := range fleet.SandboxSizes() {
		for _, r := range must(st.ListPool(ctx, string(size))) {
			recs[r.ClaimedBy] = r
		}
	}
	if len(recs) != 1 || recs["theirs-cold"].ID == "" {
		t.Errorf("records after Drain %+v, want only the other Pool's cold start", recs)
	}
	// The sandbox the other Pool claimed was mine's: Drain stopped it
	// (its record went with it); the other's own one still runs.
	if s.Running(theirs.ID) {
		t.Errorf("sandbox %s, started by the drained Pool, still runs", theirs.ID)
	}
	if !s.Running(recs["theirs-cold"].ID) {
		t.Error("the other Pool's own sandbox was stopped")
	}
	if got, want := s.Stopped(), s.Started()-1; got != want {
		t.Errorf("stopped %d of %d started, want all but the other Pool's one", got, s.Started())
	}
}

// TestBrowserSandboxesKeptApart: a run that needs a browser never claims a
// plain idle sandbox, nor the reverse; each kind has its own target and
// records (plain ones under the size alone, as before browsers came), and
// a run's browser sandbox is found again, and released, from another Pool.
func TestBrowserSandboxesKeptApart(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name          string
		plain, browse int // the targets of small
		run           launch.Spec
		wantBrowser   bool
	}{
		{"a browser run beside a plain idle one", 1, 0, launch.Spec{RunID: "b", Fleet: "f", Size: small, Browser: true}, true},
		{"a plain run beside a browser idle one", 0, 1, launch.Spec{RunID: "p", Fleet: "f", Size: small}, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			st := newStore(t)
			s := launchtest.NewStarter(t)
			s.Browsers = true
			p := newPool(t, st, s, tt.plain, func(c *pool.Config) { c.BrowserTarget = map[fleet.SandboxSize]int{small: tt.browse} })
			if n, err := p.TopUp(ctx, small); n != 1 || err != nil {
				t.Fatalf("TopUp = %d, %v; want 1 sandbox started", n, err)
			}
			plainKey, browserKey := string(small), string(small)+"+browser"
			idleBefore := map[string]int{plainKey: countIdleOf(t, st, plainKey), browserKey: countIdleOf(t, st, browserKey)}
			if idleBefore[plainKey] != tt.plain || idleBefore[browserKey] != tt.browse {
				t.Fatalf("idle records %v; want %s=%d and %s=%d", idleBefore, plainKey, tt.plain, browserKey, tt.browse)
			}

			sb, err := p.Acquire(ctx, tt.run)
			if err != nil {
				t.Fatalf("Acquire: %v", err)
			}
			p.Wait()
			if kind, ok := s.Kind(sb.ID); !ok || kind.Browser != tt.wantBrowser {
				t.Errorf("the run got sandbox %s of kind %v (running %v), want browser %v", sb.ID, kind, ok, tt.wantBrowser)
			}
			if got := p.Stats(); got.Claimed != 0 || got.Cold != 1 {
				t.Errorf("Stats = %+v; want the run started cold, no idle sandbox of the other kind claimed", got)
			}
			for k, n := range idleBefore {
				if got := countIdleOf(t, st, k); got != n {
					t.Errorf("idle records of %s = %d after the run, want %d still", k, got, n)
				}
			}
			runKey := plainKey
			if tt.wantBrowser {
				runKey = browserKey
			}
			if _, ok, err := st.ClaimedSandbox(ctx, runKey, tt.run.RunID); !ok || err != nil {
				t.Errorf("ClaimedSandbox(%s, %s) = %v, %v; want the run's record there", runKey, tt.run.RunID, ok, err)
			}

			other := newPool(t, st, s, 0)
			if again, err := other.Acquire(ctx, tt.run); err != nil || again.ID != sb.ID {
				t.Errorf("another Pool's Acquire = %v, %v; want sandbox %s back", again, err, sb.ID)
			}
			if err := newPool(t, st, s, 0).Release(ctx, tt.run.RunID); err != nil {
				t.Fatalf("Release from a third Pool: %v", err)
			}
			if s.Running(sb.ID) {
				t.Errorf("sandbox %s still runs after Release", sb.ID)
			}
		})
	}
}

// TestBrowserNeedsABrowserStarter: without a Starter that can start
// sandboxes with a browser, a browser target is refused at New and a run
// that needs a browser at Acquire, wrapping ErrNoBrowser, starting nothing.
func TestBrowserNeedsABrowserStarter(t *testing.T) {
	t.Parallel()
	st, s := newStore(t), launchtest.NewStarter(t)
	if _, err := pool.New(pool.Config{Starter: s, Records: st, BrowserTarget: map[fleet.SandboxSize]int{small: 1}}); err == nil {
		t.Error("pool.New with a browser target over a Starter without browsers succeeded")
	}
	p := newPool(t, st, s, 1)
	if p.Browser() {
		t.Error("Browser() = true over a Starter without browsers")
	}
	_, err := p.Acquire(ctx, launch.Spec{RunID: "b", Fleet: "f", Size: small, Browser: true})
	if !errors.Is(err, launch.ErrStart) || !errors.Is(err, launch.ErrNoBrowser) {
		t.Errorf("Acquire of a browser sandbox = %v, want ErrStart and ErrNoBrowser", err)
	}
	if s.Started() != 0 {
		t.Errorf("%d sandboxes started, want none", s.Started())
	}
	s.Browsers = true
	if !p.Browser() {
		t.Error("Browser() = false over a Starter with browsers")
	}
}

func countIdleOf(t testing.TB, st *store.Store, key string) int {
	t.Helper()
	n, err := st.CountIdle(ctx, key)
	if err != nil {
		t.Fatalf("CountIdle(%s): %v", key, err)
	}
	return n
}
