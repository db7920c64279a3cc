package store_test

import (
	"strings"
	"testing"
	"time"

	"github.com/agentsfleet/agentsfleet/shared/fault"
)

func TestWebhookSecret(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.fleet(t, "ops")
	_, err := e.WebhookSecret(ctx, "ops")
	wantCode(t, err, fault.HookNoSecret)
	_, err = e.WebhookSecret(ctx, "ghost")
	wantCode(t, err, fault.HookNoSecret)
	_, err = e.RotateWebhookSecret(ctx, "ghost")
	wantCode(t, err, fault.FleetNotFound)
	if _, err := e.WebhookSecret(ctx, "ghost"); !errorsIs(err, fault.HookNoSecret) {
		t.Fatalf("a failed rotation left a secret behind: %v", err)
	}

	first, err := e.RotateWebhookSecret(ctx, "ops")
	if err != nil {
		t.Fatalf("RotateWebhookSecret: %v", err)
	}
	if !strings.HasPrefix(first, "afw_") || len(first) != 47 {
		t.Fatalf("secret = %q, want afw_ and 43 characters", first)
	}
	if got, err := e.WebhookSecret(ctx, "ops"); err != nil || got != first {
		t.Fatalf("WebhookSecret = %q, %v; want %q", got, err, first)
	}
	second, err := e.RotateWebhookSecret(ctx, "ops")
	if err != nil || second == first {
		t.Fatalf("rotate again = %q, %v; want a new secret", second, err)
	}
	if got, err := e.WebhookSecret(ctx, "ops"); err != nil || got != second {
		t.Fatalf("after rotation WebhookSecret = %q, %v; want %q", got, err, second)
	}
	// The fleet item itself is untouched.
	if f, err := e.GetFleet(ctx, "ops"); err != nil || f.Revision != 1 {
		t.Fatalf("GetFleet = %+v, %v", f, err)
	}
}

func TestRecordDelivery(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	sig := strings.Repeat("ab", 32)
	steps := []struct {
		name    string
		advance time.Duration
		fleet   string
		sig     string
		want    fault.Code
	}{
		{"first", 0, "ops", sig, fault.Code{}},
		{"replay", 0, "ops", sig, fault.HookReplayed},
		{"same signature, other fleet", 0, "dev", sig, fault.Code{}},
		{"other signature", 0, "ops", strings.Repeat("cd", 32), fault.Code{}},
		{"replay just before expiry", 10*time.Minute - time.Second, "ops", sig, fault.HookReplayed},
		{"expired record is free", time.Second, "ops", sig, fault.Code{}},
		{"and now held again", 0, "ops", sig, fault.HookReplayed},
		{"empty signature", 0, "ops", "", fault.RequestInvalid},
		{"signature with a space", 0, "ops", "v1=a b", fault.RequestInvalid},
		{"huge signature", 0, "ops", strings.Repeat("a", 513), fault.RequestInvalid},
		{"bad fleet name", 0, "a#b", sig, fault.RequestInvalid},
	}
	for _, st := range steps { // in order: the clock moves
		e.clock.Advance(st.advance)
		err := e.RecordDelivery(ctx, st.fleet, st.sig, 10*time.Minute)
		if st.want == (fault.Code{}) && err != nil || st.want != (fault.Code{}) && !errorsIs(err, st.want) {
			t.Fatalf("%s: RecordDelivery = %v, want %s", st.name, err, st.want.ID())
		}
	}
}

func TestConcurrentDeliveriesHaveOneWinner(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	const n = 10
	errs := make([]error, n)
	parallel(n, func(i int) { errs[i] = e.RecordDelivery(ctx, "ops", "deadbeef", 0) })
	won := 0
	for _, err := range errs {
		switch {
		case err == nil:
			won++
		case !errorsIs(err, fault.HookReplayed):
			t.Errorf("RecordDelivery = %v, want nil or %s", err, fault.HookReplayed.ID())
		}
	}
	if won != 1 {
		t.Fatalf("%d deliveries recorded, want exactly 1", won)
	}
}
