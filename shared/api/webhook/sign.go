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
	return timestamp, "v1=" + hex.EncodeToString(mac([]byte(secret), timestamp, body))
}

// SetHeaders signs body (Sign) and sets both headers on h, replacing any
// values they had.
func SetHeaders(h http.Header, secret string, ts time.Time, body []byte) {
	timestamp, signature := Sign(secret, ts, body)
	h.Set(TimestampHeader, timestamp)
	h.Set(SignatureHeader, signature)
}

func mac(key []byte, timestamp string, body []byte) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(timestamp))
	m.Write([]byte{'.'})
	m.Write(body)
	return m.Sum(nil)
}

// Verify checks that header signs body with secret and that its timestamp is
// within Tolerance of now: Parse, then Delivery.Verify. It returns the
// delivery's canonical signature: the lower-case hex of the HMAC, which is
// the same however the sender wrote the header (case, spaces, extra
// values), and is what the receiver's replay guard must record. Errors wrap
// ErrMissing, ErrMalformed, ErrStale or ErrSignature, all matching
// fault.HookUnauthorized.
func Verify(secret string, header http.Header, body []byte, now time.Time) (string, error) {
	d, err := Parse(header, now)
	if err != nil {
		return "", err
	}
	return d.Verify(secret, body)
}

// Delivery is a delivery's headers, read and found within the window: what
// Parse (or ParseCallback) checks without the key.
type Delivery struct {
	timestamp string
	sigs      [][]byte
	kind      *kind
}

// kind is what tells a webhook from a callback: the signature header, the
// errors, and how the HMAC key comes from the fleet's webhook secret.
type kind struct {
	what                      string
	header                    string
	missing, malformed, wrong error
	key                       func(string) []byte
}

// webhookKind MACs with the secret exactly as it was shown.
var webhookKind = &kind{"webhook", SignatureHeader, ErrMissing, ErrMalformed, ErrSignature, func(s string) []byte { return []byte(s) }}

// Parse reads a webhook delivery's headers and checks its timestamp
// against now, needing no secret: a receiver calls it before it looks the
// secret up, so that a delivery that cannot be good whatever the secret
// (unsigned, malformed, stale) costs no read. Its errors wrap ErrMissing,
// ErrMalformed or ErrStale.
//
// Each header must appear once: a delivery repeating either is malformed,
// so a proxy that appends a header cannot make the receiver read a value
// other than the one signed. The timestamp is checked before the
// signature.
func Parse(header http.Header, now time.Time) (*Delivery, error) {
	return parse(webhookKind, header, now)
}

func parse(k *kind, header http.Header, now time.Time) (*Delivery, error) {
	tsVals, sigVals := header.Values(TimestampHeader), header.Values(k.header)
	if len(tsVals) == 0 || len(sigVals) == 0 || tsVals[0] == "" || sigVals[0] == "" {
		return nil, fmt.Errorf("verify %s: %w", k.what, k.missing)
	}
	if len(tsVals) > 1 || len(sigVals) > 1 {
		return nil, fmt.Errorf("verify %s: repeated header: %w", k.what, k.malformed)
	}
	timestamp := tsVals[0]
	ts, ok := parseTimestamp(timestamp)
	if !ok {
		return nil, fmt.Errorf("verify %s: timestamp: %w", k.what, k.malformed)
	}
	sigs, ok := parseSignatures(sigVals[0])
	if !ok {
		return nil, fmt.Errorf("verify %s: signature: %w", k.what, k.malformed)
	}
	if d := now.Unix() - ts; d > int64(Tolerance/time.Second) || d < -int64(Tolerance/time.Second) {
		return nil, fmt.Errorf("verify %s: %w", k.what, ErrStale)
	}
	return &Delivery{timestamp: timestamp, sigs: sigs, kind: k}, nil
}

// Verify checks, in constant time, that one of the delivery's signatures
// signs body for the fleet whose webhook secret is secret (with the secret
// itself for Parse's delivery, with its CallbackKey for ParseCallback's),
// and returns the canonical signature (see the package's Verify). Its error
// wraps ErrSignature or ErrCallbackSignature.
func (d *Delivery) Verify(secret string, body []byte) (string, error) {
	want := mac(d.kind.key(secret), d.timestamp, body)
	match := 0
	for _, s := range d.sigs {
		match |= boolInt(hmac.Equal(s, want)) // no early exit: every value costs the same
	}
	if match == 0 {
		return "", fmt.Errorf("verify %s: %w", d.kind.what, d.kind.wrong)
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
