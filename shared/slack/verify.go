package slack

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"
)

// The headers of a request Slack signs.
const (
	TimestampHeader = "X-Slack-Request-Timestamp"
	SignatureHeader = "X-Slack-Signature"
	// RetryNumHeader is set on Slack's retries of an event delivery (1, 2,
	// 3); RetryReasonHeader says why (http_timeout, …).
	RetryNumHeader    = "X-Slack-Retry-Num"
	RetryReasonHeader = "X-Slack-Retry-Reason"
)

// Tolerance is how far a request's timestamp may be from the receiver's
// clock, either way.
const Tolerance = 5 * time.Minute

// maxTimestampDigits admits every Unix time until the year 33658 and keeps
// the arithmetic far from overflow.
const maxTimestampDigits = 12

// The errors of Verify.
var (
	ErrNoSecret  = errors.New("no Slack signing secret is configured")
	ErrMissing   = errors.New("the request lacks the " + TimestampHeader + " or " + SignatureHeader + " header")
	ErrMalformed = errors.New("the " + TimestampHeader + " or " + SignatureHeader + " header is malformed: want Unix seconds and v0=<64 hex digits>, each once")
	ErrStale     = fmt.Errorf("the request's timestamp is more than %s from now", Tolerance)
	ErrSignature = errors.New("the request's signature does not match the app's signing secret")
)

// Sign returns the values of TimestampHeader and SignatureHeader that Slack
// would send for body at ts: for tests and local tools.
func Sign(signingSecret string, ts time.Time, body []byte) (timestamp, signature string) {
	timestamp = strconv.FormatInt(ts.Unix(), 10)
	return timestamp, "v0=" + hex.EncodeToString(mac(signingSecret, timestamp, body))
}

func mac(secret, timestamp string, body []byte) []byte {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte("v0:"))
	m.Write([]byte(timestamp))
	m.Write([]byte{':'})
	m.Write(body)
	return m.Sum(nil)
}

// Verify checks that header signs body with signingSecret as Slack signs
// its requests, and that the timestamp is within Tolerance of now. It
// returns nil, or an error wrapping ErrNoSecret, ErrMissing, ErrMalformed,
// ErrStale or ErrSignature.
//
// Each header must appear once: a request repeating either is malformed,
// so that a proxy appending a header cannot make the receiver read a value
// other than the one signed. The timestamp is decimal Unix seconds and is
// checked before the signature; the signature is compared in constant time.
// Verify does not deduplicate: the same signed request passes again within
// the window, so the caller dedupes what it does (the event_id).
func Verify(signingSecret string, header http.Header, body []byte, now time.Time) error {
	if signingSecret == "" {
		return fmt.Errorf("verify Slack request: %w", ErrNoSecret)
	}
	tsVals, sigVals := header.Values(TimestampHeader), header.Values(SignatureHeader)
	if len(tsVals) == 0 || len(sigVals) == 0 || tsVals[0] == "" || sigVals[0] == "" {
		return fmt.Errorf("verify Slack request: %w", ErrMissing)
	}
	if len(tsVals) > 1 || len(sigVals) > 1 {
		return fmt.Errorf("verify Slack request: repeated header: %w", ErrMalformed)
	}
	timestamp := tsVals[0]
	ts, ok := parseTimestamp(timestamp)
	if !ok {
		return fmt.Errorf("verify Slack request: timestamp: %w", ErrMalformed)
	}
	sig, ok := parseSignature(sigVals[0])
	if !ok {
		return fmt.Errorf("verify Slack request: signature: %w", ErrMalformed)
	}
	if d := now.Unix() - ts; d > int64(Tolerance/time.Second) || d < -int64(Tolerance/time.Second) {
		return fmt.Errorf("verify Slack request: %w", ErrStale)
	}
	if !hmac.Equal(sig, mac(signingSecret, timestamp, body)) {
		return fmt.Errorf("verify Slack request: %w", ErrSignature)
	}
	return nil
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

// parseSignature reads "v0=<64 hex digits>".
func parseSignature(s string) ([]byte, bool) {
	if len(s) != 3+2*sha256.Size || s[:3] != "v0=" {
		return nil, false
	}
	b, err := hex.DecodeString(s[3:])
	return b, err == nil
}
