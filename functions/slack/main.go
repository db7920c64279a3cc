// Command slack is the slack λ: the Slack app's request URLs behind API
// Gateway's HTTP API (payload format 2.0), POST /slack/events and POST
// /slack/interactivity, and the runner's posts in runs' threads, both
// served by shared/slack's Function (Function.Invoke, the handler the local
// stack registers too). It verifies every request with the app's signing
// secret, starts runs from mentions and thread replies (InvocationType
// Event on the runner, so that Slack is answered well within its 3
// seconds), and stops runs from their Stop button. It is the only function
// that reads the Slack bot token; the runner asks it to post in a run's
// thread by invoking it with a thread.Request (shared/slack/thread).
//
// Settings (environment; shared/deploy/slackfn.Settings lists them):
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
	"fmt"
	"log/slog"
	"os"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/config"

	"github.com/agentsfleet/agentsfleet/shared/deploy"
	"github.com/agentsfleet/agentsfleet/shared/deploy/slackfn"
	"github.com/agentsfleet/agentsfleet/shared/invoke"
)

func main() {
	ctx, log := context.Background(), slog.New(slog.NewJSONHandler(os.Stderr, nil))
	awsCfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		log.Error("slack: cannot start", "error", fmt.Errorf("load the AWS configuration: %w", err))
		os.Exit(1)
	}
	f, err := slackfn.New(ctx, deploy.Env{Getenv: os.Getenv, AWS: awsCfg, Log: log})
	if err != nil {
		log.Error("slack: cannot start", "error", err)
		os.Exit(1)
	}
	lambda.Start(invoke.Handler(f.Invoke))
}
