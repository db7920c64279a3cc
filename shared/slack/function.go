package slack

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"

	"github.com/aws/aws-lambda-go/events"
	goslack "github.com/slack-go/slack"

	"github.com/agentsfleet/agentsfleet/shared/invoke"
	"github.com/agentsfleet/agentsfleet/shared/lazy"
	"github.com/agentsfleet/agentsfleet/shared/secret"
	"github.com/agentsfleet/agentsfleet/shared/setting"
	"github.com/agentsfleet/agentsfleet/shared/slack/post"
	"github.com/agentsfleet/agentsfleet/shared/slack/thread"
	"github.com/agentsfleet/agentsfleet/shared/store"
)

// The settings FromEnv reads. Each secret is given by the Secrets Manager
// secret that holds it (…_ARN, a deployment's way) or, on one machine, as
// it is; the ARN, when set, wins.
const (
	// EnvSigningSecretARN is the secret holding the app's signing secret.
	EnvSigningSecretARN = EnvSigningSecret + "_ARN"
	// EnvSigningSecret is the app's signing secret itself.
	EnvSigningSecret = "AGENTSFLEET_SLACK_SIGNING_SECRET"
	// EnvBotTokenARN is the secret holding the bot token (xoxb-…).
	EnvBotTokenARN = EnvBotToken + "_ARN"
	// EnvBotToken is the bot token itself.
	EnvBotToken = "AGENTSFLEET_SLACK_BOT_TOKEN"
	// EnvDefaultFleet is the fleet of channels without a route (optional).
	EnvDefaultFleet = "AGENTSFLEET_SLACK_DEFAULT_FLEET"
	// EnvAPIURL is another Slack Web API, such as a fake in tests
	// (optional; it ends in /api/ as https://slack.com/api/ does).
	EnvAPIURL = "AGENTSFLEET_SLACK_API_URL"
)

// Settings are the variables FromEnv reads: each secret by its ARN or as
// it is, the default fleet and the Web API's URL.
func Settings() []setting.Var {
	return []setting.Var{
		{Name: EnvSigningSecretARN, Required: true, Or: EnvSigningSecret}, {Name: EnvSigningSecret},
		{Name: EnvBotTokenARN, Required: true, Or: EnvBotToken}, {Name: EnvBotToken},
		{Name: EnvDefaultFleet}, {Name: EnvAPIURL},
	}
}

// Function is the slack λ's handler, in Lambda and in the local stack
// alike: Slack's requests (API Gateway's, or HTTP's) through a Handler,
// and the runner's thread.Requests through a post.Poster, each made on the
// first request that needs it, since each reads a secret. Safe for
// concurrent use.
type Function struct {
	door *lazy.Value[*Handler]
	// threads posts what a run shows in its thread.
	threads *lazy.Value[*post.Poster]
	log     *slog.Logger
}

// FromEnv is the Function of the settings, over st, starting runs through
// inv, its secrets read from secrets (Secrets Manager in a deployment) on
// the first request that needs them and kept: it makes no call itself.
// ok is false, with no error, when none of the secrets' four settings is
// set (a local stack without Slack); one secret given without the other
// is an error naming what is missing.
func FromEnv(getenv func(string) string, secrets secret.Source, st *store.Store, inv invoke.Invoker, log *slog.Logger) (f *Function, ok bool, err error) {
	set := func(name string) bool { return strings.TrimSpace(getenv(name)) != "" }
	if !set(EnvSigningSecretARN) && !set(EnvSigningSecret) && !set(EnvBotTokenARN) && !set(EnvBotToken) {
		return nil, false, nil
	}
	for _, name := range []string{EnvSigningSecret, EnvBotToken} {
		if !set(name+"_ARN") && !set(name) {
			return nil, false, fmt.Errorf("set %s_ARN to the Secrets Manager secret that holds it (or, locally, %s to the value)", name, name)
		}
	}
	if st == nil || inv == nil {
		return nil, false, errors.New("slack: want a store and an invoker")
	}
	if log == nil {
		log = slog.Default()
	}
	defaultFleet := strings.TrimSpace(getenv(EnvDefaultFleet))
	var opts []goslack.Option
	if u := strings.TrimSpace(getenv(EnvAPIURL)); u != "" {
		if !strings.HasSuffix(u, "/") {
			u += "/"
		}
		opts = append(opts, goslack.OptionAPIURL(u))
	}
	api := lazy.New(func(ctx context.Context) (*goslack.Client, error) {
		token, err := secretSetting(ctx, getenv, secrets, EnvBotToken)
		if err != nil {
			return nil, err
		}
		return goslack.New(token, opts...), nil
	})
	door := lazy.New(func(ctx context.Context) (*Handler, error) {
		signing, err := secretSetting(ctx, getenv, secrets, EnvSigningSecret)
		if err != nil {
			return nil, err
		}
		client, err := api.Get(ctx)
		if err != nil {
			return nil, err
		}
		return NewHandler(Config{Store: st, Invoker: inv, SigningSecret: signing,
			DefaultFleet: defaultFleet, Log: log, Post: NewWebPoster(client)})
	})
	threads := lazy.New(func(ctx context.Context) (*post.Poster, error) {
		client, err := api.Get(ctx)
		if err != nil {
			return nil, err
		}
		return post.New(post.Config{Slack: client, Records: st, Log: log})
	})
	return &Function{door: door, threads: threads, log: log}, true, nil
}

// secretSetting reads NAME_ARN from Secrets Manager, else NAME as it is.
// Errors name the setting or the secret, never a value.
func secretSetting(ctx context.Context, getenv func(string) string, secrets secret.Source, name string) (string, error) {
	if arn := strings.TrimSpace(getenv(name + "_ARN")); arn != "" {
		v, err := secrets.SecretValue(ctx, arn)
		if err != nil {
			return "", fmt.Errorf("%s_ARN: %w", name, err)
		}
		if v = strings.TrimSpace(v); v == "" {
			return "", fmt.Errorf("%s_ARN: the secret %s is empty", name, arn)
		}
		return v, nil
	}
	return strings.TrimSpace(getenv(name)), nil
}

// Invoke serves one invocation, the slack λ's handler: an API Gateway
// HTTP API request (a payload with a requestContext, format 2.0) through
// the Handler, answered with API Gateway's response; anything else as the
// runner's thread.Request, answered with a thread.Response. A payload that
// is neither, or a secret that cannot be read, is an error.
func (f *Function) Invoke(ctx context.Context, payload []byte) ([]byte, error) {
	var probe struct {
		RequestContext *json.RawMessage `json:"requestContext"`
	}
	if err := json.Unmarshal(payload, &probe); err != nil {
		return nil, fmt.Errorf("the payload is not JSON: %w", err)
	}
	if probe.RequestContext != nil {
		var req events.APIGatewayV2HTTPRequest
		if err := json.Unmarshal(payload, &req); err != nil {
			return nil, fmt.Errorf("the payload is not an API Gateway request: %w", err)
		}
		door, err := f.door.Get(ctx)
		if err != nil {
			return nil, err
		}
		resp, err := door.HandleGateway(ctx, req)
		if err != nil {
			return nil, err
		}
		return marshal(resp)
	}
	var req thread.Request
	if err := json.Unmarshal(payload, &req); err != nil || req.Op == "" || req.Channel == "" || req.ThreadTS == "" {
		return nil, errors.New("the payload is neither an API Gateway request nor a thread.Request with op, channel and thread_ts")
	}
	threads, err := f.threads.Get(ctx)
	if err != nil {
		return nil, err
	}
	return marshal(threads.Post(ctx, req))
}

// marshal is v as JSON as aws-lambda-go writes a handler's answer: HTML
// characters as they are.
func marshal(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

// ServeHTTP serves Slack's requests through the same Handler as Invoke
// (`agentsfleet dev`). A Handler that cannot be made, its secret unread,
// is answered 500, the reason only in the log.
func (f *Function) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	door, err := f.door.Get(r.Context())
	if err != nil {
		f.log.Error("slack: cannot serve", "path", r.URL.Path, "error", err)
		writeError(w, http.StatusInternalServerError, "internal_error", "the Slack endpoints cannot be served: their settings cannot be read; the log says why")
		return
	}
	door.ServeHTTP(w, r)
}
