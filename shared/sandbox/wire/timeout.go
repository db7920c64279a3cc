package wire

import (
	"fmt"
	"math"
	"strconv"
	"time"
)

// A sandboxd is started before it knows whose run it serves (a pooled
// sandbox: every Fargate one, and the local stack's warm one), so the
// fleet's tool timeout (the Definition's tool_timeout_seconds) comes with
// each tool call:
//
//	POST ToolPath(name)    ToolTimeoutHeader: SECONDS (optional)  → as any tool call;
//	                       → 400 a bad ToolTimeoutHeader (ParseToolTimeout)
//
// The value is whole seconds, MinToolTimeout to MaxToolTimeout: 1 to 4
// ASCII digits, given once. Anything else (empty, 0, 3601, -5, +5, 1.5,
// 10s, two values, the header twice) is refused with 400 and an ErrorBody
// that names the header and the rule; the tool does not run.
//
// The call's value wins over sandboxd's own (sandboxd --timeout, or
// DefaultToolTimeout), whether shorter or longer, for that call only;
// without the header the call has sandboxd's own. glob, grep and bash stop
// at it and say so in their result, as at sandboxd's own timeout.
// exec_command and write_stdin answer by then, yield_time_ms
// notwithstanding ("Process running with session ID N"); the session's
// process goes on, as a session's does after any yield. The other tools do
// bounded work and have no use for it.
//
// The tool timeout is part of the call for Idempotency-Key: the same key
// with another tool timeout (or with one where the first call had none) is
// a different call and gets 422, since its result could differ.
const (
	// ToolTimeoutHeader carries the fleet's tool timeout for one call, in
	// whole seconds (ParseToolTimeout).
	ToolTimeoutHeader = "X-Agentsfleet-Tool-Timeout"

	// MinToolTimeout and MaxToolTimeout bound ToolTimeoutHeader: the
	// bounds of the Definition's tool_timeout_seconds
	// (fleet.MinToolTimeoutSeconds, fleet.MaxToolTimeoutSeconds).
	MinToolTimeout = time.Second
	MaxToolTimeout = time.Hour
)

// ToolTimeoutValue is the ToolTimeoutHeader value asking for d: whole
// seconds, rounded up. It refuses a d that is not positive or that is
// above MaxToolTimeout once rounded, as ParseToolTimeout would.
func ToolTimeoutValue(d time.Duration) (string, error) {
	if d <= 0 {
		return "", fmt.Errorf("the tool timeout must be positive, not %v", d)
	}
	secs := math.Ceil(d.Seconds())
	if secs > MaxToolTimeout.Seconds() {
		return "", fmt.Errorf("the tool timeout %v is longer than %v", d, MaxToolTimeout)
	}
	return strconv.Itoa(int(secs)), nil
}

// ParseToolTimeout reads a tool call's ToolTimeoutHeader from its values
// (http.Header.Values): 0 when there are none (the call has sandboxd's own
// timeout), else the one value's seconds, MinToolTimeout to
// MaxToolTimeout. The error is the 400's message, in words for the caller;
// it quotes at most a few bytes of the value.
func ParseToolTimeout(values []string) (time.Duration, error) {
	rule := fmt.Sprintf("whole seconds, %d to %d", int(MinToolTimeout/time.Second), int(MaxToolTimeout/time.Second))
	switch len(values) {
	case 0:
		return 0, nil
	case 1:
	default:
		return 0, fmt.Errorf("the %s header is given %d times: give the tool timeout once, in %s", ToolTimeoutHeader, len(values), rule)
	}
	v := values[0]
	digits := len(v) > 0 && len(v) <= 4
	for i := 0; digits && i < len(v); i++ {
		digits = '0' <= v[i] && v[i] <= '9'
	}
	if !digits {
		shown := strconv.Quote(v)
		if len(v) > 12 {
			shown = strconv.Quote(v[:12]) + "…"
		}
		return 0, fmt.Errorf("the %s header is %s: it must be %s", ToolTimeoutHeader, shown, rule)
	}
	n, _ := strconv.Atoi(v) // 1 to 4 digits: no error
	d := time.Duration(n) * time.Second
	if d < MinToolTimeout || d > MaxToolTimeout {
		return 0, fmt.Errorf("the %s header is %d: it must be %s", ToolTimeoutHeader, n, rule)
	}
	return d, nil
}
