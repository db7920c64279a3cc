package webhook_test

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentsfleet/agentsfleet/shared/api/webhook"
	"github.com/agentsfleet/agentsfleet/shared/fault"
)

const secret = "afw_Zm9vYmFyYmF6cXV4cXV1eGZvb2JhcmJhenF1eHF1dXg"

var (
	now  = time.Unix(1767225600, 0) // 2026-01-01T00:00:00Z
	body = []byte(`{"event":"deploy","ref":"main"}`)
)

// signed returns the headers of body signed with key at ts.
func signed(key string, ts time.Time, b []byte) http.Header {
	h := http.Header{}
	webhook.SetHeaders(h, key, ts, b)
	return h
}

// hexMAC is the signature computed independently of the package.
func hexMAC(key, ts string, b []byte) string {
	m := hmac.New(sha256.New, []byte(key))
	m.Write([]byte(ts + "."))
	m.Write(b)
	return hex.EncodeToString(m.Sum(nil))
}

func TestSignMatchesTheDesign(t *testing.T) {
	t.Parallel()
	ts, sig := webhook.Sign(secret, now, body)
	if ts != "1767225600" {
		t.Errorf("timestamp = %q, want 1767225600", ts)
	}
	if want := "v1=" + hexMAC(secret, ts, body); sig != want {
		t.Errorf("signature = %q, want %q", sig, want)
	}
	got, err := webhook.Verify(secret, signed(secret, now, body), body, now)
	if err != nil {
		t.Fatalf("Verify(signed) = %v", err)
	}
	if want := hexMAC(secret, ts, body); got != want {
		t.Errorf("canonical signature = %q, want %q", got, want)
	}
}

func TestVerifyRefuses(t *testing.T) {
	t.Parallel()
	ts := strconv.FormatInt(now.Unix(), 10)
	good := "v1=" + hexMAC(secret, ts, body)
	hdr := func(kv ...string) http.Header {
		h := http.Header{}
		for i := 0; i < len(kv); i += 2 {
			h.Add(kv[i], kv[i+1])
		}
		return h
	}
	const T, S = webhook.TimestampHeader, webhook.SignatureHeader
	tests := []struct {
		name   string
		header http.Header
		body   []byte
		want   error
	}{
		{"no headers", hdr(), body, webhook.ErrMissing},
		{"no signature", hdr(T, ts), body, webhook.ErrMissing},
		{"no timestamp", hdr(S, good), body, webhook.ErrMissing},
		{"empty signature", hdr(T, ts, S, ""), body, webhook.ErrMissing},
		{"tampered body", hdr(T, ts, S, good), []byte(`{"event":"deploy","ref":"evil"}`), webhook.ErrSignature},
		{"body with a byte more", hdr(T, ts, S, good), append([]byte(nil), append(body, ' ')...), webhook.ErrSignature},
		{"empty body", hdr(T, ts, S, good), nil, webhook.ErrSignature},
		{"tampered timestamp", hdr(T, strconv.FormatInt(now.Unix()-1, 10), S, good), body, webhook.ErrSignature},
		{"signed with another secret", hdr(T, ts, S, "v1="+hexMAC(secret+"x", ts, body)), body, webhook.ErrSignature},
		{"signed without the full stop", hdr(T, ts, S, "v1="+hexMAC(secret, "", []byte(ts+string(body)))), body, webhook.ErrSignature},
		{"only another scheme", hdr(T, ts, S, "v0="+hexMAC(secret, ts, body)), body, webhook.ErrMalformed},
		{"no scheme", hdr(T, ts, S, hexMAC(secret, ts, body)), body, webhook.ErrMalformed},
		{"short hex", hdr(T, ts, S, good[:len(good)-2]), body, webhook.ErrMalformed},
		{"not hex", hdr(T, ts, S, "v1="+strings.Repeat("zz", 32)), body, webhook.ErrMalformed},
		{"empty item", hdr(T, ts, S, good+",,"), body, webhook.ErrMalformed},
		{"too many values", hdr(T, ts, S, strings.TrimSuffix(strings.Repeat(good+",", 9), ",")), body, webhook.ErrMalformed},
		{"repeated signature header", hdr(T, ts, S, "v1="+strings.Repeat("00", 32), S, good), body, webhook.ErrMalformed},
		{"repeated timestamp header", hdr(T, "1", T, ts, S, good), body, webhook.ErrMalformed},
		{"header injection in timestamp", hdr(T, ts+"\r\n"+S+": "+good, S, good), body, webhook.ErrMalformed},
		{"signed timestamp padded", hdr(T, " "+ts, S, "v1="+hexMAC(secret, " "+ts, body)), body, webhook.ErrMalformed},
		{"leading zero", hdr(T, "0"+ts, S, "v1="+hexMAC(secret, "0"+ts, body)), body, webhook.ErrMalformed},
		{"plus sign", hdr(T, "+"+ts, S, "v1="+hexMAC(secret, "+"+ts, body)), body, webhook.ErrMalformed},
		{"negative", hdr(T, "-"+ts, S, "v1="+hexMAC(secret, "-"+ts, body)), body, webhook.ErrMalformed},
		{"fractional", hdr(T, ts+".5", S, "v1="+hexMAC(secret, ts+".5", body)), body, webhook.ErrMalformed},
		{"huge timestamp", hdr(T, "99999999999999999999", S, "v1="+hexMAC(secret, "99999999999999999999", body)), body, webhook.ErrMalformed},
		{"int64 max", hdr(T, "9223372036854775807", S, "v1="+hexMAC(secret, "9223372036854775807", body)), body, webhook.ErrMalformed},
		{"far future, 12 digits", hdr(T, "999999999999", S, "v1="+hexMAC(secret, "999999999999", body)), body, webhook.ErrStale},
		{"zero", hdr(T, "0", S, "v1="+hexMAC(secret, "0", body)), body, webhook.ErrStale},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			sig, err := webhook.Verify(secret, tt.header, tt.body, now)
			if !errors.Is(err, tt.want) {
				t.Fatalf("Verify = %q, %v; want %v", sig, err, tt.want)
			}
			if !errors.Is(err, fault.HookUnauthorized) || sig != "" {
				t.Fatalf("Verify = %q, %v; want no signature and %s", sig, err, fault.HookUnauthorized.ID())
			}
			for _, other := range []error{webhook.ErrMissing, webhook.ErrMalformed, webhook.ErrStale, webhook.ErrSignature} {
				if other != tt.want && errors.Is(err, other) {
					t.Errorf("Verify = %v, which also matches %v", err, other)
				}
			}
		})
	}
}

func TestReplayWindowEdges(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		skew time.Duration // sent at now + skew
		ok   bool
	}{
		{"now", 0, true},
		{"5 minutes old", -5 * time.Minute, true},
		{"5 minutes and a second old", -5*time.Minute - time.Second, false},
		{"5 minutes ahead", 5 * time.Minute, true},
		{"5 minutes and a second ahead", 5*time.Minute + time.Second, false},
		{"a day old", -24 * time.Hour, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := webhook.Verify(secret, signed(secret, now.Add(tt.skew), body), body, now)
			if tt.ok && err != nil || !tt.ok && !errors.Is(err, webhook.ErrStale) {
				t.Fatalf("Verify = %v, want ok %v (else ErrStale)", err, tt.ok)
			}
		})
	}
	// A stale delivery is stale even with a valid signature for another
	// secret: the window is checked first, and says nothing about the key.
	_, err := webhook.Verify(secret, signed("other", now.Add(-time.Hour), body), body, now)
	if !errors.Is(err, webhook.ErrStale) {
		t.Fatalf("Verify(stale, other secret) = %v, want ErrStale", err)
	}
}

func TestRotationAcceptsAnyV1(t *testing.T) {
	t.Parallel()
	ts := strconv.FormatInt(now.Unix(), 10)
	oldSig, newSig := hexMAC("old-secret", ts, body), hexMAC(secret, ts, body)
	tests := []struct {
		name, header string
	}{
		{"old then new", "v1=" + oldSig + ",v1=" + newSig},
		{"new then old, spaced", "v1=" + newSig + ", v1=" + oldSig},
		{"unknown scheme beside", "v2=abc, v1=" + newSig},
		{"upper-case hex", "v1=" + strings.ToUpper(newSig)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			h := http.Header{}
			h.Set(webhook.TimestampHeader, ts)
			h.Set(webhook.SignatureHeader, tt.header)
			got, err := webhook.Verify(secret, h, body, now)
			if err != nil {
				t.Fatalf("Verify = %v", err)
			}
			// However the header is written, the replay key is one value.
			if got != newSig {
				t.Fatalf("canonical signature = %q, want %q", got, newSig)
			}
		})
	}
}
