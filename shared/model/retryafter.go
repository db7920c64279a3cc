package model

import (
	"net/http"
	"strconv"
	"strings"
	"time"
)

// RetryAfter is the wait a provider's response asks for: retry-after-ms
// (milliseconds, as OpenAI and Anthropic send it), else Retry-After in
// seconds or as an HTTP date; 0 when neither says. Providers put it in
// Error.RetryAfter.
func RetryAfter(h http.Header, now time.Time) time.Duration {
	if v := strings.TrimSpace(h.Get("Retry-After-Ms")); v != "" {
		if ms, err := strconv.ParseFloat(v, 64); err == nil && ms > 0 {
			return time.Duration(ms * float64(time.Millisecond))
		}
	}
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0
	}
	if s, err := strconv.ParseFloat(v, 64); err == nil {
		if s > 0 {
			return time.Duration(s * float64(time.Second))
		}
		return 0
	}
	if t, err := http.ParseTime(v); err == nil && t.After(now) {
		return t.Sub(now)
	}
	return 0
}
