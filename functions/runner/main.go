// Command runner is the runner λ: the agent loop (shared/runner,
// Runner.Handle, the handler the local stack registers too). Its payload is
// {"run_id": "…"}, sent by the API when a run starts and by the runner
// itself when an invocation nears its deadline, or {"run_id": "…",
// "child_id": "…"} for a child agent's invocation (InvocationType Event),
// or {"improvement_id": "…", "turn": N} for an improvement chat's turn
// (shared/improve/agent), sent by the API and the slack function.
//
// Settings (environment; shared/deploy/runnerfn.Settings lists them):
//
//	AGENTSFLEET_TABLE                 the DynamoDB table
//	AGENTSFLEET_CHECKPOINT_BUCKET     S3 bucket for checkpoints larger than an item and the fleets' folders (optional)
//	AGENTSFLEET_FUNCTION_WEBTOOLS     the webtools function's name or ARN
//	AGENTSFLEET_FUNCTION_SLACK        the slack function's name or ARN, which posts in the threads
//	                                  of runs started from Slack (optional: without it they post nothing)
//	AGENTSFLEET_MODEL_PROVIDER        bedrock (default), anthropic, openai or scripted; see shared/model/provider,
//	                                  which reads AGENTSFLEET_MODEL_KEYS_ARN, AGENTSFLEET_MODEL_SCRIPT,
//	                                  ANTHROPIC_BASE_URL, ANTHROPIC_API_KEY, OPENAI_BASE_URL and OPENAI_API_KEY too
//	AGENTSFLEET_MODEL                 the model id for Definitions that name none
//	AGENTSFLEET_RUN_LEASE_SECONDS     how long an invocation holds a run between renewals (optional;
//	                                  default 120): a dead one's run is taken over once it runs out
//	AGENTSFLEET_RUN_TOOL_CONCURRENCY  how many tool calls of one model answer run at once (optional;
//	                                  1 to 64, default 8), the others queued in order
//	AGENTSFLEET_SWEEP_GRACE_SECONDS   read with the schedule settings below (the schedule
//	                                  function's sweep grace; optional)
//	AWS_LAMBDA_FUNCTION_NAME          set by Lambda: the runner invokes itself by it
//	AGENTSFLEET_SCHEDULE_GROUP        the schedule tools' Scheduler group, target (the schedule
//	AGENTSFLEET_SCHEDULE_TARGET_ARN   function) and role: all three, or none and the schedule
//	AGENTSFLEET_SCHEDULE_ROLE_ARN     tools answer that schedules are not configured
//	AGENTSFLEET_METRICS               on (the default in Lambda) or off: the runs' CloudWatch metrics,
//	                                  EMF documents on stdout (shared/metrics)
//	AGENTSFLEET_MODEL_PRICES          the models' prices for each run's cost, MODEL=IN/OUT,… in US dollars
//	                                  per million tokens (optional; shared/cost)
//	AGENTSFLEET_COMPUTE_PRICES        Lambda's and Fargate's prices for it (optional; us-east-1's, ARM)
//	AWS_LAMBDA_FUNCTION_MEMORY_SIZE   set by Lambda: the memory the runner's time is priced at
//	AGENTSFLEET_TEST_ALLOW_ADDR       test-only, never set by the stack: a loopback address
//	                                  callbacks may reach (shared/web/egress)
//
// Sandboxes (ECS Fargate tasks, shared/sandbox/launch/ecs), all four or none,
// and with them the key of the tasks' tokens:
//
//	AGENTSFLEET_SANDBOX_CLUSTER          the ECS cluster
//	AGENTSFLEET_SANDBOX_TASK_DEFINITION  the sandbox image's task definition (family, family:revision or ARN)
//	AGENTSFLEET_SANDBOX_SUBNETS          the tasks' subnets, comma-separated
//	AGENTSFLEET_SANDBOX_SECURITY_GROUPS  their security groups, comma-separated
//	AGENTSFLEET_SANDBOX_TOKEN_KEY_ARN    the Secrets Manager secret of the key each task's token is derived
//	                                     from (shared/sandbox/token), read on first use; the runner alone
//	                                     may read it. AGENTSFLEET_SANDBOX_TOKEN_KEY is the key itself, on
//	                                     one machine
//	AGENTSFLEET_SANDBOX_PUBLIC_IP        true (default): public IPs, the runner outside any VPC;
//	                                     false: the private layout, the runner in the VPC
//	AGENTSFLEET_SANDBOX_WARM             optional: idle tasks kept per size, such as small=2,medium=1
//	                                     (unset: none kept; shared/sandbox/launch/pool.ParseTargets)
//	AGENTSFLEET_SANDBOX_BROWSER_TASK_DEFINITION  optional: the browser image's task definition (headless
//	                                     Chromium, for browser_open and screenshot); without it a Definition
//	                                     allowing them is refused before the model, naming this setting
//	AGENTSFLEET_SANDBOX_BROWSER_WARM     optional: idle tasks with a browser kept per size, in the form of
//	                                     AGENTSFLEET_SANDBOX_WARM and apart from those (it needs the browser
//	                                     task definition)
//
// The tasks always go through a pool (shared/sandbox/launch/pool) whose
// records are in the table, even with no idle task kept (every size at 0):
// a run's task is recorded as claimed by the run, so that the runner
// re-invoked for the run, or a child agent's in another invocation, finds
// that task instead of starting a second one, and releases it at the end.
//
// Without the sandbox settings the file and shell tools answer that the
// deployment has no sandboxes.
package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/config"

	"github.com/agentsfleet/agentsfleet/shared/deploy"
	"github.com/agentsfleet/agentsfleet/shared/deploy/runnerfn"
	"github.com/agentsfleet/agentsfleet/shared/invoke"
)

func main() {
	ctx, log := context.Background(), slog.New(slog.NewJSONHandler(os.Stderr, nil))
	awsCfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		log.Error("runner: cannot start", "error", fmt.Errorf("load the AWS configuration: %w", err))
		os.Exit(1)
	}
	r, err := runnerfn.New(ctx, deploy.Env{Getenv: os.Getenv, AWS: awsCfg, Log: log})
	if err != nil {
		log.Error("runner: cannot start", "error", err)
		os.Exit(1)
	}
	// A run's payload, a child agent's or an improvement chat's turn, as
	// the local stack's invoke.Local delivers them.
	lambda.Start(invoke.Handler(r.Handle))
}
