// Command api is the api λ: agentsfleet's HTTP API (shared/api) behind API
// Gateway's HTTP API (payload format 2.0): fleets, runs and their events,
// schedules, API keys and the fleets' webhooks. It records runs and starts
// the runner on them (InvocationType Event); it never reads a fleet's
// secrets (the webtools λ scrubs schedule messages).
//
// Settings (environment):
//
//	AGENTSFLEET_TABLE                 the DynamoDB table
//	AGENTSFLEET_FUNCTION_RUNNER       the runner function's name or ARN
//	AGENTSFLEET_FUNCTION_WEBTOOLS     the webtools function's name or ARN
//	AGENTSFLEET_SCHEDULE_GROUP        the EventBridge Scheduler group of the fleets' schedules
//	AGENTSFLEET_SCHEDULE_TARGET_ARN   the schedule function's ARN, which the schedules invoke
//	AGENTSFLEET_SCHEDULE_ROLE_ARN     the role Scheduler invokes it with
//
// Without the three schedule settings the schedule routes answer that
// schedules are not configured.
package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	awslambda "github.com/aws/aws-sdk-go-v2/service/lambda"

	"github.com/agentsfleet/agentsfleet/shared/api"
	"github.com/agentsfleet/agentsfleet/shared/api/callback"
	"github.com/agentsfleet/agentsfleet/shared/invoke"
	"github.com/agentsfleet/agentsfleet/shared/schedule/keeper"
	"github.com/agentsfleet/agentsfleet/shared/store"
)

func main() {
	log := slog.New(slog.NewJSONHandler(os.Stderr, nil))
	a, err := build(context.Background(), os.Getenv, log)
	if err != nil {
		log.Error("api: cannot start", "error", err)
		os.Exit(1)
	}
	lambda.Start(a.HandleGateway)
}

// build wires DynamoDB, Lambda and Scheduler into the API.
func build(ctx context.Context, getenv func(string) string, log *slog.Logger) (*api.API, error) {
	table := getenv("AGENTSFLEET_TABLE")
	runnerFn, webtools := getenv("AGENTSFLEET_FUNCTION_RUNNER"), getenv("AGENTSFLEET_FUNCTION_WEBTOOLS")
	if table == "" || runnerFn == "" || webtools == "" {
		return nil, errors.New("AGENTSFLEET_TABLE, AGENTSFLEET_FUNCTION_RUNNER and AGENTSFLEET_FUNCTION_WEBTOOLS must name the table and the runner and webtools functions")
	}
	awsCfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		return nil, fmt.Errorf("load the AWS configuration: %w", err)
	}
	st := store.New(dynamodb.NewFromConfig(awsCfg), table)
	inv := invoke.NewLambda(awslambda.NewFromConfig(awsCfg), map[string]string{invoke.Runner: runnerFn, invoke.Webtools: webtools})
	cfg := api.Config{Store: st, Invoker: inv, Callbacks: callback.New(callback.Config{Logger: log}), Log: log}
	k, ok, err := keeper.FromEnv(getenv, awsCfg, st, inv, log)
	if err != nil {
		return nil, err
	}
	if ok {
		cfg.Schedules = k
	}
	return api.New(cfg)
}
