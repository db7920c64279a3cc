package webhook

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"strconv"
	"time"

	"github.com/agentsfleet/agentsfleet/shared/fault"
)

// CallbackSignatureHeader carries a completion callback's signature, in
// place of SignatureHeader: a callback carries no SignatureHeader, so no
// webhook check reads it, and a webhook carries no CallbackSignatureHeader.
const CallbackSignatureHeader = "X-Agentsfleet-Callback-Signature"

// CallbackKeyLabel is the message CallbackKey MACs. It starts with a
// letter, so it is never a webhook's signed message (the timestamp's digits,
// a full stop and the body): no webhook signature is ever a callback key.
const CallbackKeyLabel = "agentsfleet callback key v1"

// The errors of VerifyCallback, beside ErrStale. Each matches
// fault.HookUnauthorized with errors.Is, and none is a webhook's error.
var (
	ErrCallbackMissing   = fault.New(fault.HookUnauthorized, "the callback lacks the %s or %s header", TimestampHeader, CallbackSignatureHeader)
	ErrCallbackMalformed = fault.New(fault.HookUnauthorized, "the %s or %s header is malformed: want Unix seconds and v1=<64 hex digits>", TimestampHeader, CallbackSignatureHeader)
	ErrCallbackSignature = fault.New(fault.HookUnauthorized, "no signature of the callback matches the fleet's callback key")
)

// CallbackKey is the key completion callbacks are signed with, derived from
// the fleet's webhook secret: the lower-case hex of
// HMAC-SHA256(secret, CallbackKeyLabel). A receiver that checks callbacks
// but should not be able to start runs can be given this key alone, and
// check callbacks with any HMAC-SHA256 code (the README shows one): the key
// does not reveal the secret, and nothing signed with it verifies as a
// webhook. Whoever holds the webhook secret can derive it, and so sign
// callbacks too.
func CallbackKey(secret string) string {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte(CallbackKeyLabel))
	return hex.EncodeToString(m.Sum(nil))
}

// callbackKind reads CallbackSignatureHeader and MACs with the callback key
// of the secret it is given. Each function here takes the webhook secret
// and derives the key itself, so that a caller who passes the key by
// mistake fails closed instead of checking callbacks with the wrong key.
var callbackKind = &kind{"callback", CallbackSignatureHeader, ErrCallbackMissing, ErrCallbackMalformed, ErrCallbackSignature,
	func(secret string) []byte { return []byte(CallbackKey(secret)) }}

// SignCallback returns the values of TimestampHeader and
// CallbackSignatureHeader for a callback body sent at ts by the fleet whose
// webhook secret is secret: "v1=" and the hex of
// HMAC-SHA256(CallbackKey(secret), timestamp + "." + body), the key taken
// as its hex text.
func SignCallback(secret string, ts time.Time, body []byte) (timestamp, signature string) {
	timestamp = strconv.FormatInt(ts.Unix(), 10)
	return timestamp, "v1=" + hex.EncodeToString(mac(callbackKind.key(secret), timestamp, body))
}

// SetCallbackHeaders signs body (SignCallback) and sets both headers on h,
// replacing any values they had, and removes any SignatureHeader.
func SetCallbackHeaders(h http.Header, secret string, ts time.Time, body []byte) {
	timestamp, signature := SignCallback(secret, ts, body)
	h.Del(SignatureHeader)
	h.Set(TimestampHeader, timestamp)
	h.Set(CallbackSignatureHeader, signature)
}

// ParseCallback is Parse for a completion callback: it reads
// TimestampHeader and CallbackSignatureHeader. Its errors wrap
// ErrCallbackMissing, ErrCallbackMalformed or ErrStale.
func ParseCallback(header http.Header, now time.Time) (*Delivery, error) {
	return parse(callbackKind, header, now)
}

// VerifyCallback checks that header signs a completion callback's body
// with the callback key of secret (the fleet's webhook secret) within
// Tolerance of now, as Verify does for webhooks, and returns the canonical
// signature. A
// webhook delivery never passes: it lacks CallbackSignatureHeader, and its
// signature, moved there, is made with another key. A callback is retried
// with a fresh timestamp and signature and the same body, so a receiver
// dedupes on the body's run_id. Errors wrap ErrCallbackMissing,
// ErrCallbackMalformed, ErrStale or ErrCallbackSignature.
func VerifyCallback(secret string, header http.Header, body []byte, now time.Time) (string, error) {
	d, err := ParseCallback(header, now)
	if err != nil {
		return "", err
	}
	return d.Verify(secret, body)
}
