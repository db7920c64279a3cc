package client

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/agentsfleet/agentsfleet/shared/sandbox/wire"
)

// The kinds of failure, matched with errors.Is against a *Error.
var (
	// ErrUnauthorized: sandboxd refused the token (401).
	ErrUnauthorized = errors.New("sandboxd refused the token")
	// ErrUnknownTool: sandboxd has no tool of that name (404), or no tool
	// can have it (not sent).
	ErrUnknownTool = errors.New("unknown sandbox tool")
	// ErrTooLarge: the arguments are larger than wire.MaxBodyBytes (413).
	ErrTooLarge = errors.New("the arguments are too large for sandboxd")
	// ErrKeyReused: the Idempotency-Key was used before for a different
	// call (422).
	ErrKeyReused = errors.New("the idempotency key was used for a different call")
	// ErrBadRequest: the arguments are not a JSON object or the key is
	// malformed (400, or refused before sending).
	ErrBadRequest = errors.New("sandboxd refused the request")
	// ErrToolFailed: the tool failed inside sandboxd, a broken environment
	// rather than a mistake of the model (500); sandboxd's log says why.
	ErrToolFailed = errors.New("the tool failed inside sandboxd")
	// ErrUnavailable: the sandbox did not answer (connection refused or
	// reset, DNS, TLS, the call timeout) or its answer is not sandboxd's
	// (another server, a proxy's error page, a broken or oversized body).
	ErrUnavailable = errors.New("the sandbox is unavailable")
)

// statusKinds are the statuses sandboxd answers with, besides 200.
var statusKinds = map[int]error{
	http.StatusBadRequest:            ErrBadRequest,
	http.StatusUnauthorized:          ErrUnauthorized,
	http.StatusNotFound:              ErrUnknownTool,
	http.StatusRequestEntityTooLarge: ErrTooLarge,
	http.StatusUnprocessableEntity:   ErrKeyReused,
	http.StatusInternalServerError:   ErrToolFailed,
}

// Error is every error of Call and Health. It matches (errors.Is) one of
// the sentinels above, or, when the caller's context ended first, that
// context's error (context.Canceled, context.DeadlineExceeded or its
// cause). Its text names the sandbox, the operation and what went wrong,
// for a person reading a run's error:
//
//	sandbox at https://10.0.1.5:8443 did not answer within 2m10s: call bash
//	sandbox at https://10.0.1.5:8443 answered 404 Not Found: call nope: unknown tool "nope"
//
// It never holds the token.
type Error struct {
	URL     string // the sandbox, scheme://host[:port]
	Op      string // "call" or "health check"
	Tool    string // the tool called; empty for a health check
	Status  int    // the HTTP status of the answer; 0 when there was none
	Message string // sandboxd's words for an error status, or what was wrong
	Err     error  // the cause underneath (a network or context error), if any

	kind    error  // the sentinel, nil when the caller's context ended
	problem string // "did not answer", "answered 401 Unauthorized", …
}

func (e *Error) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "sandbox at %s %s: %s", e.URL, e.problem, e.Op)
	if e.Tool != "" {
		b.WriteString(" " + e.Tool)
	}
	if e.Message != "" {
		b.WriteString(": " + e.Message)
	}
	if e.Err != nil {
		b.WriteString(": " + e.Err.Error())
	}
	return b.String()
}

// Unwrap gives the sentinel and the cause, for errors.Is and errors.As.
func (e *Error) Unwrap() []error {
	var errs []error
	for _, err := range []error{e.kind, e.Err} {
		if err != nil {
			errs = append(errs, err)
		}
	}
	return errs
}

// op builds the errors of one operation.
type op struct {
	c    *Client
	name string // "call", "health check"
	tool string
}

func (o op) err(kind error, problem string, status int, msg string, cause error) *Error {
	return &Error{URL: o.c.base, Op: o.name, Tool: o.tool, Status: status,
		Message: scrub(msg, o.c.token), Err: cause, kind: kind, problem: problem}
}

// notSent: the caller's request was refused before anything was sent.
func (o op) notSent(kind error, msg string) *Error {
	return o.err(kind, "was not called", 0, msg, nil)
}

// refused: sandboxd answered with an error status and its words.
func (o op) refused(kind error, status int, msg string) *Error {
	return o.err(kind, "answered "+statusText(status), status, limit(msg), nil)
}

// foreign: something answered, but not as sandboxd does.
func (o op) foreign(status int, contentType, why string) *Error {
	msg := statusText(status)
	if contentType != "" && contentType != wire.ContentType {
		msg += " (" + limit(contentType) + ")"
	}
	if why != "" {
		msg += ", " + why
	}
	return o.err(ErrUnavailable, "gave an answer that is not sandboxd's", status, msg, nil)
}

// noAnswer: the request or the answer's body failed with err. ctx is the
// operation's context, whose timeout (cause timeoutCause) is timeout.
func (o op) noAnswer(ctx context.Context, status int, err error, timeout time.Duration, timeoutCause error) *Error {
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err // its text repeats the method and the URL
	}
	cause := context.Cause(ctx)
	switch {
	case cause == timeoutCause:
		return o.err(ErrUnavailable, "did not answer within "+timeout.String(), status, "", nil)
	case cause != nil:
		return o.err(nil, "was not waited for", status, "", cause)
	case err == errTooLong:
		return o.foreign(status, "", err.Error())
	case status != 0:
		return o.err(ErrUnavailable, "broke off its answer", status, statusText(status), err)
	}
	return o.err(ErrUnavailable, "did not answer", 0, "", err)
}

func statusText(status int) string {
	return fmt.Sprintf("%d %s", status, http.StatusText(status))
}

// limit keeps the start of a long message from the other side.
func limit(msg string) string {
	const max = 500
	msg = strings.ToValidUTF8(msg, "�")
	if len(msg) > max {
		msg = strings.ToValidUTF8(msg[:max], "") + "…"
	}
	return msg
}

// scrub removes the token from a text that might echo it.
func scrub(s, token string) string {
	if token == "" {
		return s
	}
	return strings.ReplaceAll(s, token, "[token]")
}
