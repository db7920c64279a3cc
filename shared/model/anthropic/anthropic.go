package anthropic

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"

	"github.com/agentsfleet/agentsfleet/shared/model"
	"github.com/agentsfleet/agentsfleet/shared/setting"
)

// provider is the name in every *model.Error this package returns.
const provider = "anthropic"

// DefaultMaxTokens caps the answer when Request.MaxTokens is 0. The
// Messages API requires max_tokens on every request.
const DefaultMaxTokens = 4096

// The environment variables ConfigFromEnv reads: the Anthropic SDK's own.
const (
	EnvBaseURL = "ANTHROPIC_BASE_URL"
	EnvAPIKey  = "ANTHROPIC_API_KEY"
)

// Config says where the Model sends its requests and with which key.
type Config struct {
	// BaseURL is the API's root, without /v1 (for example
	// http://127.0.0.1:8080 for a local fake); empty means
	// https://api.anthropic.com.
	BaseURL string
	// APIKey is the Anthropic API key; it is required.
	APIKey string
	// HTTPClient sends the requests; nil means http.DefaultClient. Its
	// Timeout, if any, bounds the whole streamed answer.
	HTTPClient *http.Client
}

// ConfigFromEnv reads ANTHROPIC_BASE_URL and ANTHROPIC_API_KEY through
// getenv (os.Getenv, or a map's lookup in tests).
func ConfigFromEnv(getenv func(string) string) Config {
	return Config{BaseURL: getenv(EnvBaseURL), APIKey: getenv(EnvAPIKey)}
}

// Settings are the variables ConfigFromEnv reads.
func Settings() []setting.Var { return []setting.Var{{Name: EnvBaseURL}, {Name: EnvAPIKey}} }

// Model answers conversations through Anthropic's Messages API. It is safe
// for concurrent use.
type Model struct {
	client sdk.Client
}

var _ model.Model = (*Model)(nil)

// New returns a Model for cfg. It refuses an empty APIKey and a BaseURL
// that is not an absolute http or https URL. The SDK is built without its
// environment defaults, so only cfg decides where requests go, and without
// retries, which are model.WithRetry's job.
func New(cfg Config) (*Model, error) {
	if cfg.APIKey == "" {
		return nil, errors.New("anthropic model: no API key: set " + EnvAPIKey)
	}
	opts := []option.RequestOption{
		option.WithoutEnvironmentDefaults(),
		option.WithAPIKey(cfg.APIKey),
		option.WithMaxRetries(0),
	}
	if cfg.BaseURL != "" {
		u, err := url.Parse(cfg.BaseURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, fmt.Errorf("anthropic model: %s %q is not an http(s) URL", EnvBaseURL, cfg.BaseURL)
		}
		opts = append(opts, option.WithBaseURL(cfg.BaseURL))
	}
	if cfg.HTTPClient != nil {
		opts = append(opts, option.WithHTTPClient(cfg.HTTPClient))
	}
	return &Model{client: sdk.NewClient(opts...)}, nil
}

// Converse sends req as one streamed Messages request and returns the
// assistant's answer. Text deltas reach req.OnText as they arrive, on the
// calling goroutine. A failure is a *model.Error, except when ctx is done:
// then it is ctx's error, wrapped.
func (m *Model) Converse(ctx context.Context, req model.Request) (model.Response, error) {
	params, err := newParams(req)
	if err != nil {
		return model.Response{}, &model.Error{Provider: provider, Message: err.Error(), Err: err}
	}
	var httpResp *http.Response
	stream := m.client.Messages.NewStreaming(ctx, params, option.WithResponseInto(&httpResp))
	defer stream.Close()

	var acc answer
	for stream.Next() {
		if err := acc.add(stream.Current(), req.OnText); err != nil {
			if ctx.Err() != nil {
				return model.Response{}, cancelled(ctx)
			}
			return model.Response{}, &model.Error{Provider: provider, Message: err.Error(), Err: err}
		}
	}
	if err := stream.Err(); err != nil {
		// The request reached the stream when the SDK saw a success status:
		// a failure after that is the stream breaking off.
		streaming := httpResp != nil && httpResp.StatusCode < 300
		return model.Response{}, classify(ctx, err, streaming)
	}
	if ctx.Err() != nil {
		return model.Response{}, cancelled(ctx)
	}
	return acc.response()
}
