// Package deploy is what each of agentsfleet's Lambda functions is built
// from (Env) and the list of them (Functions). Each function has a
// package of its own beside this one that builds it as a deployment
// configures it, from its settings (the environment), through each
// component's own FromEnv (store.FromEnv, invoke.FromEnv, ecs.FromEnv,
// slack.FromEnv, …): apifn, runnerfn, schedulefn, slackfn and webtoolsfn,
// the first four over package table (the settings checked, the store, the
// invoker). A function's main imports its own package alone, so that it
// links only the components it runs: the model providers' SDKs and the
// sandboxes' ECS and EC2 clients are the runner's alone (functions/coldstart
// checks it). Package
// deploy/settings lists, for every function, the variables its builder
// reads: the CDK stack's tests (infra/) hold each function's environment
// in the template to it.
//
// A builder makes no AWS call: secrets, and the clients that need them,
// are read on the first request that needs them.
package deploy

import (
	"io"
	"log/slog"
	"os"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/agentsfleet/agentsfleet/shared/invoke"
)

// Functions are the Lambda functions' names, as functions/, events/ and
// the stack name them.
var Functions = []string{"api", "runner", "schedule", "slack", "webtools"}

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
	// Out is where the function writes what CloudWatch Logs reads from its
	// output beside the log (the metrics' EMF documents); nil means
	// os.Stdout.
	Out io.Writer
}

// Stdout is e.Out, or os.Stdout.
func (e Env) Stdout() io.Writer {
	if e.Out == nil {
		return os.Stdout
	}
	return e.Out
}

// Logger is e.Log, or slog.Default().
func (e Env) Logger() *slog.Logger {
	if e.Log == nil {
		return slog.Default()
	}
	return e.Log
}

// Calls is e.Invoker, else the Lambda invoker of callees.
func (e Env) Calls(callees []invoke.Callee) (invoke.Invoker, error) {
	if e.Invoker != nil {
		return e.Invoker, nil
	}
	inv, err := invoke.FromEnv(e.Getenv, e.AWS, callees)
	if err != nil {
		return nil, err
	}
	return inv, nil
}
