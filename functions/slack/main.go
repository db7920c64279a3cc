// Command slack is the slack λ: the Slack app's request URLs behind API
// Gateway's HTTP API (payload format 2.0), POST /slack/events and POST
// /slack/interactivity, served by shared/slack. It verifies every request
// with the app's signing secret, starts runs from mentions and thread
// replies (InvocationType Event on the runner, so that Slack is answered
// well within its 3 seconds), and stops runs from their Stop button. It is
// the only function that reads the Slack bot token; the runner asks it to
// post in a run's thread by invoking it with a thread.Request
// (shared/slack/thread).
//
// Settings (environment):
//
//	AGENTSFLEET_TABLE                      the DynamoDB table
//	AGENTSFLEET_FUNCTION_RUNNER            the runner function's name or ARN
//	AGENTSFLEET_SLACK_SIGNING_SECRET_ARN   the Secrets Manager secret holding the app's signing secret
//	AGENTSFLEET_SLACK_BOT_TOKEN_ARN        the Secrets Manager secret holding the bot token (xoxb-…)
//	AGENTSFLEET_SLACK_DEFAULT_FLEET        the fleet of channels without a route (optional)
//	AGENTSFLEET_SLACK_API_URL              another Slack Web API, such as a fake in tests (optional;
//	                                       it ends in /api/ as https://slack.com/api/ does)
//
// Locally the two secrets may be given as they are instead, in
// AGENTSFLEET_SLACK_SIGNING_SECRET and AGENTSFLEET_SLACK_BOT_TOKEN; an ARN,
// when set, wins. The settings are checked when the function starts, but
// the secrets are read on the first request that needs them (a thread's
// post needs only the token) and kept for the container's life: a cold
// start makes no AWS call.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	awslambda "github.com/aws/aws-sdk-go-v2/service/lambda"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	goslack "github.com/slack-go/slack"

	"github.com/agentsfleet/agentsfleet/shared/invoke"
	"github.com/agentsfleet/agentsfleet/shared/lazy"
	"github.com/agentsfleet/agentsfleet/shared/secret"
	"github.com/agentsfleet/agentsfleet/shared/slack"
	"github.com/agentsfleet/agentsfleet/shared/slack/post"
	"github.com/agentsfleet/agentsfleet/shared/slack/thread"
	"github.com/agentsfleet/agentsfleet/shared/store"
)

func main() {
	log := slog.New(slog.NewJSONHandler(os.Stderr, nil))
	ctx := context.Background()
	awsCfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		log.Error("slack: cannot start", "error", fmt.Errorf("load the AWS configuration: %w", err))
		os.Exit(1)
	}
	fn, err := build(os.Getenv, awsCfg, nil, log)
	if err != nil {
		log.Error("slack: cannot start", "error", err)
		os.Exit(1)
	}
	lambda.Start(fn.handle)
}

// function is the slack λ's handler: API Gateway's requests and the
// runner's thread.Requests, each served by what it needs, made on first use.
type function struct {
	door *lazy.Value[*slack.Handler]
	// threads posts what a run shows in its thread.
	threads *lazy.Value[*post.Poster]
}

// The two secrets' settings.
const (
	envSigningSecret = "AGENTSFLEET_SLACK_SIGNING_SECRET"
	envBotToken      = "AGENTSFLEET_SLACK_BOT_TOKEN"
)

// build wires the table, the runner and Slack into the function. inv nil
// invokes the runner through Lambda. It checks every setting and makes no
// AWS call.
func build(getenv func(string) string, awsCfg aws.Config, inv invoke.Invoker, log *slog.Logger) (*function, error) {
	table, runnerFn := getenv("AGENTSFLEET_TABLE"), getenv("AGENTSFLEET_FUNCTION_RUNNER")
	if table == "" || (runnerFn == "" && inv == nil) {
		return nil, errors.New("AGENTSFLEET_TABLE and AGENTSFLEET_FUNCTION_RUNNER must name the table and the runner function")
	}
	for _, name := range []string{envSigningSecret, envBotToken} {
		if strings.TrimSpace(getenv(name+"_ARN")) == "" && strings.TrimSpace(getenv(name)) == "" {
			return nil, fmt.Errorf("set %s_ARN to the Secrets Manager secret that holds it (or, locally, %s to the value)", name, name)
		}
	}
	var opts []goslack.Option
	if u := getenv("AGENTSFLEET_SLACK_API_URL"); u != "" {
		if !strings.HasSuffix(u, "/") {
			u += "/"
		}
		opts = append(opts, goslack.OptionAPIURL(u))
	}
	sm := secret.SecretsManager{Client: secretsmanager.NewFromConfig(awsCfg)}
	api := lazy.New(func(ctx context.Context) (*goslack.Client, error) {
		token, err := secretSetting(ctx, getenv, sm, envBotToken)
		if err != nil {
			return nil, err
		}
		return goslack.New(token, opts...), nil
	})
	if inv == nil {
		inv = invoke.NewLambda(awslambda.NewFromConfig(awsCfg), map[string]string{invoke.Runner: runnerFn})
	}
	st := store.New(dynamodb.NewFromConfig(awsCfg), table)
	door := lazy.New(func(ctx context.Context) (*slack.Handler, error) {
		signing, err := secretSetting(ctx, getenv, sm, envSigningSecret)
		if err != nil {
			return nil, err
		}
		client, err := api.Get(ctx)
		if err != nil {
			return nil, err
		}
		return slack.NewHandler(slack.Config{Store: st, Invoker: inv,
			SigningSecret: signing, DefaultFleet: getenv("AGENTSFLEET_SLACK_DEFAULT_FLEET"), Log: log, Post: slack.NewWebPoster(client)})
	})
	threads := lazy.New(func(ctx context.Context) (*post.Poster, error) {
		client, err := api.Get(ctx)
		if err != nil {
			return nil, err
		}
		return post.New(post.Config{Slack: client, Records: st, Log: log})
	})
	return &function{door: door, threads: threads}, nil
}

// secretSetting reads NAME_ARN from Secrets Manager, else NAME as it is.
// Errors name the setting or the secret, never a value.
func secretSetting(ctx context.Context, getenv func(string) string, sm secret.SecretsManager, name string) (string, error) {
	if arn := getenv(name + "_ARN"); arn != "" {
		v, err := sm.SecretValue(ctx, arn)
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

// handle serves one invocation: an API Gateway request (it has a
// requestContext) through the door, anything else as the runner's
// thread.Request.
func (f *function) handle(ctx context.Context, payload json.RawMessage) (any, error) {
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
		return door.HandleGateway(ctx, req)
	}
	var req thread.Request
	if err := json.Unmarshal(payload, &req); err != nil || req.Op == "" || req.Channel == "" || req.ThreadTS == "" {
		return nil, errors.New("the payload is neither an API Gateway request nor a thread.Request with op, channel and thread_ts")
	}
	threads, err := f.threads.Get(ctx)
	if err != nil {
		return nil, err
	}
	return threads.Post(ctx, req), nil
}
