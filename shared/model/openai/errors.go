package openai

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"syscall"
	"time"

	sdk "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/packages/ssestream"

	"github.com/agentsfleet/agentsfleet/shared/model"
)

// maxMessage caps how much of an error body becomes Error.Message.
const maxMessage = 2000

// failure maps a failed call to a *model.Error. resp is the HTTP response
// the SDK saw, if it got one; its body has been buffered by the SDK when
// the status was an error.
func failure(ctx context.Context, resp *http.Response, err error) error {
	if ctxErr := ctx.Err(); ctxErr != nil {
		e := &model.Error{Provider: provider, Err: ctxErr}
		if cause := context.Cause(ctx); cause != ctxErr {
			e.Message = cause.Error()
		}
		return e
	}

	var apiErr *sdk.Error
	if errors.As(err, &apiErr) && apiErr.Response != nil {
		resp = apiErr.Response
	}
	if resp != nil && resp.StatusCode >= 400 {
		// The SDK's error text is only "OpenAI API error: 429 Too Many
		// Requests", and for a body like {"error": "text"} it returns a
		// JSON decoding error with no status at all; the response, kept
		// through option.WithResponseInto, says what went wrong.
		status := resp.StatusCode
		msg, code := bodyMessage(resp)
		if msg == "" && apiErr != nil {
			msg = apiErr.Message
		}
		if msg == "" {
			msg = http.StatusText(status)
		}
		return &model.Error{
			Provider: provider,
			Status:   status,
			Message:  msg,
			// OpenAI answers a spent quota with 429 too; no wait fixes it.
			Retryable:  retryableStatus(status) && !strings.Contains(code, "insufficient_quota"),
			RetryAfter: model.RetryAfter(resp.Header, time.Now()),
			Err:        err,
		}
	}

	var streamErr *ssestream.StreamError
	if errors.As(err, &streamErr) {
		// An error event in the middle of a 200 stream, such as OpenAI's
		// server_error or OpenRouter's provider errors, whose code is an
		// HTTP status although the response's was 200.
		msg, code, status := errorObject(streamErr.Event.Data)
		if msg == "" {
			msg = streamErr.Message
		}
		return &model.Error{
			Provider:  provider,
			Message:   msg,
			Retryable: retryableStatus(status) || retryableCode(code),
			Err:       err,
		}
	}

	return &model.Error{Provider: provider, Retryable: transient(err), Err: err}
}

func retryableStatus(status int) bool {
	return status == http.StatusRequestTimeout || status == http.StatusTooManyRequests || status >= 500
}

// retryableCode reports whether an error's type or code names overload,
// throttling or a server fault.
func retryableCode(code string) bool {
	code = strings.ToLower(code)
	for _, s := range []string{"server_error", "overloaded", "rate_limit", "throttl", "timeout", "unavailable"} {
		if strings.Contains(code, s) {
			return true
		}
	}
	return false
}

// transient reports whether a transport failure may pass: a reset or
// refused connection, one cut mid-answer, or a timeout that was not the
// caller's deadline.
func transient(err error) bool {
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return true
	}
	var dns *net.DNSError
	if errors.As(err, &dns) {
		return dns.IsTemporary || dns.IsTimeout
	}
	for _, target := range []error{
		syscall.ECONNRESET, syscall.ECONNREFUSED, syscall.ECONNABORTED, syscall.EPIPE,
		io.ErrUnexpectedEOF, io.EOF,
	} {
		if errors.Is(err, target) {
			return true
		}
	}
	return false
}

// bodyMessage reads the provider's message from an error body, in the
// shapes OpenAI-compatible servers use: {"error": {"message", "type",
// "code"}}, {"error": "text"}, {"message", "type", "code"} (older vLLM),
// {"detail": "text"}, or plain text. code is the error's type and code.
func bodyMessage(resp *http.Response) (msg, code string) {
	if resp.Body == nil {
		return "", ""
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil || len(b) == 0 {
		return "", ""
	}
	if msg, code, _ := errorObject(b); msg != "" {
		return msg, code
	}
	var detail struct {
		Detail json.RawMessage `json:"detail"`
	}
	if json.Unmarshal(b, &detail) == nil && len(detail.Detail) > 0 {
		var s string
		if json.Unmarshal(detail.Detail, &s) == nil {
			return clip(s), ""
		}
		return clip(string(detail.Detail)), ""
	}
	return clip(strings.TrimSpace(string(b))), ""
}

// errorObject reads {"error": {...}}, {"error": "text"} or a bare
// {"message": ...} object: its message, its type and code joined, and the
// code as an HTTP status when it is one (OpenRouter's are).
func errorObject(b []byte) (msg, code string, status int) {
	type object struct {
		Message string          `json:"message"`
		Type    string          `json:"type"`
		Code    json.RawMessage `json:"code"`
	}
	var wrapper struct {
		Error json.RawMessage `json:"error"`
	}
	var o object
	if json.Unmarshal(b, &wrapper) != nil {
		return "", "", 0
	}
	switch {
	case len(wrapper.Error) > 0 && wrapper.Error[0] == '"':
		var s string
		_ = json.Unmarshal(wrapper.Error, &s)
		return clip(s), "", 0
	case len(wrapper.Error) > 0 && wrapper.Error[0] == '{':
		if json.Unmarshal(wrapper.Error, &o) != nil {
			return "", "", 0
		}
	default:
		if json.Unmarshal(b, &o) != nil {
			return "", "", 0
		}
	}
	c := strings.Trim(string(o.Code), `"`)
	if n, err := strconv.Atoi(c); err == nil && n >= 400 && n <= 599 {
		status = n
	}
	if c == "null" {
		c = ""
	}
	return clip(o.Message), strings.TrimSpace(o.Type + " " + c), status
}

func clip(s string) string {
	if len(s) > maxMessage {
		return s[:maxMessage] + "…"
	}
	return s
}
