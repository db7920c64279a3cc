package openai

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	sdk "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/agentsfleet/agentsfleet/shared/model"
	"github.com/agentsfleet/agentsfleet/shared/setting"
)

const provider = "openai"

// DefaultBaseURL is OpenAI's own API, used when Config.BaseURL is empty.
const DefaultBaseURL = "https://api.openai.com/v1/"

// DefaultMaxTokens caps an answer when Request.MaxTokens is 0.
const DefaultMaxTokens = 4096

// Config says which server to talk to and how.
type Config struct {
	// BaseURL is the API root that /chat/completions is resolved against,
	// such as http://localhost:8000/v1; empty means DefaultBaseURL.
	BaseURL string
	// APIKey is sent as a bearer token; empty sends no Authorization
	// header, which is what local servers without keys expect.
	APIKey string
	// HTTPClient makes the calls; nil means http.DefaultClient. Its
	// Timeout, if any, caps a whole streamed answer.
	HTTPClient *http.Client
}

// The environment variables of ConfigFromEnv.
const (
	EnvBaseURL = "OPENAI_BASE_URL"
	EnvAPIKey  = "OPENAI_API_KEY"
)

// ConfigFromEnv reads OPENAI_BASE_URL (default DefaultBaseURL) and
// OPENAI_API_KEY through getenv (os.Getenv in a main).
func ConfigFromEnv(getenv func(string) string) Config {
	c := Config{
		BaseURL: strings.TrimSpace(getenv(EnvBaseURL)),
		APIKey:  strings.TrimSpace(getenv(EnvAPIKey)),
	}
	if c.BaseURL == "" {
		c.BaseURL = DefaultBaseURL
	}
	return c
}

// Settings are the variables ConfigFromEnv reads.
func Settings() []setting.Var { return []setting.Var{{Name: EnvBaseURL}, {Name: EnvAPIKey}} }

// Model is a model.Model over a Chat Completions server. It is safe for
// concurrent use.
type Model struct {
	chat sdk.ChatCompletionService
	// completionTokens says the server is OpenAI's own, which wants
	// max_completion_tokens (its reasoning models refuse max_tokens); other
	// servers get max_tokens, which all of them understand and several
	// (Ollama, older llama.cpp) still need.
	completionTokens bool
}

var _ model.Model = (*Model)(nil)

// New returns a Model for the server c names. It fails only when
// c.BaseURL is not an absolute http or https URL; it does not contact the
// server.
func New(c Config) (*Model, error) {
	base := c.BaseURL
	if base == "" {
		base = DefaultBaseURL
	}
	u, err := url.Parse(base)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("openai model: base URL %q is not an absolute http(s) URL", base)
	}
	opts := []option.RequestOption{
		option.WithBaseURL(base),
		option.WithMaxRetries(0),
	}
	if c.APIKey != "" {
		opts = append(opts, option.WithAPIKey(c.APIKey))
	}
	if c.HTTPClient != nil {
		opts = append(opts, option.WithHTTPClient(c.HTTPClient))
	}
	// The service, not sdk.NewClient: NewClient layers every OPENAI_*
	// variable of the process environment under these options.
	return &Model{
		chat:             sdk.NewChatCompletionService(opts...),
		completionTokens: strings.EqualFold(u.Hostname(), "api.openai.com"),
	}, nil
}

// Converse streams one answer to req. Text deltas go to req.OnText as they
// arrive. Errors are *model.Error; a cancelled or expired ctx comes back as
// one that wraps ctx.Err() and is not retryable.
func (m *Model) Converse(ctx context.Context, req model.Request) (model.Response, error) {
	params, err := m.params(req)
	if err != nil {
		return model.Response{}, &model.Error{Provider: provider, Message: err.Error(), Err: err}
	}
	var httpResp *http.Response
	stream := m.chat.NewStreaming(ctx, params, option.WithResponseInto(&httpResp))
	defer stream.Close()

	var acc accumulator
	for stream.Next() {
		acc.add(stream.Current(), req.OnText)
	}
	if err := stream.Err(); err != nil {
		return model.Response{}, failure(ctx, httpResp, err)
	}
	if err := ctx.Err(); err != nil {
		return model.Response{}, failure(ctx, httpResp, err)
	}
	resp, err := acc.response()
	if err != nil {
		// A stream cut short may do better next time; a server that
		// answered with something other than a stream will not.
		ct := ""
		if httpResp != nil {
			ct = httpResp.Header.Get("Content-Type")
		}
		return model.Response{}, &model.Error{
			Provider:  provider,
			Message:   fmt.Sprintf("%v (content-type %q)", err, ct),
			Retryable: strings.HasPrefix(ct, "text/event-stream"),
			Err:       err,
		}
	}
	return resp, nil
}
