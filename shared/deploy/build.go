package deploy

import (
	"context"
	"errors"
	"log/slog"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"

	"github.com/agentsfleet/agentsfleet/shared/api"
	"github.com/agentsfleet/agentsfleet/shared/api/callback"
	"github.com/agentsfleet/agentsfleet/shared/fleet"
	"github.com/agentsfleet/agentsfleet/shared/model/provider"
	"github.com/agentsfleet/agentsfleet/shared/runner"
	"github.com/agentsfleet/agentsfleet/shared/sandbox/launch"
	"github.com/agentsfleet/agentsfleet/shared/sandbox/launch/ecs"
	"github.com/agentsfleet/agentsfleet/shared/sandbox/launch/pool"
	"github.com/agentsfleet/agentsfleet/shared/schedule/keeper"
	"github.com/agentsfleet/agentsfleet/shared/secret"
	"github.com/agentsfleet/agentsfleet/shared/setting"
	"github.com/agentsfleet/agentsfleet/shared/slack"
	"github.com/agentsfleet/agentsfleet/shared/store"
	"github.com/agentsfleet/agentsfleet/shared/web"
)

// NewAPI is the api function: the HTTP API over the table, starting runs
// on the runner, with the fleets' schedules when the Scheduler settings are
// there (else the schedule routes answer that schedules are not
// configured). Its handler is API.HandleGateway, API Gateway's adapter
// over the http.Handler `agentsfleet dev` serves.
func NewAPI(_ context.Context, e Env) (*api.API, error) {
	getenv, log := e.Getenv, e.log()
	if err := setting.Check(getenv, Settings("api"), "the api function"); err != nil {
		return nil, err
	}
	st, err := store.FromEnv(getenv, e.AWS)
	if err != nil {
		return nil, err
	}
	inv, err := e.invoker(apiCalls)
	if err != nil {
		return nil, err
	}
	callbacks, err := callback.FromEnv(getenv, log)
	if err != nil {
		return nil, err
	}
	cfg := api.Config{Store: st, Invoker: inv, Callbacks: callbacks, Log: log}
	k, ok, err := keeper.FromEnv(getenv, e.AWS, st, inv, log)
	if err != nil {
		return nil, err
	}
	if ok {
		cfg.Schedules = k
	}
	return api.New(cfg)
}

// noSandboxes is why sandbox tools cannot run in a deployment whose
// sandbox settings are not set.
const noSandboxes = "this deployment has no sandboxes: its runner has no AGENTSFLEET_SANDBOX_* settings (an ECS cluster, task definition, subnets and security groups for the sandbox tasks); the file and shell tools run only with `agentsfleet run` and `agentsfleet dev` until they are set"

// NewRunner is the runner function: the agent loop over the table, the
// model of the provider settings (Bedrock by default), sandboxes as ECS
// tasks, the webtools function, the slack function for runs' threads, the
// schedule tools when the Scheduler settings are there, and the checkpoint
// bucket. Its handler is Runner.Handle.
func NewRunner(ctx context.Context, e Env) (*runner.Runner, error) {
	getenv, log := e.Getenv, e.log()
	if err := setting.Check(getenv, Settings("runner"), "the runner function"); err != nil {
		return nil, err
	}
	st, err := store.FromEnv(getenv, e.AWS)
	if err != nil {
		return nil, err
	}
	inv, err := e.invoker(runnerCalls)
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
		Invoker:      inv,
		Callbacks:    callbacks,
		Log:          log,
	}
	if cfg.Lease, err = runner.LeaseFromEnv(getenv); err != nil {
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
	log.Info("runner ready", "model", chosen.About, "table", getenv(store.EnvTable), "sandboxes", !none, "warm", pool.FormatTargets(warm))
	return runner.New(cfg)
}

// sandboxLauncher is the runner's sandboxes: the ECS launcher of the
// sandbox settings, always behind a pool with its records in st, whose
// targets are warm (every size at 0 when AGENTSFLEET_SANDBOX_WARM is
// unset): the pool's records are how another invocation finds the run's
// task (a claimed record) instead of starting a second one. Without the
// settings, launch.None.
func sandboxLauncher(getenv func(string) string, awsCfg aws.Config, st *store.Store, log *slog.Logger) (launch.Launcher, map[fleet.SandboxSize]int, error) {
	tasks, ok, err := ecs.FromEnv(getenv, awsCfg)
	if err != nil {
		return nil, nil, err
	}
	warm, err := pool.TargetsFromEnv(getenv)
	if err != nil {
		return nil, nil, err
	}
	if !ok {
		return launch.None{Why: noSandboxes}, warm, nil
	}
	p, err := pool.New(pool.Config{Starter: tasks, Records: st, Target: warm, Logger: log})
	if err != nil {
		return nil, nil, err
	}
	return p, warm, nil
}

// NewSchedule is the schedule function, the target of EventBridge
// Scheduler: the Keeper over the table and the deployment's schedule
// group, starting runs on the runner. Its handler is Keeper.Handle.
func NewSchedule(_ context.Context, e Env) (*keeper.Keeper, error) {
	getenv, log := e.Getenv, e.log()
	if err := setting.Check(getenv, Settings("schedule"), "the schedule function"); err != nil {
		return nil, err
	}
	st, err := store.FromEnv(getenv, e.AWS)
	if err != nil {
		return nil, err
	}
	inv, err := e.invoker(scheduleCalls)
	if err != nil {
		return nil, err
	}
	k, ok, err := keeper.FromEnv(getenv, e.AWS, st, inv, log)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, errors.New("the schedule function needs its Scheduler settings")
	}
	return k, nil
}

// NewSlack is the slack function: Slack's request URLs and the runner's
// posts in runs' threads, its secrets in Secrets Manager, read on the
// first request that needs them. Its handler is Function.Invoke.
func NewSlack(_ context.Context, e Env) (*slack.Function, error) {
	getenv, log := e.Getenv, e.log()
	if err := setting.Check(getenv, Settings("slack"), "the slack function"); err != nil {
		return nil, err
	}
	st, err := store.FromEnv(getenv, e.AWS)
	if err != nil {
		return nil, err
	}
	inv, err := e.invoker(slackCalls)
	if err != nil {
		return nil, err
	}
	f, ok, err := slack.FromEnv(getenv, secret.SecretsManager{Client: secretsmanager.NewFromConfig(e.AWS)}, st, inv, log)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, errors.New("the slack function needs its secrets' settings")
	}
	return f, nil
}

// NewWebtools is the webtools function: the web tools under the egress
// policy, the fleets' secrets (and the search key) read from Secrets
// Manager. Its handler is Service.Invoke.
func NewWebtools(_ context.Context, e Env) (*web.Service, error) {
	cfg, err := web.ConfigFromEnv(e.Getenv, secret.SecretsManager{Client: secretsmanager.NewFromConfig(e.AWS)}, e.log())
	if err != nil {
		return nil, err
	}
	return web.NewService(cfg)
}
