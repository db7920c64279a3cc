// Command api is the api λ: agentsfleet's HTTP API (shared/api) behind API
// Gateway's HTTP API (payload format 2.0): fleets, runs and their events,
// schedules, API keys and the fleets' webhooks. It records runs and starts
// the runner on them (InvocationType Event); it never reads a fleet's
// secrets (the webtools λ scrubs schedule messages). Its handler is
// API.HandleGateway, API Gateway's adapter (shared/gateway) over the
// http.Handler that `agentsfleet dev` serves.
//
// Settings (environment; shared/deploy/apifn.Settings lists them):
//
//	AGENTSFLEET_TABLE                 the DynamoDB table
//	AGENTSFLEET_FUNCTION_RUNNER       the runner function's name or ARN
//	AGENTSFLEET_FUNCTION_WEBTOOLS     the webtools function's name or ARN
//	AGENTSFLEET_SCHEDULE_GROUP        the EventBridge Scheduler group of the fleets' schedules
//	AGENTSFLEET_SCHEDULE_TARGET_ARN   the schedule function's ARN, which the schedules invoke
//	AGENTSFLEET_SCHEDULE_ROLE_ARN     the role Scheduler invokes it with
//	AGENTSFLEET_SWEEP_GRACE_SECONDS   read with them (the schedule function's sweep grace; optional)
//	AGENTSFLEET_TEST_ALLOW_ADDR       test-only, never set by the stack: a loopback address
//	                                  callbacks may reach (shared/web/egress)
//
// Without the three schedule settings the schedule routes answer that
// schedules are not configured.
package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/config"

	"github.com/agentsfleet/agentsfleet/shared/deploy"
	"github.com/agentsfleet/agentsfleet/shared/deploy/apifn"
)

func main() {
	ctx, log := context.Background(), slog.New(slog.NewJSONHandler(os.Stderr, nil))
	awsCfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		log.Error("api: cannot start", "error", fmt.Errorf("load the AWS configuration: %w", err))
		os.Exit(1)
	}
	a, err := apifn.New(ctx, deploy.Env{Getenv: os.Getenv, AWS: awsCfg, Log: log})
	if err != nil {
		log.Error("api: cannot start", "error", err)
		os.Exit(1)
	}
	lambda.Start(a.HandleGateway)
}
