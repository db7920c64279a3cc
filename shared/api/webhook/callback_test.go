package webhook_test

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/agentsfleet/agentsfleet/shared/api/webhook"
	"github.com/agentsfleet/agentsfleet/shared/fault"
)

func TestCallbackKeyMatchesTheDesign(t *testing.T) {
	t.Parallel()
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte("agentsfleet callback key v1"))
	key := hex.EncodeToString(m.Sum(nil))
	if got := webhook.CallbackKey(secret); got != key {
		t.Fatalf("CallbackKey = %q, want %q", got, key)
	}
	ts, sig := webhook.SignCallback(secret, now, body)
	if want := "v1=" + hexMAC(key, ts, body); ts != "1767225600" || sig != want {
		t.Fatalf("SignCallback = %q %q, want 1767225600 %q", ts, sig, want)
	}
	h := http.Header{}
	h.Set(webhook.SignatureHeader, "v1=left over")
	webhook.SetCallbackHeaders(h, secret, now, body)
	if h.Get(webhook.SignatureHeader) != "" || h.Get(webhook.CallbackSignatureHeader) != sig || h.Get(webhook.TimestampHeader) != ts {
		t.Fatalf("SetCallbackHeaders = %v, want only the timestamp and the callback signature", h)
	}
	got, err := webhook.VerifyCallback(secret, h, body, now)
	if err != nil || got != hexMAC(key, ts, body) {
		t.Fatalf("VerifyCallback = %q, %v", got, err)
	}
}

// TestCallbacksAndWebhooksNeverCross tries every way a signed delivery of
// one kind could be passed off as the other: as it is, with its signature
// moved to the other's header, beside the other's header, and a callback
// checked with its key where the secret goes (which fails closed).
func TestCallbacksAndWebhooksNeverCross(t *testing.T) {
	t.Parallel()
	cb := http.Header{}
	webhook.SetCallbackHeaders(cb, secret, now, body)
	wh := signed(secret, now, body)
	moved := func(h http.Header, from, to string) http.Header {
		out := http.Header{}
		out.Set(webhook.TimestampHeader, h.Get(webhook.TimestampHeader))
		out.Set(to, h.Get(from))
		return out
	}
	both := wh.Clone()
	both.Set(webhook.CallbackSignatureHeader, wh.Get(webhook.SignatureHeader))
	// A callback received and replayed as a webhook.
	for _, tt := range []struct {
		name string
		h    http.Header
		key  string
		want error
	}{
		{"a callback as it came", cb, secret, webhook.ErrMissing},
		{"a callback's signature in the webhook header", moved(cb, webhook.CallbackSignatureHeader, webhook.SignatureHeader), secret, webhook.ErrSignature},
	} {
		if _, err := webhook.Verify(tt.key, tt.h, body, now); !errors.Is(err, tt.want) || !errors.Is(err, fault.HookUnauthorized) {
			t.Errorf("webhook.Verify(%s) = %v, want %v", tt.name, err, tt.want)
		}
	}
	// A webhook received and passed off as a callback.
	for _, tt := range []struct {
		name string
		h    http.Header
		key  string
		want error
	}{
		{"a webhook as it came", wh, secret, webhook.ErrCallbackMissing},
		{"a webhook's signature in the callback header", moved(wh, webhook.SignatureHeader, webhook.CallbackSignatureHeader), secret, webhook.ErrCallbackSignature},
		{"a webhook's signature beside its own", both, secret, webhook.ErrCallbackSignature},
		{"a callback checked with the key where the secret goes", cb, webhook.CallbackKey(secret), webhook.ErrCallbackSignature},
	} {
		if _, err := webhook.VerifyCallback(tt.key, tt.h, body, now); !errors.Is(err, tt.want) || !errors.Is(err, fault.HookUnauthorized) {
			t.Errorf("webhook.VerifyCallback(%s) = %v, want %v", tt.name, err, tt.want)
		}
	}
}

func TestCallbackWindowAndShape(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name string
		at   time.Time
		edit func(http.Header)
		want error
	}{
		{"stale", now.Add(-6 * time.Minute), nil, webhook.ErrStale},
		{"from the future", now.Add(6 * time.Minute), nil, webhook.ErrStale},
		{"repeated signature", now, func(h http.Header) { h.Add(webhook.CallbackSignatureHeader, h.Get(webhook.CallbackSignatureHeader)) }, webhook.ErrCallbackMalformed},
		{"not hex", now, func(h http.Header) { h.Set(webhook.CallbackSignatureHeader, "v1=xyz") }, webhook.ErrCallbackMalformed},
		{"no timestamp", now, func(h http.Header) { h.Del(webhook.TimestampHeader) }, webhook.ErrCallbackMissing},
	} {
		h := http.Header{}
		webhook.SetCallbackHeaders(h, secret, tt.at, body)
		if tt.edit != nil {
			tt.edit(h)
		}
		if _, err := webhook.VerifyCallback(secret, h, body, now); !errors.Is(err, tt.want) {
			t.Errorf("%s: VerifyCallback = %v, want %v", tt.name, err, tt.want)
		}
	}
}
