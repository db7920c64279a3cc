// Command runner is the runner λ: the agent loop (shared/runner,
// Runner.Handle). Its payload is {"run_id": "…"}, sent by the API when a
// run starts and by the runner itself when an invocation nears its
// deadline, or {"run_id": "…", "child_id": "…"} for a child agent's
// invocation (InvocationType Event).
//
// Settings (environment):
//
//	AGENTSFLEET_TABLE                 the DynamoDB table
//	AGENTSFLEET_CHECKPOINT_BUCKET     S3 bucket for checkpoints larger than an item and the fleets' folders (optional)
//	AGENTSFLEET_FUNCTION_WEBTOOLS     the webtools function's name or ARN
//	AGENTSFLEET_FUNCTION_SLACK        the slack function's name or ARN, which posts in the threads
//	                                  of runs started from Slack (optional: without it they post nothing)
//	AGENTSFLEET_MODEL_PROVIDER        bedrock (default), anthropic, openai or scripted; see shared/model/provider
//	AGENTSFLEET_MODEL                 the model id for Definitions that name none
//	AWS_LAMBDA_FUNCTION_NAME          set by Lambda: the runner invokes itself by it
//	AGENTSFLEET_SCHEDULE_GROUP        the schedule tools' Scheduler group, target (the schedule
//	AGENTSFLEET_SCHEDULE_TARGET_ARN   function) and role: all three, or none and the schedule
//	AGENTSFLEET_SCHEDULE_ROLE_ARN     tools answer that schedules are not configured
//
// Sandboxes (ECS Fargate tasks, shared/sandbox/launch/ecs), all four or none:
//
//	AGENTSFLEET_SANDBOX_CLUSTER          the ECS cluster
//	AGENTSFLEET_SANDBOX_TASK_DEFINITION  the sandbox image's task definition (family, family:revision or ARN)
//	AGENTSFLEET_SANDBOX_SUBNETS          the tasks' subnets, comma-separated
//	AGENTSFLEET_SANDBOX_SECURITY_GROUPS  their security groups, comma-separated
//	AGENTSFLEET_SANDBOX_PUBLIC_IP        true (default): public IPs, the runner outside any VPC;
//	                                     false: the private layout, the runner in the VPC
//	AGENTSFLEET_SANDBOX_WARM             optional: idle tasks kept per size, such as small=2,medium=1
//	                                     (unset: none kept; shared/sandbox/launch/pool.ParseTargets)
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
	"errors"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strings"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	awsecs "github.com/aws/aws-sdk-go-v2/service/ecs"
	awslambda "github.com/aws/aws-sdk-go-v2/service/lambda"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/agentsfleet/agentsfleet/shared/api/callback"
	"github.com/agentsfleet/agentsfleet/shared/fleet"
	"github.com/agentsfleet/agentsfleet/shared/invoke"
	"github.com/agentsfleet/agentsfleet/shared/model/provider"
	"github.com/agentsfleet/agentsfleet/shared/runner"
	"github.com/agentsfleet/agentsfleet/shared/sandbox/launch"
	"github.com/agentsfleet/agentsfleet/shared/sandbox/launch/ecs"
	"github.com/agentsfleet/agentsfleet/shared/sandbox/launch/pool"
	"github.com/agentsfleet/agentsfleet/shared/schedule/keeper"
	"github.com/agentsfleet/agentsfleet/shared/store"
)

// noSandboxes is why sandbox tools cannot run in a deployment whose
// sandbox settings are not set.
const noSandboxes = "this deployment has no sandboxes: its runner has no AGENTSFLEET_SANDBOX_* settings (an ECS cluster, task definition, subnets and security groups for the sandbox tasks); the file and shell tools run only with `agentsfleet run` and `agentsfleet dev` until they are set"

func main() {
	log := slog.New(slog.NewJSONHandler(os.Stderr, nil))
	r, err := newRunner(context.Background(), os.Getenv, log)
	if err != nil {
		log.Error("runner: cannot start", "error", err)
		os.Exit(1)
	}
	// The local stack's handler too: a run's payload or a child agent's
	// ({"run_id", "child_id"}).
	lambda.Start(invoke.Handler(r.Handle))
}

// newRunner wires the runner from the environment.
func newRunner(ctx context.Context, getenv func(string) string, log *slog.Logger) (*runner.Runner, error) {
	table := getenv("AGENTSFLEET_TABLE")
	if table == "" {
		return nil, errors.New("AGENTSFLEET_TABLE is not set: it names the DynamoDB table")
	}
	self := getenv("AWS_LAMBDA_FUNCTION_NAME")
	webtools := getenv("AGENTSFLEET_FUNCTION_WEBTOOLS")
	if self == "" || webtools == "" {
		return nil, errors.New("AWS_LAMBDA_FUNCTION_NAME and AGENTSFLEET_FUNCTION_WEBTOOLS must name the runner and webtools functions")
	}
	sandboxCfg, haveSandboxes, err := sandboxSettings(getenv)
	if err != nil {
		return nil, err
	}
	warm, err := pool.ParseTargets(getenv(pool.TargetsEnv))
	if err != nil {
		return nil, err
	}
	awsCfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		return nil, fmt.Errorf("load the AWS configuration: %w", err)
	}
	st := store.New(dynamodb.NewFromConfig(awsCfg), table)
	var sandboxes launch.Launcher = launch.None{Why: noSandboxes}
	if haveSandboxes {
		if sandboxes, err = sandboxLauncher(awsCfg, sandboxCfg, st, warm, log); err != nil {
			return nil, err
		}
	}
	chosen, err := provider.FromEnv(ctx, getenv, provider.Bedrock, func(context.Context) (aws.Config, error) { return awsCfg, nil })
	if err != nil {
		return nil, err
	}
	fns := map[string]string{invoke.Runner: self, invoke.Webtools: webtools}
	if slack := getenv("AGENTSFLEET_FUNCTION_SLACK"); slack != "" {
		fns[invoke.Slack] = slack // it posts in the threads of runs from Slack
	}
	inv := invoke.NewLambda(awslambda.NewFromConfig(awsCfg), fns)
	cfg := runner.Config{
		Store:        st,
		Model:        chosen.Model,
		DefaultModel: chosen.DefaultModel,
		Sandboxes:    sandboxes,
		Invoker:      inv,
		Callbacks:    callback.New(callback.Config{Logger: log}),
		Log:          log,
	}
	k, ok, err := keeper.FromEnv(getenv, awsCfg, st, inv, log)
	if err != nil {
		return nil, err
	}
	if ok {
		cfg.Schedules = k.Book()
	}
	if bucket := getenv("AGENTSFLEET_CHECKPOINT_BUCKET"); bucket != "" {
		s3c := s3.NewFromConfig(awsCfg)
		cfg.Blobs = runner.S3Blobs{Client: s3c, Bucket: bucket}
		// Fargate tasks keep nothing: the fleets' folders live in the bucket
		// too, under fleets/ (which its checkpoint expiry must not cover).
		cfg.Folders = runner.S3Folders{Presign: s3.NewPresignClient(s3c), Client: s3c, Bucket: bucket}
	}
	log.Info("runner ready", "model", chosen.About, "table", table, "sandboxes", haveSandboxes, "warm", pool.FormatTargets(warm))
	return runner.New(cfg)
}

// sandboxLauncher is the ECS launcher for cfg, always behind a pool with
// its records in st, whose targets are warm (every size at 0 when
// AGENTSFLEET_SANDBOX_WARM is unset): the pool's records are how another
// invocation finds the run's task (a claimed record) instead of starting
// a second one.
func sandboxLauncher(awsCfg aws.Config, cfg ecs.Config, st pool.Records, warm map[fleet.SandboxSize]int, log *slog.Logger) (*pool.Pool, error) {
	cfg.ECS = awsecs.NewFromConfig(awsCfg)
	if !cfg.Private {
		cfg.EC2 = ec2.NewFromConfig(awsCfg)
	}
	tasks, err := ecs.New(cfg)
	if err != nil {
		return nil, err
	}
	return pool.New(pool.Config{Starter: tasks, Records: st, Target: warm, Logger: log})
}

// sandboxSettings reads the AGENTSFLEET_SANDBOX_* settings into an ecs
// config without its API clients. ok is false when none of the four
// required ones is set (no sandboxes); some set without the others, or a
// PUBLIC_IP that is neither true nor false, is an error naming them.
func sandboxSettings(getenv func(string) string) (cfg ecs.Config, ok bool, err error) {
	const (
		cluster = "AGENTSFLEET_SANDBOX_CLUSTER"
		taskDef = "AGENTSFLEET_SANDBOX_TASK_DEFINITION"
		subnets = "AGENTSFLEET_SANDBOX_SUBNETS"
		groups  = "AGENTSFLEET_SANDBOX_SECURITY_GROUPS"
		public  = "AGENTSFLEET_SANDBOX_PUBLIC_IP"
	)
	cfg = ecs.Config{
		Cluster:        strings.TrimSpace(getenv(cluster)),
		TaskDefinition: strings.TrimSpace(getenv(taskDef)),
		Subnets:        list(getenv(subnets)),
		SecurityGroups: list(getenv(groups)),
	}
	var missing []string
	for name, set := range map[string]bool{cluster: cfg.Cluster != "", taskDef: cfg.TaskDefinition != "", subnets: len(cfg.Subnets) > 0, groups: len(cfg.SecurityGroups) > 0} {
		if !set {
			missing = append(missing, name)
		}
	}
	if len(missing) == 4 {
		if getenv(public) != "" {
			return ecs.Config{}, false, fmt.Errorf("%s is set but not %s, %s, %s nor %s: sandboxes need all four", public, cluster, taskDef, subnets, groups)
		}
		return ecs.Config{}, false, nil
	}
	if len(missing) > 0 {
		slices.Sort(missing)
		return ecs.Config{}, false, fmt.Errorf("sandbox settings: %s not set: sandboxes need %s, %s, %s and %s together",
			strings.Join(missing, ", "), cluster, taskDef, subnets, groups)
	}
	switch v := strings.TrimSpace(getenv(public)); strings.ToLower(v) {
	case "", "true":
	case "false":
		cfg.Private = true
	default:
		return ecs.Config{}, false, fmt.Errorf("%s=%q: want true (public IPs, the default) or false (the private layout)", public, v)
	}
	return cfg, true, nil
}

// list splits a comma-separated setting, dropping empty items.
func list(s string) []string {
	var out []string
	for _, item := range strings.Split(s, ",") {
		if item = strings.TrimSpace(item); item != "" {
			out = append(out, item)
		}
	}
	return out
}
