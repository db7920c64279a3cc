package store_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/agentsfleet/agentsfleet/shared/fault"
	"github.com/agentsfleet/agentsfleet/shared/store"
)

func TestLease(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.fleet(t, "ops")
	r := e.run(t, "ops", false)

	got, err := e.AcquireLease(ctx, r.ID, "a", time.Minute)
	if err != nil || got.LeaseHolder != "a" || !got.LeaseUntil.Equal(e.clock.Now().Add(time.Minute)) {
		t.Fatalf("AcquireLease(a) = %s until %v, %v; want a for a minute", got.LeaseHolder, got.LeaseUntil, err)
	}
	steps := []struct {
		name    string
		advance time.Duration
		do      func() error
		want    fault.Code
	}{
		{"other cannot acquire a held lease", 0, func() error { _, err := e.AcquireLease(ctx, r.ID, "b", time.Minute); return err }, fault.RunLeaseHeld},
		{"holder re-acquires (extends)", 0, func() error { _, err := e.AcquireLease(ctx, r.ID, "a", time.Minute); return err }, fault.Code{}},
		{"other cannot renew", 0, func() error { _, err := e.RenewLease(ctx, r.ID, "b", time.Minute); return err }, fault.RunLeaseHeld},
		{"other cannot release", 0, func() error { return e.ReleaseLease(ctx, r.ID, "b") }, fault.RunLeaseHeld},
		{"holder renews", 30 * time.Second, func() error { _, err := e.RenewLease(ctx, r.ID, "a", time.Minute); return err }, fault.Code{}},
		{"still held just before expiry", 59 * time.Second, func() error { _, err := e.AcquireLease(ctx, r.ID, "b", time.Minute); return err }, fault.RunLeaseHeld},
		{"expired lease is taken over", time.Second, func() error { _, err := e.AcquireLease(ctx, r.ID, "b", time.Minute); return err }, fault.Code{}},
		{"old holder cannot renew", 0, func() error { _, err := e.RenewLease(ctx, r.ID, "a", time.Minute); return err }, fault.RunLeaseHeld},
		{"old holder cannot release", 0, func() error { return e.ReleaseLease(ctx, r.ID, "a") }, fault.RunLeaseHeld},
		{"holder releases", 0, func() error { return e.ReleaseLease(ctx, r.ID, "b") }, fault.Code{}},
		{"released lease is free at once", 0, func() error { _, err := e.AcquireLease(ctx, r.ID, "c", time.Minute); return err }, fault.Code{}},
		{"unknown run", 0, func() error { _, err := e.AcquireLease(ctx, "run_nope", "c", time.Minute); return err }, fault.RunNotFound},
		{"unknown run renew", 0, func() error { _, err := e.RenewLease(ctx, "run_nope", "c", time.Minute); return err }, fault.RunNotFound},
		{"no holder", 0, func() error { _, err := e.AcquireLease(ctx, r.ID, "", time.Minute); return err }, fault.RequestInvalid},
	}
	for _, st := range steps { // in order: each step builds on the last
		e.clock.Advance(st.advance)
		err := st.do()
		if st.want == (fault.Code{}) && err != nil || st.want != (fault.Code{}) && !errors.Is(err, st.want) {
			t.Fatalf("%s: err = %v, want %v", st.name, err, st.want.ID())
		}
	}
	got, _ = e.GetRun(ctx, r.ID)
	if got.LeaseHolder != "c" {
		t.Fatalf("holder = %q, want c", got.LeaseHolder)
	}
}

func TestLeaseRaceHasOneWinner(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.fleet(t, "ops")
	for round := range 10 {
		r := e.run(t, "ops", false)
		errs := make([]error, 2)
		parallel(2, func(i int) {
			_, errs[i] = e.AcquireLease(ctx, r.ID, fmt.Sprintf("runner-%d", i), time.Minute)
		})
		won := 0
		for _, err := range errs {
			if err == nil {
				won++
			} else {
				wantCode(t, err, fault.RunLeaseHeld)
			}
		}
		if won != 1 {
			t.Fatalf("round %d: %d runners won the lease (%v), want 1", round, won, errs)
		}
	}
}

func TestCheckpoints(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.fleet(t, "ops")
	r := e.run(t, "ops", false)
	c, err := e.LoadCheckpoint(ctx, r.ID)
	if err != nil || c.Step != 0 || c.Data != nil {
		t.Fatalf("LoadCheckpoint before any = %+v, %v; want step 0", c, err)
	}
	if _, err := e.AcquireLease(ctx, r.ID, "a", time.Minute); err != nil {
		t.Fatal(err)
	}
	steps := []struct {
		name   string
		holder string
		step   int64
		want   error
	}{
		{"first", "a", 1, nil},
		{"next", "a", 2, nil},
		{"same step again", "a", 2, store.ErrStepCommitted},
		{"backwards", "a", 1, store.ErrStepCommitted},
		{"skip ahead", "a", 5, nil},
		{"not the holder", "b", 6, fault.RunLeaseHeld},
		{"step 0", "a", 0, fault.RequestInvalid},
	}
	for _, st := range steps {
		err := e.SaveCheckpoint(ctx, r.ID, st.holder, st.step, []byte(fmt.Sprint("state ", st.step)))
		if st.want == nil && err != nil || st.want != nil && !errors.Is(err, st.want) {
			t.Fatalf("%s: SaveCheckpoint = %v, want %v", st.name, err, st.want)
		}
	}
	c, err = e.LoadCheckpoint(ctx, r.ID)
	if err != nil || c.Step != 5 || string(c.Data) != "state 5" {
		t.Fatalf("LoadCheckpoint = %d %q, %v; want step 5", c.Step, c.Data, err)
	}

	// A runner that lost its lease cannot commit after the takeover.
	e.clock.Advance(2 * time.Minute)
	if _, err := e.AcquireLease(ctx, r.ID, "b", time.Minute); err != nil {
		t.Fatal(err)
	}
	err = e.SaveCheckpoint(ctx, r.ID, "a", 6, []byte("stale"))
	wantCode(t, err, fault.RunLeaseHeld)
	if err := e.SaveCheckpoint(ctx, r.ID, "b", 6, []byte("state 6")); err != nil {
		t.Fatalf("new holder SaveCheckpoint: %v", err)
	}
	_, err = e.LoadCheckpoint(ctx, "run_nope")
	wantCode(t, err, fault.RunNotFound)
	err = e.SaveCheckpoint(ctx, "run_nope", "a", 1, nil)
	wantCode(t, err, fault.RunNotFound)
}

func TestConcurrentCheckpointsOfOneStepHaveOneWinner(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.fleet(t, "ops")
	r := e.run(t, "ops", false)
	if _, err := e.AcquireLease(ctx, r.ID, "a", time.Minute); err != nil {
		t.Fatal(err)
	}
	errs := make([]error, 8)
	parallel(len(errs), func(i int) { errs[i] = e.SaveCheckpoint(ctx, r.ID, "a", 1, []byte(fmt.Sprint(i))) })
	won := 0
	for _, err := range errs {
		if err == nil {
			won++
		} else if !errors.Is(err, store.ErrStepCommitted) {
			t.Fatalf("SaveCheckpoint: %v, want nil or ErrStepCommitted", err)
		}
	}
	if won != 1 {
		t.Fatalf("%d saves of step 1 won, want 1", won)
	}
}

// TestLeaseHeldSaysWhoAndUntil: a held lease's error is a *store.LeaseHeld
// naming the holder and its expiry, and still fault.RunLeaseHeld.
func TestLeaseHeldSaysWhoAndUntil(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.fleet(t, "ops")
	r := e.run(t, "ops", false)
	if _, err := e.AcquireLease(ctx, r.ID, "inv_a", 90*time.Second); err != nil {
		t.Fatal(err)
	}
	_, err := e.AcquireLease(ctx, r.ID, "inv_b", time.Minute)
	var held *store.LeaseHeld
	if !errors.As(err, &held) || !errors.Is(err, fault.RunLeaseHeld) || held.Holder != "inv_a" ||
		!held.Until.Equal(e.clock.Now().Add(90*time.Second).Truncate(time.Millisecond)) {
		t.Fatalf("AcquireLease of a held lease = %v (%+v); want a *store.LeaseHeld of inv_a until %v", err, held, e.clock.Now().Add(90*time.Second))
	}
}
