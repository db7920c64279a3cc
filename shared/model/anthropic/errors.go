package anthropic

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"syscall"
	"time"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/shared"

	"github.com/agentsfleet/agentsfleet/shared/model"
)

// cancelled is the error for a call whose ctx is done: ctx's own error,
// wrapped, which no retry gets past.
func cancelled(ctx context.Context) error {
	return fmt.Errorf("anthropic model: %w", ctx.Err())
}

// classify turns a failed call into a *model.Error, or into ctx's error
// when ctx is done. streaming says whether the failure came after the API
// had accepted the request and begun the stream.
func classify(ctx context.Context, err error, streaming bool) error {
	if ctx.Err() != nil {
		return cancelled(ctx)
	}
	var aerr *sdk.Error
	if errors.As(err, &aerr) {
		return apiError(aerr)
	}
	// A stream that breaks off (a reset, a cut connection, a garbled
	// event) may come whole on the next attempt.
	msg := err.Error()
	if streaming {
		msg = "stream broke off: " + msg
	}
	return &model.Error{Provider: provider, Message: msg, Retryable: streaming || transient(err), Err: err}
}

// apiError is the *model.Error for an error the API returned: as the
// response to the request (an HTTP status of 400 or more), or as an error
// event in the middle of a stream, whose HTTP status was 200 and so is not
// reported.
func apiError(aerr *sdk.Error) *model.Error {
	me := &model.Error{Provider: provider, Message: apiMessage(aerr), Err: aerr}
	if aerr.StatusCode >= 400 {
		me.Status = aerr.StatusCode
	}
	var h http.Header
	if aerr.Response != nil {
		h = aerr.Response.Header
	}
	me.Retryable = retryable(me.Status, aerr, h)
	me.RetryAfter = model.RetryAfter(h, time.Now())
	return me
}

// retryable says whether a later attempt may get past an API error.
func retryable(status int, aerr *sdk.Error, h http.Header) bool {
	switch aerr.ErrorCode() {
	case sdk.ErrorCodeContractSpendLimitReached, sdk.ErrorCodeEnforcedSpendLimitReached:
		// 429s that last until someone raises the limit.
		return false
	}
	// The API says so itself, where it does; the SDK's own retries obey it.
	switch h.Get("X-Should-Retry") {
	case "true":
		return true
	case "false":
		return false
	}
	switch {
	case status == http.StatusRequestTimeout, status == http.StatusTooManyRequests, status >= 500: // 529 is overloaded
		return true
	}
	switch aerr.Type() {
	case shared.ErrorTypeOverloadedError, shared.ErrorTypeRateLimitError, shared.ErrorTypeAPIError, shared.ErrorTypeTimeoutError:
		return true
	}
	return false
}

// apiMessage is the API's own message, after its error type, or what the
// body held when it was not the API's JSON (a proxy's page, say).
func apiMessage(aerr *sdk.Error) string {
	msg := aerr.Message
	if msg == "" {
		msg = strings.TrimSpace(aerr.RawJSON())
		if len(msg) > 500 {
			msg = strings.ToValidUTF8(msg[:500], "") + "…"
		}
	}
	if msg == "" {
		msg = http.StatusText(aerr.StatusCode)
	}
	if t := aerr.Type(); t != "" {
		msg = string(t) + ": " + msg
	}
	return msg
}

// transient says whether an error without a response is one a retry may
// get past: a timeout that is not the caller's, a reset or a connection
// the server closed. A refused connection, an unknown host or a bad
// certificate is a setting to fix, and is not retried.
func transient(err error) bool {
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return true
	}
	var dns *net.DNSError
	if errors.As(err, &dns) && dns.IsTemporary {
		return true
	}
	return errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.ECONNABORTED) ||
		errors.Is(err, syscall.EPIPE) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF)
}
