package bedrock

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime/types"
	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"github.com/agentsfleet/agentsfleet/shared/model"
)

// retryableCodes are the Bedrock exceptions a later attempt may get past,
// whether they come as the HTTP response or as an exception event in the
// stream. Anything else Bedrock names (ValidationException,
// AccessDeniedException, ResourceNotFoundException,
// ServiceQuotaExceededException, …) is the request's or the account's
// problem and is not retried, unless its HTTP status says otherwise.
var retryableCodes = map[string]bool{
	"ThrottlingException":         true, // 429
	"ServiceUnavailableException": true, // 503
	"InternalServerException":     true, // 500
	"ModelNotReadyException":      true, // 429: the model is being loaded
	"ModelTimeoutException":       true, // 408
	"ModelStreamErrorException":   true, // 424, in the stream: "retry your request"
}

// callError maps a failed ConverseStream call, before any event arrived.
func callError(ctx context.Context, modelID string, err error) error {
	if ctx.Err() != nil {
		return fmt.Errorf("bedrock converse %s: %w", modelID, ctx.Err())
	}
	me := &model.Error{Provider: Provider, Err: err}
	var re *smithyhttp.ResponseError
	if errors.As(err, &re) && re.Response != nil {
		me.Status = re.HTTPStatusCode()
		me.RetryAfter = model.RetryAfter(re.Response.Header, time.Now())
	}
	var api smithy.APIError
	switch {
	case errors.As(err, &api) && api.ErrorCode() != "UnknownError":
		me.Message = apiMessage(api)
		me.Retryable = retryableCodes[api.ErrorCode()] || modelErrorRetryable(err)
	case me.Status != 0:
		// An error body the SDK could not read as Bedrock's (a proxy's
		// HTML page, an empty body): the status says what it can.
		me.Message = statusMessage(me.Status, err)
	default:
		// No response: the request never got through (connection refused
		// or reset, a timeout, DNS), which the SDK's own classifier judges.
		me.Retryable = retry.RetryableConnectionError{}.IsErrorRetryable(err) == aws.TrueTernary
	}
	if retryableStatus(me.Status) {
		me.Retryable = true
	}
	return me
}

// streamError maps a failure while reading the stream: an exception event
// (throttlingException, internalServerException,
// serviceUnavailableException, modelStreamErrorException,
// validationException) or a broken connection. The HTTP status was 200,
// so Status stays 0.
func streamError(ctx context.Context, modelID string, err error) error {
	if ctx.Err() != nil {
		return fmt.Errorf("bedrock converse %s: %w", modelID, ctx.Err())
	}
	me := &model.Error{Provider: Provider, Err: err}
	var api smithy.APIError
	var de *smithy.DeserializationError
	switch {
	case errors.As(err, &api):
		me.Message = apiMessage(api)
		me.Retryable = retryableCodes[api.ErrorCode()] || modelErrorRetryable(err)
	case errors.As(err, &de):
		// An event the SDK could not read would read the same way again.
		me.Message = "reading the answer stream: " + err.Error()
	default:
		// The connection broke or a frame was corrupt mid-answer.
		me.Message = "reading the answer stream: " + err.Error()
		me.Retryable = true
	}
	return me
}

// apiMessage is the exception's own message, or its code when it has none.
func apiMessage(api smithy.APIError) string {
	if msg := api.ErrorMessage(); msg != "" {
		return msg
	}
	return api.ErrorCode()
}

// statusMessage describes an error response with no Bedrock exception in
// it: the status text, and the start of the body when the SDK kept it.
func statusMessage(status int, err error) string {
	msg := http.StatusText(status)
	if msg == "" {
		msg = "HTTP " + strconv.Itoa(status)
	}
	var de *smithy.DeserializationError
	if errors.As(err, &de) {
		if body := strings.TrimSpace(string(de.Snapshot)); body != "" {
			msg += fmt.Sprintf(": %.200s", body)
		}
	}
	return msg
}

// modelErrorRetryable reports whether err is a ModelErrorException (424:
// the model itself failed) whose original status was a rate limit or a
// server error.
func modelErrorRetryable(err error) bool {
	var me *types.ModelErrorException
	if !errors.As(err, &me) || me.OriginalStatusCode == nil {
		return false
	}
	return retryableStatus(int(*me.OriginalStatusCode))
}

// retryableStatus: 408 timeout, 429 rate limit, 5xx (529 overloaded among
// them).
func retryableStatus(status int) bool {
	return status == http.StatusRequestTimeout || status == http.StatusTooManyRequests || status >= 500
}
