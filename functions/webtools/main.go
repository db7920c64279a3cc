// Command webtools is the webtools λ: it runs agentsfleet's web tools
// (webfetch, websearch, web_fetch, http_request, pushover) under the egress
// policy and the credential firewall of package web. It is the only
// function that reads fleet secrets (AWS Secrets Manager).
//
// In Lambda (AWS_LAMBDA_RUNTIME_API is set) it serves invocations whose
// payload is a wire.Request and whose response is a tool.Result,
// {"output": "…", "is_error": false}: web.Service.Invoke, the handler the
// local stack registers too.
//
// Anywhere else it is a command line that runs one tool with the same
// production policy and prints exactly what the model would see:
//
//	webtools call [--hosts h1,h2,...] [--secrets-file FILE] TOOL 'JSON'
//
// Exit status: 0 for a normal result, 3 for an error result, 2 for bad
// usage, 1 when the environment is broken (for example an unreadable
// secret). --hosts is the fleet's network host list; --secrets-file holds
// NAME=value lines or a JSON object, and each NAME becomes a fleet secret.
// The deployment settings come from the environment as in Lambda.
//
// Settings (environment; shared/deploy/webtoolsfn.Settings lists them;
// shared/web reads them):
//
//	AGENTSFLEET_TABLE                   the DynamoDB table: what each call may use, read by its run id
//	AGENTSFLEET_SEARCH_BACKEND          brave, searxng, or unset: no websearch
//	AGENTSFLEET_SEARCH_URL              the SearXNG instance, or another Brave endpoint
//	AGENTSFLEET_SEARCH_API_KEY_SECRET   the Secrets Manager secret holding the Brave key …
//	AGENTSFLEET_SEARCH_API_KEY          … or, locally, the key itself
//	AGENTSFLEET_TEST_ALLOW_ADDR         test-only, never set by the stack: a loopback address
//	                                    the web tools may reach (shared/web/egress)
package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/config"

	"github.com/agentsfleet/agentsfleet/shared/deploy"
	"github.com/agentsfleet/agentsfleet/shared/deploy/webtoolsfn"
	"github.com/agentsfleet/agentsfleet/shared/invoke"
	"github.com/agentsfleet/agentsfleet/shared/setting"
)

func main() {
	if os.Getenv(setting.LambdaRuntimeAPI) == "" { // the command line (call.go)
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		code := run(ctx, os.Args[1:], os.Stdout, os.Stderr, os.Getenv)
		stop()
		os.Exit(code)
	}
	ctx, log := context.Background(), slog.New(slog.NewJSONHandler(os.Stderr, nil))
	awsCfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		log.Error("webtools: cannot start", "error", fmt.Errorf("load the AWS configuration: %w", err))
		os.Exit(1)
	}
	svc, err := webtoolsfn.New(ctx, deploy.Env{Getenv: os.Getenv, AWS: awsCfg, Log: log})
	if err != nil {
		log.Error("webtools: cannot start", "error", err)
		os.Exit(1)
	}
	lambda.Start(invoke.Handler(svc.Invoke))
}
