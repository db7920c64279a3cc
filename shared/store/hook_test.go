package store_test

import (
	"strings"
	"testing"

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
