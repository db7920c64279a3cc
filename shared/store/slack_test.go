package store_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentsfleet/agentsfleet/shared/fault"
)

func TestSlackRoutes(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.fleet(t, "ops")
	e.fleet(t, "dev")

	if _, ok, err := e.SlackRoute(ctx, "C0123ABCD"); err != nil || ok {
		t.Fatalf("SlackRoute of an unrouted channel = ok %v, %v; want none", ok, err)
	}
	_, err := e.PutSlackRoute(ctx, "C0123ABCD", "ghost")
	wantCode(t, err, fault.FleetNotFound)
	if !strings.Contains(err.Error(), "no fleet ghost") {
		t.Fatalf("error %q does not name the fleet", err)
	}
	if _, ok, _ := e.SlackRoute(ctx, "C0123ABCD"); ok {
		t.Fatal("a refused route was written")
	}

	r, err := e.PutSlackRoute(ctx, "C0123ABCD", "ops")
	if err != nil || r.Fleet != "ops" || r.Channel != "C0123ABCD" || !r.UpdatedAt.Equal(e.clock.Now()) {
		t.Fatalf("PutSlackRoute = %+v, %v", r, err)
	}
	got, ok, err := e.SlackRoute(ctx, "C0123ABCD")
	if err != nil || !ok || got != r {
		t.Fatalf("SlackRoute = %+v, %v, %v; want %+v", got, ok, err, r)
	}
	// A new route replaces the old one; other channels are untouched.
	e.clock.Advance(time.Minute)
	if _, err := e.PutSlackRoute(ctx, "C0123ABCD", "dev"); err != nil {
		t.Fatal(err)
	}
	if got, _, _ := e.SlackRoute(ctx, "C0123ABCD"); got.Fleet != "dev" || !got.UpdatedAt.Equal(e.clock.Now()) {
		t.Fatalf("after re-routing SlackRoute = %+v, want dev now", got)
	}
	if _, ok, _ := e.SlackRoute(ctx, "C9999"); ok {
		t.Fatal("another channel has a route")
	}

	for _, bad := range []struct{ channel, fleet string }{
		{"#general", "ops"}, {"general", "ops"}, {"", "ops"}, {"C1 2", "ops"}, {strings.Repeat("C", 65), "ops"},
		{"C0123ABCD", ""}, {"C0123ABCD", "a#b"},
	} {
		_, err := e.PutSlackRoute(ctx, bad.channel, bad.fleet)
		wantCode(t, err, fault.RequestInvalid)
	}
	_, _, err = e.SlackRoute(ctx, "#general")
	wantCode(t, err, fault.RequestInvalid)
	if !strings.Contains(err.Error(), "channel's id") {
		t.Fatalf("error %q does not say to use the channel's id", err)
	}
}

func TestSlackThreads(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	const ch, ts = "C0123ABCD", "1700000000.000100"
	if _, ok, err := e.SlackThreadRun(ctx, ch, ts); err != nil || ok {
		t.Fatalf("SlackThreadRun of a new thread = ok %v, %v; want none", ok, err)
	}
	ids := make([]string, 8)
	for i := range ids {
		ids[i] = e.NewRunID()
		e.clock.Advance(time.Millisecond)
	}
	if err := e.RecordSlackThread(ctx, ch, ts, ids[3], "ops"); err != nil {
		t.Fatal(err)
	}
	got, ok, err := e.SlackThreadRun(ctx, ch, ts)
	if err != nil || !ok || got.RunID != ids[3] || got.Fleet != "ops" || got.Channel != ch || got.ThreadTS != ts {
		t.Fatalf("SlackThreadRun = %+v, %v, %v", got, ok, err)
	}
	// An older run does not replace a newer one, and is no error; the same
	// run again is fine.
	if err := e.RecordSlackThread(ctx, ch, ts, ids[1], "ops"); err != nil {
		t.Fatalf("recording an older run: %v", err)
	}
	if err := e.RecordSlackThread(ctx, ch, ts, ids[3], "ops"); err != nil {
		t.Fatalf("recording the same run again: %v", err)
	}
	if got, _, _ := e.SlackThreadRun(ctx, ch, ts); got.RunID != ids[3] {
		t.Fatalf("thread run = %s, want %s kept", got.RunID, ids[3])
	}
	// Concurrent records, in any order, leave the newest.
	shuffled := slices.Clone(ids)
	slices.Reverse(shuffled)
	parallel(len(shuffled), func(i int) {
		if err := e.RecordSlackThread(ctx, ch, ts, shuffled[i], "ops"); err != nil {
			t.Errorf("RecordSlackThread: %v", err)
		}
	})
	if got, _, _ := e.SlackThreadRun(ctx, ch, ts); got.RunID != ids[len(ids)-1] {
		t.Fatalf("after concurrent records thread run = %s, want the newest %s", got.RunID, ids[len(ids)-1])
	}
	// Threads are told apart by channel and ts.
	if _, ok, _ := e.SlackThreadRun(ctx, ch, "1700000000.000200"); ok {
		t.Fatal("another thread of the channel has a run")
	}
	if _, ok, _ := e.SlackThreadRun(ctx, "C0OTHER", ts); ok {
		t.Fatal("the same ts in another channel has a run")
	}
	wantCode(t, e.RecordSlackThread(ctx, "#general", ts, ids[0], "ops"), fault.RequestInvalid)
	wantCode(t, e.RecordSlackThread(ctx, ch, "yesterday", ids[0], "ops"), fault.RequestInvalid)
	wantCode(t, e.RecordSlackThread(ctx, ch, ts, "", "ops"), fault.RequestInvalid)
	_, _, err = e.SlackThreadRun(ctx, ch, "")
	wantCode(t, err, fault.RequestInvalid)
}

// TestSlackRouteGuard: a put guarded by a key's fleets takes an unrouted
// channel or one routed to those fleets, never one routed elsewhere.
func TestSlackRouteGuard(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	for _, f := range []string{"a1", "a2", "b"} {
		e.fleet(t, f)
	}
	if _, err := e.PutSlackRoute(ctx, "CTEAMB", "b"); err != nil {
		t.Fatal(err)
	}
	_, err := e.PutSlackRoute(ctx, "CTEAMB", "a1", "a1", "a2")
	wantCode(t, err, fault.ScopeMissing)
	if got, _, _ := e.SlackRoute(ctx, "CTEAMB"); got.Fleet != "b" {
		t.Fatalf("a refused put changed the route to %q", got.Fleet)
	}
	if _, err := e.PutSlackRoute(ctx, "CTEAMA", "a1", "a1", "a2"); err != nil {
		t.Fatalf("an unrouted channel: %v", err)
	}
	if _, err := e.PutSlackRoute(ctx, "CTEAMA", "a2", "a1", "a2"); err != nil {
		t.Fatalf("a channel of the key's fleets: %v", err)
	}
	// An unguarded put (a deployment-wide key) takes any channel.
	if _, err := e.PutSlackRoute(ctx, "CTEAMA", "b"); err != nil {
		t.Fatal(err)
	}
}
