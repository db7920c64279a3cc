// Command schedule is the schedule λ, the target of EventBridge Scheduler:
// each of agentsfleet's schedules invokes it with an eventbridge.Payload,
// {"fleet": "…", "schedule_id": "…", "scheduled_time": "…"} (Scheduler
// fills the time in), and it checks the fleet and the schedule and starts a
// run with source schedule through the runner (package schedule/keeper,
// Keeper.Fire). Scheduler delivers at least once; a repeated delivery of a
// firing starts no second run.
//
// Settings (environment):
//
//	AGENTSFLEET_TABLE                 the DynamoDB table
//	AGENTSFLEET_FUNCTION_RUNNER       the runner function's name or ARN, started on each run
//	AGENTSFLEET_FUNCTION_WEBTOOLS     the webtools function's name or ARN (optional: firing
//	                                  saves no message, so nothing is scrubbed here)
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
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"strings"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	awslambda "github.com/aws/aws-sdk-go-v2/service/lambda"
	"github.com/aws/aws-sdk-go-v2/service/scheduler"

	"github.com/agentsfleet/agentsfleet/shared/invoke"
	"github.com/agentsfleet/agentsfleet/shared/schedule/eventbridge"
	"github.com/agentsfleet/agentsfleet/shared/schedule/keeper"
	"github.com/agentsfleet/agentsfleet/shared/store"
)

// The settings.
const (
	envTable    = "AGENTSFLEET_TABLE"
	envRunner   = "AGENTSFLEET_FUNCTION_RUNNER"
	envWebtools = "AGENTSFLEET_FUNCTION_WEBTOOLS"
	envGroup    = "AGENTSFLEET_SCHEDULE_GROUP"
	envTarget   = "AGENTSFLEET_SCHEDULE_TARGET_ARN"
	envRole     = "AGENTSFLEET_SCHEDULE_ROLE_ARN"
)

func main() {
	log := slog.New(slog.NewJSONHandler(os.Stderr, nil))
	ctx := context.Background()
	awsCfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		log.Error("schedule: cannot start", "error", fmt.Errorf("load the AWS configuration: %w", err))
		os.Exit(1)
	}
	cfg, err := settings(awsCfg, os.Getenv, log)
	if err != nil {
		log.Error("schedule: cannot start", "error", err)
		os.Exit(1)
	}
	k, err := keeper.New(cfg)
	if err != nil {
		log.Error("schedule: cannot start", "error", err)
		os.Exit(1)
	}
	// json.RawMessage: the payload as it came (a []byte would be read as
	// base64).
	lambda.Start(func(ctx context.Context, payload json.RawMessage) error { return k.Fire(ctx, payload) })
}

// settings wires store, Scheduler and the Lambda invoker from the
// environment into a keeper.Config.
func settings(awsCfg aws.Config, getenv func(string) string, log *slog.Logger) (keeper.Config, error) {
	get := func(k string) string { return strings.TrimSpace(getenv(k)) }
	var missing []string
	for _, k := range []string{envTable, envRunner, envGroup, envTarget, envRole} {
		if get(k) == "" {
			missing = append(missing, k)
		}
	}
	if len(missing) > 0 {
		return keeper.Config{}, fmt.Errorf("%s not set: the schedule function needs the table, the runner function, and the schedule group, target and role", strings.Join(missing, ", "))
	}
	sched, err := eventbridge.New(scheduler.NewFromConfig(awsCfg), eventbridge.Config{
		Group: get(envGroup), TargetARN: get(envTarget), RoleARN: get(envRole)})
	if err != nil {
		return keeper.Config{}, err
	}
	functions := map[string]string{invoke.Runner: get(envRunner)}
	if w := get(envWebtools); w != "" {
		functions[invoke.Webtools] = w
	}
	st := store.New(dynamodb.NewFromConfig(awsCfg), get(envTable))
	inv := invoke.NewLambda(awslambda.NewFromConfig(awsCfg), functions)
	cfg := keeper.Config{Store: st, Scheduler: sched, Invoker: inv, Log: log}
	if functions[invoke.Webtools] != "" {
		cfg.Scrub = keeper.WebtoolsScrub(st, inv)
	}
	return cfg, nil
}
