// Package runnerfn builds the runner function (functions/runner): the agent loop, from its settings, as a deployment
// configures it (see package deploy). Its main imports it alone.
package runnerfn

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"

	"github.com/agentsfleet/agentsfleet/shared/callback"
	"github.com/agentsfleet/agentsfleet/shared/cost"
	"github.com/agentsfleet/agentsfleet/shared/deploy"
	"github.com/agentsfleet/agentsfleet/shared/deploy/table"
	"github.com/agentsfleet/agentsfleet/shared/fleet"
	"github.com/agentsfleet/agentsfleet/shared/improve"
	"github.com/agentsfleet/agentsfleet/shared/improve/agent"
	"github.com/agentsfleet/agentsfleet/shared/invoke"
	"github.com/agentsfleet/agentsfleet/shared/metrics"
	"github.com/agentsfleet/agentsfleet/shared/model/provider"
	"github.com/agentsfleet/agentsfleet/shared/runner"
	"github.com/agentsfleet/agentsfleet/shared/sandbox/launch"
	"github.com/agentsfleet/agentsfleet/shared/sandbox/launch/ecs"
	"github.com/agentsfleet/agentsfleet/shared/sandbox/launch/pool"
	"github.com/agentsfleet/agentsfleet/shared/schedule/keeper"
	"github.com/agentsfleet/agentsfleet/shared/secret"
	"github.com/agentsfleet/agentsfleet/shared/setting"
	"github.com/agentsfleet/agentsfleet/shared/store"
)

// calls are the functions it calls, and the settings that name them.
var calls = []invoke.Callee{
	{Function: invoke.Runner, Env: setting.LambdaFunctionName, Required: true}, // itself: hand-over, child agents
	{Function: invoke.Webtools, Env: invoke.EnvWebtools, Required: true},
	{Function: invoke.Slack, Env: invoke.EnvSlack}, // without it, runs from Slack post nothing in their threads
}

// Settings are the variables New reads, each with whether the function
// starts without it.
func Settings() []setting.Var {
	return setting.Join(store.Settings(), invoke.Settings(calls), ecs.Settings(), pool.Settings(),
		provider.Settings(), keeper.Settings(), runner.Settings(), callback.Settings(), metrics.Settings(), cost.Settings())
}

// noSandboxes is why sandbox tools cannot run in a deployment whose
// sandbox settings are not set.
const noSandboxes = "this deployment has no sandboxes: its runner has no AGENTSFLEET_SANDBOX_* settings (an ECS cluster, task definition, subnets and security groups for the sandbox tasks); the file and shell tools run only with `agentsfleet run` and `agentsfleet dev` until they are set"

// noBrowser is why a deployment's sandboxes have no browser, and what to
// set: the runner's refusal of a Definition allowing a display tool says
// it (runner.Config.NoBrowser).
const noBrowser = "its runner has no " + ecs.EnvBrowserTaskDefinition + " (the browser image's task definition, which the stack creates and sets when deployed with cdk deploy -c sandboxBrowser=true)"

// New is the runner function: the agent loop over the table, the
// model of the provider settings (Bedrock by default), sandboxes as ECS
// tasks, the webtools function, the slack function for runs' threads, the
// schedule tools when the Scheduler settings are there, and the checkpoint
// bucket, and the improvement chats' agent on the same model. Its handler
// is Function.Handle.
func New(ctx context.Context, e deploy.Env) (*Function, error) {
	getenv, log := e.Getenv, e.Logger()
	st, inv, err := table.Open(e, "runner", Settings(), calls)
	if err != nil {
		return nil, err
	}
	sandboxes, warm, err := sandboxLauncher(getenv, e.AWS, st, log)
	if err != nil {
		return nil, err
	}
	chosen, err := provider.FromEnv(ctx, getenv, provider.Bedrock, func(context.Context) (aws.Config, error) { return e.AWS, nil })
	if err != nil {
		return nil, err
	}
	callbacks, err := callback.FromEnv(getenv, log)
	if err != nil {
		return nil, err
	}
	cfg := runner.Config{
		Store:        st,
		Model:        chosen.Model,
		DefaultModel: chosen.DefaultModel,
		Sandboxes:    sandboxes,
		NoBrowser:    noBrowser,
		Invoker:      inv,
		Callbacks:    callbacks,
		// The values of the secrets a fleet's setup step lists; the
		// function's role may read the fleets' secrets (infra/stack).
		Secrets: secret.SecretsManager{Client: secretsmanager.NewFromConfig(e.AWS)},
		Log:     log,
	}
	// Each run's cost, reckoned as it ends.
	prices, err := cost.FromEnv(getenv)
	if err != nil {
		return nil, err
	}
	cfg.Prices = &prices
	if cfg.MemoryMiB, err = cost.MemoryFromEnv(getenv); err != nil {
		return nil, err
	}
	// The metrics go to the function's log, as EMF documents on stdout.
	if cfg.Metrics, err = metrics.FromEnv(getenv, e.Stdout()); err != nil {
		return nil, err
	}
	if cfg.Lease, err = runner.LeaseFromEnv(getenv); err != nil {
		return nil, err
	}
	if cfg.ToolConcurrency, err = runner.ToolConcurrencyFromEnv(getenv); err != nil {
		return nil, err
	}
	k, ok, err := keeper.FromEnv(getenv, e.AWS, st, inv, log)
	if err != nil {
		return nil, err
	}
	if ok {
		cfg.Schedules = k.Book()
	}
	if blobs, folders, ok := runner.BucketFromEnv(getenv, e.AWS); ok {
		cfg.Blobs, cfg.Folders = blobs, folders
	}
	_, none := sandboxes.(launch.None)
	log.Info("runner ready", "model", chosen.About, "table", getenv(store.EnvTable), "sandboxes", !none,
		"browser", launch.CanBrowse(sandboxes), "warm", pool.FormatTargets(warm.plain), "browser_warm", pool.FormatTargets(warm.browser))
	r, err := runner.New(cfg)
	if err != nil {
		return nil, err
	}
	chats, err := agent.New(agent.Config{Store: st, Model: chosen.Model, DefaultModel: chosen.DefaultModel, Invoker: inv, Log: log})
	if err != nil {
		return nil, err
	}
	return &Function{Runner: r, Chats: chats}, nil
}

// Function is the runner function: runs and child agents (Runner), and
// improvement chats' turns (Chats).
type Function struct {
	Runner *runner.Runner
	Chats  *agent.Agent
}

// Handle is the function's handler, as the local stack registers it too:
// an improvement chat's turn (improve.Payload) or a run's payload.
func (f *Function) Handle(ctx context.Context, payload []byte) ([]byte, error) {
	return improve.Dispatch(f.Runner.Handle, f.Chats.Handle)(ctx, payload)
}

// targets are the pool's targets: idle tasks kept per size, plain and with
// a browser.
type targets struct{ plain, browser map[fleet.SandboxSize]int }

// sandboxLauncher is the runner's sandboxes: the ECS launcher of the
// sandbox settings, always behind a pool with its records in st, whose
// targets are warm (every size at 0 when AGENTSFLEET_SANDBOX_WARM and
// AGENTSFLEET_SANDBOX_BROWSER_WARM are unset): the pool's records are how
// another invocation finds the run's task (a claimed record) instead of
// starting a second one. It gives sandboxes with a browser when
// AGENTSFLEET_SANDBOX_BROWSER_TASK_DEFINITION is set; browser targets
// without it are an error naming both. Without the settings, launch.None.
func sandboxLauncher(getenv func(string) string, awsCfg aws.Config, st *store.Store, log *slog.Logger) (launch.Launcher, targets, error) {
	tasks, ok, err := ecs.FromEnv(getenv, awsCfg)
	if err != nil {
		return nil, targets{}, err
	}
	var warm targets
	if warm.plain, err = pool.TargetsFromEnv(getenv); err != nil {
		return nil, targets{}, err
	}
	if warm.browser, err = pool.BrowserTargetsFromEnv(getenv); err != nil {
		return nil, targets{}, err
	}
	if len(warm.browser) > 0 && (!ok || !tasks.Browser()) {
		return nil, targets{}, fmt.Errorf("%s=%s keeps idle sandboxes with a browser, but %s is not set: the browser image has no task definition",
			pool.BrowserTargetsEnv, pool.FormatTargets(warm.browser), ecs.EnvBrowserTaskDefinition)
	}
	if !ok {
		return launch.None{Why: noSandboxes}, warm, nil
	}
	p, err := pool.New(pool.Config{Starter: tasks, Records: st, Target: warm.plain, BrowserTarget: warm.browser, Logger: log})
	if err != nil {
		return nil, targets{}, err
	}
	return p, warm, nil
}
