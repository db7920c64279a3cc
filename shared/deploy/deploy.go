// Package deploy builds each of agentsfleet's Lambda functions as a
// deployment configures it: from its settings (the environment), through
// each component's own FromEnv (store.FromEnv, invoke.FromEnv,
// ecs.FromEnv, slack.FromEnv, …), over AWS clients made from one AWS
// configuration. The functions' mains (functions/*) are NewAPI, NewRunner,
// NewSchedule, NewSlack and NewWebtools, then lambda.Start of the handler
// the local stack (cmd/agentsfleet) registers for the same function.
//
// Settings lists, for each function, the variables its builder reads and
// which of them it cannot start without: the one place that says what a
// function reads. The CDK stack (infra/) writes each variable's name
// through the component's constant, and its tests hold each function's
// environment in the template to this list.
//
// A builder makes no AWS call: secrets, and the clients that need them,
// are read on the first request that needs them.
package deploy

import (
	"log/slog"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/agentsfleet/agentsfleet/shared/api/callback"
	"github.com/agentsfleet/agentsfleet/shared/invoke"
	"github.com/agentsfleet/agentsfleet/shared/model/provider"
	"github.com/agentsfleet/agentsfleet/shared/runner"
	"github.com/agentsfleet/agentsfleet/shared/sandbox/launch/ecs"
	"github.com/agentsfleet/agentsfleet/shared/sandbox/launch/pool"
	"github.com/agentsfleet/agentsfleet/shared/schedule/eventbridge"
	"github.com/agentsfleet/agentsfleet/shared/schedule/keeper"
	"github.com/agentsfleet/agentsfleet/shared/setting"
	"github.com/agentsfleet/agentsfleet/shared/slack"
	"github.com/agentsfleet/agentsfleet/shared/store"
	"github.com/agentsfleet/agentsfleet/shared/web"
)

// Functions are the Lambda functions' names, as functions/, events/ and
// the stack name them.
var Functions = []string{"api", "runner", "schedule", "slack", "webtools"}

// The functions each function calls, and the settings that name them.
var (
	apiCalls = []invoke.Callee{
		{Function: invoke.Runner, Env: invoke.EnvRunner, Required: true},
		{Function: invoke.Webtools, Env: invoke.EnvWebtools, Required: true}, // it scrubs schedule messages
	}
	runnerCalls = []invoke.Callee{
		{Function: invoke.Runner, Env: setting.LambdaFunctionName, Required: true}, // itself: hand-over, child agents
		{Function: invoke.Webtools, Env: invoke.EnvWebtools, Required: true},
		{Function: invoke.Slack, Env: invoke.EnvSlack}, // without it, runs from Slack post nothing in their threads
	}
	scheduleCalls = []invoke.Callee{
		{Function: invoke.Runner, Env: invoke.EnvRunner, Required: true},
		{Function: invoke.Webtools, Env: invoke.EnvWebtools}, // a firing saves no message: nothing is scrubbed
	}
	slackCalls = []invoke.Callee{{Function: invoke.Runner, Env: invoke.EnvRunner, Required: true}}
)

// Settings are the variables function's main reads, each with whether the
// function starts without it; nil for a name that is not one of
// Functions. Lambda sets the AWS_LAMBDA_* ones itself (setting.Var.ByLambda);
// the AWS SDK's own (AWS_REGION, …) are not listed.
func Settings(function string) []setting.Var {
	switch function {
	case "api":
		return setting.Join(store.Settings(), invoke.Settings(apiCalls), keeper.Settings(), callback.Settings())
	case "runner":
		return setting.Join(store.Settings(), invoke.Settings(runnerCalls), ecs.Settings(), pool.Settings(),
			provider.Settings(), keeper.Settings(), runner.Settings(), callback.Settings())
	case "schedule":
		// Scheduler's group, target and role: the schedule function is
		// nothing without them.
		return setting.Join(store.Settings(), invoke.Settings(scheduleCalls), setting.Required(eventbridge.Settings()), keeper.Settings())
	case "slack":
		return setting.Join(store.Settings(), invoke.Settings(slackCalls), slack.Settings())
	case "webtools":
		// The command line's mode switch, and the web tools' settings.
		return setting.Join([]setting.Var{{Name: setting.LambdaRuntimeAPI}}, web.Settings())
	}
	return nil
}

// Env is what a function is built from.
type Env struct {
	// Getenv reads the settings: os.Getenv in a main.
	Getenv func(string) string
	// AWS makes the AWS clients: config.LoadDefaultConfig's in a main.
	AWS aws.Config
	// Log is the function's log; nil means slog.Default().
	Log *slog.Logger
	// Invoker, when set, calls the other functions instead of Lambda by
	// the names in the settings (tests set an invoke.Local).
	Invoker invoke.Invoker
}

func (e Env) log() *slog.Logger {
	if e.Log == nil {
		return slog.Default()
	}
	return e.Log
}

// invoker is e.Invoker, else the Lambda invoker of callees.
func (e Env) invoker(callees []invoke.Callee) (invoke.Invoker, error) {
	if e.Invoker != nil {
		return e.Invoker, nil
	}
	inv, err := invoke.FromEnv(e.Getenv, e.AWS, callees)
	if err != nil {
		return nil, err
	}
	return inv, nil
}
