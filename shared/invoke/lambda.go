package invoke

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	"github.com/aws/aws-sdk-go-v2/service/lambda/types"
)

// LambdaAPI is the part of the Lambda client Lambda uses.
type LambdaAPI interface {
	Invoke(ctx context.Context, in *lambda.InvokeInput, opts ...func(*lambda.Options)) (*lambda.InvokeOutput, error)
}

// Lambda calls functions through AWS Lambda's Invoke API.
type Lambda struct {
	client LambdaAPI
	// names maps a logical name to the function's name or ARN.
	names map[string]string
}

var _ Invoker = (*Lambda)(nil)

// NewLambda returns a Lambda invoker; names maps each logical name
// (Runner, Webtools, Slack) to its function's name or ARN.
func NewLambda(client LambdaAPI, names map[string]string) *Lambda {
	return &Lambda{client: client, names: names}
}

func (l *Lambda) function(name string) (string, error) {
	fn, ok := l.names[name]
	if !ok || fn == "" {
		return "", fmt.Errorf("%w %q: no function name is configured for it", ErrUnknownFunction, name)
	}
	return fn, nil
}

// Call invokes function with InvocationType RequestResponse. A function
// error (the X-Amz-Function-Error header) becomes a *FunctionError carrying
// the function's errorMessage.
func (l *Lambda) Call(ctx context.Context, function string, payload []byte) ([]byte, error) {
	fn, err := l.function(function)
	if err != nil {
		return nil, err
	}
	out, err := l.client.Invoke(ctx, &lambda.InvokeInput{FunctionName: aws.String(fn), Payload: payload, InvocationType: types.InvocationTypeRequestResponse})
	if err != nil {
		return nil, fmt.Errorf("invoke %s: %w", function, err)
	}
	if out.FunctionError != nil {
		var body struct {
			ErrorMessage string `json:"errorMessage"`
			ErrorType    string `json:"errorType"`
		}
		msg := string(out.Payload)
		if json.Unmarshal(out.Payload, &body) == nil && body.ErrorMessage != "" {
			msg = body.ErrorMessage
		}
		return nil, &FunctionError{Function: function, Message: msg}
	}
	return out.Payload, nil
}

// Start invokes function with InvocationType Event: Lambda queues the call
// and may deliver it more than once.
func (l *Lambda) Start(ctx context.Context, function string, payload []byte) error {
	fn, err := l.function(function)
	if err != nil {
		return err
	}
	if _, err := l.client.Invoke(ctx, &lambda.InvokeInput{FunctionName: aws.String(fn), Payload: payload, InvocationType: types.InvocationTypeEvent}); err != nil {
		return fmt.Errorf("start %s: %w", function, err)
	}
	return nil
}
