package store_test

import (
	"testing"
	"time"

	"github.com/agentsfleet/agentsfleet/shared/fault"
	"github.com/agentsfleet/agentsfleet/shared/store"
)

func TestClaimIdempotencyKey(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	steps := []struct {
		name        string
		advance     time.Duration
		scope, key  string
		runID       string
		wantExist   string
		wantClaimed bool
		want        fault.Code
	}{
		{"first claim", 0, "slack", "Ev1", "run_a", "", true, fault.Code{}},
		{"retry", 0, "slack", "Ev1", "run_b", "run_a", false, fault.Code{}},
		{"same key, other scope", 0, "webhook:ops", "Ev1", "run_c", "", true, fault.Code{}},
		{"still live just before expiry", 59 * time.Minute, "slack", "Ev1", "run_d", "run_a", false, fault.Code{}},
		{"expired key is free again", time.Minute, "slack", "Ev1", "run_e", "", true, fault.Code{}},
		{"the new claim holds", 0, "slack", "Ev1", "run_f", "run_e", false, fault.Code{}},
		{"empty key", 0, "slack", "", "run_g", "", false, fault.RequestInvalid},
		{"scope with #", 0, "a#b", "k", "run_g", "", false, fault.RequestInvalid},
	}
	for _, st := range steps { // in order: the clock moves
		e.clock.Advance(st.advance)
		exist, claimed, err := e.ClaimIdempotencyKey(ctx, st.scope, st.key, st.runID, time.Hour)
		if st.want == (fault.Code{}) && err != nil || st.want != (fault.Code{}) && !errorsIs(err, st.want) ||
			exist != st.wantExist || claimed != st.wantClaimed {
			t.Fatalf("%s: ClaimIdempotencyKey = %q, %v, %v; want %q, %v, %s", st.name, exist, claimed, err, st.wantExist, st.wantClaimed, st.want.ID())
		}
	}
}

func TestConcurrentClaimsHaveOneWinner(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	const n = 10
	exist := make([]string, n)
	claimed := make([]bool, n)
	parallel(n, func(i int) {
		var err error
		exist[i], claimed[i], err = e.ClaimIdempotencyKey(ctx, "api:k1", "req-1", "run_"+string(rune('a'+i)), 0)
		if err != nil {
			t.Errorf("ClaimIdempotencyKey: %v", err)
		}
	})
	winner := ""
	for i := range n {
		if claimed[i] {
			if winner != "" {
				t.Fatalf("two claims won: %s and run_%c", winner, 'a'+i)
			}
			winner = "run_" + string(rune('a'+i))
		}
	}
	for i := range n {
		if !claimed[i] && exist[i] != winner {
			t.Fatalf("loser %d sees %q, want the winner %q", i, exist[i], winner)
		}
	}
}

func TestCreateRunWithIdempotencyKey(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.fleet(t, "ops")
	key := &store.IdempotencyKey{Scope: "slack", Key: "Ev42", TTL: time.Hour}
	nr := store.NewRun{Fleet: "ops", Source: store.SourceSlack, Thread: &store.Thread{Channel: "C1", ThreadTS: "1.1"},
		Input: []byte("hello"), Idempotency: key}
	first, created, err := e.CreateRun(ctx, nr)
	if err != nil || !created {
		t.Fatalf("CreateRun = %v, created %v", err, created)
	}
	again, created, err := e.CreateRun(ctx, nr)
	if err != nil || created || again.ID != first.ID {
		t.Fatalf("retry = %s, created %v, %v; want %s, not created", again.ID, created, err, first.ID)
	}
	// A retry after the fleet was paused still answers with the first run.
	if _, err := e.PauseFleet(ctx, "ops"); err != nil {
		t.Fatal(err)
	}
	if again, _, err = e.CreateRun(ctx, nr); err != nil || again.ID != first.ID {
		t.Fatalf("retry on a paused fleet = %s, %v; want %s", again.ID, err, first.ID)
	}
	if _, err := e.ResumeFleet(ctx, "ops"); err != nil {
		t.Fatal(err)
	}
	// After the key expires, the same key starts a new run.
	e.clock.Advance(time.Hour)
	later, created, err := e.CreateRun(ctx, nr)
	if err != nil || !created || later.ID == first.ID {
		t.Fatalf("after expiry = %s, created %v, %v; want a new run", later.ID, created, err)
	}
	// A failed creation claims nothing.
	bad := store.NewRun{Fleet: "nope", Source: store.SourceAPI, Idempotency: &store.IdempotencyKey{Scope: "api", Key: "k"}}
	_, _, err = e.CreateRun(ctx, bad)
	wantCode(t, err, fault.FleetNotFound)
	bad.Fleet = "ops"
	if _, created, err := e.CreateRun(ctx, bad); err != nil || !created {
		t.Fatalf("CreateRun with the key a failed call used = %v, created %v; want a new run", err, created)
	}
}

func TestConcurrentIdempotentCreationMakesOneRun(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.fleet(t, "ops")
	const n = 12
	ids := make([]string, n)
	created := make([]bool, n)
	parallel(n, func(i int) {
		r, c, err := e.CreateRun(ctx, store.NewRun{Fleet: "ops", Source: store.SourceWebhook,
			Idempotency: &store.IdempotencyKey{Scope: "webhook:ops", Key: "delivery-7"}})
		if err != nil {
			t.Errorf("CreateRun: %v", err)
		}
		ids[i], created[i] = r.ID, c
	})
	nCreated := 0
	for i := range n {
		if created[i] {
			nCreated++
		}
		if ids[i] != ids[0] {
			t.Fatalf("callers got runs %v, want one id", ids)
		}
	}
	page, err := e.ListRuns(ctx, "ops", "", 100)
	if err != nil {
		t.Fatal(err)
	}
	if nCreated != 1 || len(page.Runs) != 1 {
		t.Fatalf("%d callers created, %d runs exist; want 1 and 1", nCreated, len(page.Runs))
	}
}
