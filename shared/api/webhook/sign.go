package webhook

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/agentsfleet/agentsfleet/shared/fault"
)

// The headers of a signed delivery.
const (
	TimestampHeader = "X-Agentsfleet-Timestamp"
	SignatureHeader = "X-Agentsfleet-Signature"
)

// Tolerance is how far a delivery's timestamp may be from the receiver's
// clock, either way.
const Tolerance = 5 * time.Minute

// MaxSignatures is how many comma-separated values of the signature header
// Verify reads; a header with more is malformed.
const MaxSignatures = 8

// maxTimestampDigits admits every Unix time until the year 33658 and keeps
// the arithmetic below far from overflow.
const maxTimestampDigits = 12

// The errors of Verify. Each matches fault.HookUnauthorized with errors.Is.
var (
	ErrMissing   = fault.New(fault.HookUnauthorized, "the delivery lacks the %s or %s header", TimestampHeader, SignatureHeader)
	ErrMalformed = fault.New(fault.HookUnauthorized, "the %s or %s header is malformed: want Unix seconds and v1=<64 hex digits>", TimestampHeader, SignatureHeader)
	ErrStale     = fault.New(fault.HookUnauthorized, "the delivery's timestamp is more than %s from now", Tolerance)
	ErrSignature = fault.New(fault.HookUnauthorized, "no signature of the delivery matches the fleet's webhook secret")
)

// Sign returns the values of TimestampHeader and SignatureHeader for body
// sent at ts with secret. The signature header holds one v1 value.
func Sign(secret string, ts time.Time, body []byte) (timestamp, signature string) {
	timestamp = strconv.FormatInt(ts.Unix(), 10)
	return timestamp, "v1=" + hex.EncodeToString(mac(secret, timestamp, body))
}

// SetHeaders signs body (Sign) and sets both headers on h, replacing any
// values they had.
func SetHeaders(h http.Header, secret string, ts time.Time, body []byte) {
	timestamp, signature := Sign(secret, ts, body)
	h.Set(TimestampHeader, timestamp)
	h.Set(SignatureHeader, signature)
}

func mac(secret, timestamp string, body []byte) []byte {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte(timestamp))
	m.Write([]byte{'.'})
	m.Write(body)
	return m.Sum(nil)
}

// Verify checks that header signs body with secret and that its timestamp is
// within Tolerance of now. It returns the delivery's canonical signature:
// the lower-case hex of the HMAC, which is the same however the sender
// wrote the header (case, spaces, extra values), and is what the receiver's
// replay guard must record. Errors wrap ErrMissing, ErrMalformed, ErrStale
// or ErrSignature, all matching fault.HookUnauthorized.
//
// Each header must appear once: a delivery repeating either is malformed,
// so a proxy that appends a header cannot make the receiver read a value
// other than the one signed. The timestamp is checked before the
// signature, and the signature is compared in constant time.
func Verify(secret string, header http.Header, body []byte, now time.Time) (string, error) {
	tsVals, sigVals := header.Values(TimestampHeader), header.Values(SignatureHeader)
	if len(tsVals) == 0 || len(sigVals) == 0 || tsVals[0] == "" || sigVals[0] == "" {
		return "", fmt.Errorf("verify webhook: %w", ErrMissing)
	}
	if len(tsVals) > 1 || len(sigVals) > 1 {
		return "", fmt.Errorf("verify webhook: repeated header: %w", ErrMalformed)
	}
	timestamp := tsVals[0]
	ts, ok := parseTimestamp(timestamp)
	if !ok {
		return "", fmt.Errorf("verify webhook: timestamp: %w", ErrMalformed)
	}
	sigs, ok := parseSignatures(sigVals[0])
	if !ok {
		return "", fmt.Errorf("verify webhook: signature: %w", ErrMalformed)
	}
	if d := now.Unix() - ts; d > int64(Tolerance/time.Second) || d < -int64(Tolerance/time.Second) {
		return "", fmt.Errorf("verify webhook: %w", ErrStale)
	}
	want := mac(secret, timestamp, body)
	match := 0
	for _, s := range sigs {
		match |= boolInt(hmac.Equal(s, want)) // no early exit: every value costs the same
	}
	if match == 0 {
		return "", fmt.Errorf("verify webhook: %w", ErrSignature)
	}
	return hex.EncodeToString(want), nil
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// parseTimestamp reads decimal Unix seconds: digits only, no sign, no
// leading zeros, at most maxTimestampDigits.
func parseTimestamp(s string) (int64, bool) {
	if s == "" || len(s) > maxTimestampDigits || (s[0] == '0' && len(s) > 1) {
		return 0, false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, false
		}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	return n, err == nil
}

// parseSignatures reads "v1=<hex>[, v1=<hex>…]": the v1 values, decoded.
// Values of other schemes are skipped; a header without any v1 value, with
// an empty item, with more than MaxSignatures items or with a v1 value that
// is not 64 hex digits is malformed.
func parseSignatures(h string) ([][]byte, bool) {
	items := strings.Split(h, ",")
	if len(items) > MaxSignatures {
		return nil, false
	}
	var out [][]byte
	for _, it := range items {
		it = strings.Trim(it, " \t")
		scheme, val, ok := strings.Cut(it, "=")
		if !ok || scheme == "" || val == "" {
			return nil, false
		}
		if scheme != "v1" {
			continue
		}
		if len(val) != 2*sha256.Size {
			return nil, false
		}
		b, err := hex.DecodeString(val)
		if err != nil {
			return nil, false
		}
		out = append(out, b)
	}
	return out, len(out) > 0
}
