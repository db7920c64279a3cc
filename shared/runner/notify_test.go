//go:build linux

package runner_test

import (
	"net/http"
	"net/http/httptest"
	"net/netip"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentsfleet/agentsfleet/shared/callback"
	"github.com/agentsfleet/agentsfleet/shared/runner"
	"github.com/agentsfleet/agentsfleet/shared/store"
	"github.com/agentsfleet/agentsfleet/shared/web/egress"
)

// TestEndToldAgainWhenTheTellerDied: an invocation that dies after the
// run's status moved but before its callback went out (its sender's clock
// panics here, as a process killed mid-delivery would stop) leaves the run
// ended and not notified; the next invocation for the run delivers the
// callback, once, and records it.
func TestEndToldAgainWhenTheTellerDied(t *testing.T) {
	t.Parallel()
	var deliveries atomic.Int32
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		deliveries.Add(1)
		w.WriteHeader(http.StatusNoContent)
	}))
	defer receiver.Close()
	addr := netip.MustParseAddrPort(receiver.Listener.Addr().String())
	dies := callback.New(callback.Config{AllowAddr: addr, Resolver: egress.Hosts{}, Now: func() time.Time { panic("the process dies") }})
	e := newEnv(t, `[[turn]]
text = "done"
`, func(c *runner.Config) { c.Callbacks = dies })
	d := e.fleet(definition("told", "bash"))
	if _, err := e.store.RotateWebhookSecret(ctx, d.Name); err != nil {
		t.Fatal(err)
	}
	r, _, err := e.store.CreateRun(ctx, store.NewRun{Fleet: d.Name, Source: store.SourceAPI, Input: []byte("go"), CallbackURL: receiver.URL + "/done"})
	if err != nil {
		t.Fatal(err)
	}
	func() {
		defer func() {
			if recover() == nil {
				t.Fatal("the dying sender did not stop the invocation")
			}
		}()
		e.runner.Run(ctx, r.ID)
	}()
	run, err := e.store.GetRun(ctx, r.ID)
	if err != nil || run.Status != store.StatusSucceeded || run.Notified || deliveries.Load() != 0 {
		t.Fatalf("after the death: %s, notified %v, %d deliveries, %v; want succeeded, not notified, none", run.Status, run.Notified, deliveries.Load(), err)
	}

	cfg := e.cfg
	cfg.Callbacks = callback.New(callback.Config{AllowAddr: addr, Resolver: egress.Hosts{}})
	next, err := runner.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	for range 2 { // the second finds it told, and tells nothing
		if err := next.Run(ctx, r.ID); err != nil {
			t.Fatal(err)
		}
	}
	run, _ = e.store.GetRun(ctx, r.ID)
	if n := deliveries.Load(); n != 1 || !run.Notified {
		t.Fatalf("%d deliveries, notified %v; want the callback once, recorded", n, run.Notified)
	}
}
