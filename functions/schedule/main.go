// Command schedule is the schedule λ, the target of EventBridge Scheduler:
// each of agentsfleet's schedules invokes it with an eventbridge.Payload,
// {"fleet": "…", "schedule_id": "…", "scheduled_time": "…"} (Scheduler
// fills the time in), and it checks the fleet and the schedule and starts a
// run with source schedule through the runner (package schedule/keeper,
// Keeper.Handle, the handler the local stack registers too). The sweep
// schedule's payload, {"kind": "sweep"}, is a sweep instead (Keeper.Sweep).
// Scheduler delivers at least once; a repeated delivery of a firing starts
// no second run.
//
// Settings (environment; shared/deploy/schedulefn.Settings lists them):
//
//	AGENTSFLEET_TABLE                 the DynamoDB table
//	AGENTSFLEET_FUNCTION_RUNNER       the runner function's name or ARN, started on each run
//	AGENTSFLEET_FUNCTION_WEBTOOLS     the webtools function's name or ARN (optional: firing
//	                                  saves no message, so nothing is scrubbed here)
//	AGENTSFLEET_SWEEP_GRACE_SECONDS   how long a run or child agent may go without a holder
//	                                  before the sweep re-invokes it (optional; default 120)
//	AGENTSFLEET_SCHEDULE_GROUP        the deployment's EventBridge Scheduler schedule group
//	AGENTSFLEET_SCHEDULE_TARGET_ARN   this function's ARN, which the schedules invoke
//	AGENTSFLEET_SCHEDULE_ROLE_ARN     the role Scheduler assumes to invoke it
//
// The last three are the ones the API's Keeper registers schedules with:
// a firing may re-register its schedule (disabling one its spend cap
// paused) or delete it.
package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/config"

	"github.com/agentsfleet/agentsfleet/shared/deploy"
	"github.com/agentsfleet/agentsfleet/shared/deploy/schedulefn"
	"github.com/agentsfleet/agentsfleet/shared/invoke"
)

func main() {
	ctx, log := context.Background(), slog.New(slog.NewJSONHandler(os.Stderr, nil))
	awsCfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		log.Error("schedule: cannot start", "error", fmt.Errorf("load the AWS configuration: %w", err))
		os.Exit(1)
	}
	k, err := schedulefn.New(ctx, deploy.Env{Getenv: os.Getenv, AWS: awsCfg, Log: log})
	if err != nil {
		log.Error("schedule: cannot start", "error", err)
		os.Exit(1)
	}
	lambda.Start(invoke.Handler(k.Handle))
}
