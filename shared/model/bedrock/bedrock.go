package bedrock

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime"

	"github.com/agentsfleet/agentsfleet/shared/model"
)

// Provider is the name this package gives model.Error.Provider.
const Provider = "bedrock"

// DefaultMaxTokens caps an answer's output tokens when Request.MaxTokens is
// 0.
const DefaultMaxTokens = 4096

// Model is a model.Model over Bedrock's ConverseStream API. It is safe for
// concurrent use.
type Model struct {
	client *bedrockruntime.Client
}

var _ model.Model = (*Model)(nil)

// Option configures New.
type Option func(*bedrockruntime.Options)

// WithBaseEndpoint sends every request to url (for example
// "http://127.0.0.1:4566" or a VPC endpoint) instead of the regional
// endpoint. It wins over AWS_ENDPOINT_URL_BEDROCK_RUNTIME.
func WithBaseEndpoint(url string) Option {
	return func(o *bedrockruntime.Options) { o.BaseEndpoint = aws.String(url) }
}

// New returns a Model calling Bedrock with cfg's region, credentials, HTTP
// client and configured endpoint. The SDK's retries are turned off whatever
// cfg says: the caller retries the errors marked Retryable (model.WithRetry).
func New(cfg aws.Config, opts ...Option) *Model {
	client := bedrockruntime.NewFromConfig(cfg, func(o *bedrockruntime.Options) {
		for _, opt := range opts {
			opt(o)
		}
		// After the options, so none of them can turn retries back on. A
		// RetryMaxAttempts from cfg (AWS_MAX_ATTEMPTS) would wrap the
		// Retryer again once this function returns; zero leaves it alone.
		o.Retryer = aws.NopRetryer{}
		o.RetryMaxAttempts = 0
		if o.HTTPClient != nil {
			o.HTTPClient = bodyGuard{o.HTTPClient}
		}
	})
	return &Model{client: client}
}

// Converse sends req as one ConverseStream call and assembles the streamed
// answer; text deltas go to req.OnText on this goroutine as they arrive.
// Failures are *model.Error, except a done ctx, whose error comes back
// wrapped.
func (m *Model) Converse(ctx context.Context, req model.Request) (model.Response, error) {
	in, err := converseInput(req)
	if err != nil {
		return model.Response{}, err
	}
	out, err := m.client.ConverseStream(ctx, in)
	if err != nil {
		return model.Response{}, callError(ctx, req.Model, err)
	}
	stream := out.GetStream()
	defer stream.Close()

	var a assembler
	for {
		select {
		case <-ctx.Done():
			return model.Response{}, fmt.Errorf("bedrock converse %s: %w", req.Model, ctx.Err())
		case ev, ok := <-stream.Events():
			if !ok {
				if err := stream.Err(); err != nil {
					return model.Response{}, streamError(ctx, req.Model, err)
				}
				return a.response()
			}
			if err := a.add(ev, req.OnText); err != nil {
				return model.Response{}, err
			}
		}
	}
}
