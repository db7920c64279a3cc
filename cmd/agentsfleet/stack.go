package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/aws-sdk-go-v2/service/scheduler"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"

	"github.com/agentsfleet/agentsfleet/shared/api"
	"github.com/agentsfleet/agentsfleet/shared/callback"
	"github.com/agentsfleet/agentsfleet/shared/cost"
	"github.com/agentsfleet/agentsfleet/shared/emulator"
	"github.com/agentsfleet/agentsfleet/shared/fleet"
	"github.com/agentsfleet/agentsfleet/shared/improve"
	"github.com/agentsfleet/agentsfleet/shared/improve/agent"
	"github.com/agentsfleet/agentsfleet/shared/invoke"
	"github.com/agentsfleet/agentsfleet/shared/metrics"
	"github.com/agentsfleet/agentsfleet/shared/model/provider"
	"github.com/agentsfleet/agentsfleet/shared/runner"
	"github.com/agentsfleet/agentsfleet/shared/sandbox/launch"
	"github.com/agentsfleet/agentsfleet/shared/sandbox/launch/local"
	"github.com/agentsfleet/agentsfleet/shared/sandbox/launch/pool"
	"github.com/agentsfleet/agentsfleet/shared/schedule/clock"
	"github.com/agentsfleet/agentsfleet/shared/schedule/eventbridge"
	"github.com/agentsfleet/agentsfleet/shared/schedule/keeper"
	"github.com/agentsfleet/agentsfleet/shared/secret"
	"github.com/agentsfleet/agentsfleet/shared/slack"
	"github.com/agentsfleet/agentsfleet/shared/store"
	"github.com/agentsfleet/agentsfleet/shared/web"
	"github.com/agentsfleet/agentsfleet/shared/web/egress"
	"github.com/agentsfleet/agentsfleet/shared/web/grants"
)

// stack is agentsfleet on this machine: the AWS emulator (moto, or
// AWS_ENDPOINT_URL), the table and the checkpoint bucket, the webtools and
// the runner as in-process functions, and sandboxes as local sandboxd
// processes. `agentsfleet run` and `agentsfleet dev` both stand on it.
//
// Without a warm pool each run gets a sandboxd of its own over the fleet's
// folder StateDir/agents/<fleet>. With one (stackOptions.Warm) idle
// sandboxd processes wait for runs, as Fargate tasks do in AWS: each has
// an empty fleet's folder of its own, which the runner restores from the
// checkpoint bucket (fleets/<fleet>/agent.tar.gz) when a run claims it and
// saves there when the run ends, so the fleet's folder lives in the
// emulator's bucket rather than in StateDir.
type stack struct {
	Endpoint string
	Table    string
	Store    *store.Store
	Funcs    *invoke.Local
	Runner   *runner.Runner
	// Metrics says the runner writes its metrics (AGENTSFLEET_METRICS=on).
	Metrics bool
	Model   provider.Chosen
	Sandbox *local.Launcher
	// API is the HTTP API over the stack (agentsfleet dev serves it).
	API *api.API
	// Schedules keeps the fleets' schedules in the emulator's Scheduler;
	// Clock fires them, as Scheduler would (moto never does), once
	// RunClock is called.
	Schedules *keeper.Keeper
	Clock     *clock.Clock
	// Slack is the slack λ in-process: it serves /slack/events and
	// /slack/interactivity, and the runner's posts to threads (invoke.Slack);
	// nil without the app's signing secret and bot token
	// (AGENTSFLEET_SLACK_SIGNING_SECRET and AGENTSFLEET_SLACK_BOT_TOKEN, or
	// their _ARN in the emulator's Secrets Manager).
	Slack *slack.Function
	// Pool is the warm pool over Sandbox, nil without one.
	Pool        *pool.Pool
	Warm        map[fleet.SandboxSize]int // the pool's targets
	BrowserWarm map[fleet.SandboxSize]int // its targets of sandboxes with a browser
	closers     []func()
}

// stackOptions say where the stack keeps things and who watches it.
type stackOptions struct {
	Workdir  string // the folder the sandboxes serve as the workdir
	StateDir string // the fleets' folders (/agent) and sandbox state
	Table    string
	Env      []string // variables the sandboxes' commands also get, besides PATH
	Sandboxd string   // the sandboxd binary; "" finds it beside agentsfleet or on PATH
	// Browser is the Chromium the sandboxes of runs that allow a display
	// tool get (findBrowser); without one such runs are refused, saying
	// Browser.Why.
	Browser  browser
	Observer func(runner.Note)
	Log      *slog.Logger
	// Warm, when any size is above 0, keeps that many idle sandboxes of
	// each size in a pool (pool.ParseTargets reads them); they are started
	// before startStack returns.
	Warm map[fleet.SandboxSize]int
	// BrowserWarm is the same for sandboxes with a browser
	// (pool.ParseBrowserTargets), kept apart; it needs a Browser.
	BrowserWarm map[fleet.SandboxSize]int
	// Sweep, when above 0, sweeps the pool that often (idle sandboxes past
	// their age stopped, dead ones forgotten, the pool topped up).
	Sweep time.Duration
}

// drainTimeout bounds stopping the pool's sandboxes when the stack closes.
const drainTimeout = time.Minute

// warmSetting reads AGENTSFLEET_SANDBOX_WARM, or def when it is unset or
// empty, as a usage error when it is wrong.
func warmSetting(getenv func(string) string, def string) (map[fleet.SandboxSize]int, error) {
	v := getenv(pool.TargetsEnv)
	if strings.TrimSpace(v) == "" {
		v = def
	}
	warm, err := pool.ParseTargets(v)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", errUsage, err)
	}
	return warm, nil
}

// browserSetting finds this machine's Chromium (findBrowser) and reads
// AGENTSFLEET_SANDBOX_BROWSER_WARM, the idle sandboxes with a browser to
// keep (none when unset): a usage error when it is wrong, or when it asks
// for some and there is no Chromium.
func browserSetting(getenv func(string) string) (browser, map[fleet.SandboxSize]int, error) {
	b, err := findBrowser(getenv, exec.LookPath)
	if err != nil {
		return browser{}, nil, err
	}
	warm, err := pool.BrowserTargetsFromEnv(getenv)
	if err != nil {
		return browser{}, nil, fmt.Errorf("%w: %v", errUsage, err)
	}
	if len(warm) > 0 && b.Path == "" {
		return browser{}, nil, fmt.Errorf("%w: %s=%s keeps sandboxes with a browser, but there is none: %s",
			errUsage, pool.BrowserTargetsEnv, pool.FormatTargets(warm), b.Why)
	}
	return b, warm, nil
}

const checkpointBucket = "agentsfleet-checkpoints"

// startSlack is the slack λ in-process, its handler the Lambda's
// (slack.Function.Invoke), when the app's signing secret and bot token are
// set (slack.FromEnv; AGENTSFLEET_SLACK_API_URL points it at another Web
// API): the events and interactivity endpoints, and the runner's posts.
func (s *stack) startSlack(getenv func(string) string, secrets secret.Source, log *slog.Logger) error {
	fn, ok, err := slack.FromEnv(getenv, secrets, s.Store, s.Funcs, log)
	if err != nil || !ok {
		return err
	}
	s.Funcs.Register(invoke.Slack, fn.Invoke)
	s.Slack = fn
	return nil
}

// scheduleGroup is the Scheduler group of the local stack's schedules.
const scheduleGroup = "agentsfleet"

// RunClock fires due schedules until the stack closes.
func (s *stack) RunClock() {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		s.Clock.Run(ctx)
	}()
	// Before the functions close: a firing under way finishes first.
	s.closers = append(s.closers, func() { cancel(); <-done })
}

// startStack starts the stack; Close stops what it started.
func startStack(ctx context.Context, o stackOptions, getenv func(string) string) (_ *stack, err error) {
	s := &stack{Table: o.Table}
	defer func() {
		if err != nil {
			s.Close()
		}
	}()
	log := o.Log
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	s.Endpoint = strings.TrimRight(getenv("AWS_ENDPOINT_URL"), "/")
	if s.Endpoint == "" {
		moto, err := emulator.Start(ctx, "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("start the AWS emulator: %w", err)
		}
		s.closers = append(s.closers, moto.Stop)
		s.Endpoint = moto.Endpoint
	}
	awsCfg, err := emulator.Config(ctx, s.Endpoint)
	if err != nil {
		return nil, err
	}
	db := dynamodb.NewFromConfig(awsCfg)
	if err := store.CreateTable(ctx, db, o.Table); err != nil {
		return nil, err
	}
	s.Store = store.New(db, o.Table)
	s3c := s3.NewFromConfig(awsCfg, func(opt *s3.Options) { opt.UsePathStyle = true })
	var owned *s3types.BucketAlreadyOwnedByYou
	if _, err := s3c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(checkpointBucket)}); err != nil && !errors.As(err, &owned) {
		return nil, fmt.Errorf("create the checkpoint bucket: %w", err)
	}

	// Bedrock is the real one, not the emulator: the model is the one thing
	// that leaves this machine, and only when a real one is asked for.
	s.Model, err = provider.FromEnv(ctx, getenv, provider.Scripted, func(ctx context.Context) (aws.Config, error) {
		return config.LoadDefaultConfig(ctx)
	})
	if err != nil {
		return nil, err
	}

	secrets := secret.SecretsManager{Client: secretsmanager.NewFromConfig(awsCfg)}
	webCfg, err := web.ConfigFromEnv(getenv, secrets, log)
	if err != nil {
		return nil, err
	}
	webCfg.Grants = grants.New(s.Store)
	webCfg.Egress = s.Store
	webSvc, err := web.NewService(webCfg)
	if err != nil {
		return nil, err
	}
	s.Funcs = invoke.NewLocal(log)
	s.closers = append(s.closers, s.Funcs.Close)
	s.Funcs.Register(invoke.Webtools, webSvc.Invoke)

	s.Sandbox, err = local.New(local.Config{Workdir: o.Workdir, StateDir: o.StateDir, Env: o.Env, Binary: o.Sandboxd, Browser: o.Browser.Path,
		// As webCfg admits it for the web tools: the browser in sandboxd
		// follows the same egress policy.
		TestAllowAddr: getenv(egress.AllowEnv)})
	if err != nil {
		return nil, err
	}
	s.closers = append(s.closers, func() { s.Sandbox.Close() })
	// Callbacks go through the egress policy, which refuses this machine's
	// addresses unless AGENTSFLEET_TEST_ALLOW_ADDR names one.
	callbacks, err := callback.FromEnv(getenv, log)
	if err != nil {
		return nil, err
	}

	sched, err := eventbridge.New(scheduler.NewFromConfig(awsCfg), eventbridge.Config{Group: scheduleGroup,
		TargetARN: "arn:aws:lambda:" + emulator.Region + ":000000000000:function:agentsfleet-schedule",
		RoleARN:   "arn:aws:iam::000000000000:role/agentsfleet-scheduler"})
	if err != nil {
		return nil, err
	}
	if err := sched.EnsureGroup(ctx); err != nil {
		return nil, err
	}
	s.Schedules, err = keeper.New(keeper.Config{Store: s.Store, Scheduler: sched, Invoker: s.Funcs,
		Scrub: keeper.WebtoolsScrub(s.Store, s.Funcs), Log: log})
	if err != nil {
		return nil, err
	}
	// The clock invokes the schedule λ's handler, as Scheduler does.
	s.Funcs.Register(invoke.Schedule, s.Schedules.Handle)
	fire := func(ctx context.Context, input []byte) error {
		_, err := s.Funcs.Call(ctx, invoke.Schedule, input)
		return err
	}
	if s.Clock, err = clock.New(sched, fire, clock.Options{Logger: log}); err != nil {
		return nil, err
	}

	var sandboxes launch.Launcher = s.Sandbox
	if pool.FormatTargets(o.Warm) != "none" || pool.FormatTargets(o.BrowserWarm) != "none" {
		if sandboxes, err = s.startPool(ctx, o, log); err != nil {
			return nil, err
		}
	}

	// Off unless AGENTSFLEET_METRICS=on: then the EMF documents a
	// deployment's log would hold are printed.
	sink, err := metrics.FromEnv(getenv, os.Stdout)
	if err != nil {
		return nil, err
	}
	s.Metrics = sink != nil
	// Each run's cost as it would be deployed: its tokens at
	// AGENTSFLEET_MODEL_PRICES, its sandbox's time at Fargate's price.
	prices, err := cost.FromEnv(getenv)
	if err != nil {
		return nil, err
	}
	memory, err := cost.MemoryFromEnv(getenv)
	if err != nil {
		return nil, err
	}
	s.Runner, err = runner.New(runner.Config{
		Store:        s.Store,
		Model:        s.Model.Model,
		DefaultModel: s.Model.DefaultModel,
		Sandboxes:    sandboxes,
		NoBrowser:    o.Browser.Why,
		Invoker:      s.Funcs,
		// The emulator's Secrets Manager, as the web tools read: the
		// values of the secrets a fleet's setup step lists.
		Secrets: secrets,
		Blobs:   runner.S3Blobs{Client: s3c, Bucket: checkpointBucket},
		// Used only with the pool: the local launcher alone keeps each
		// fleet's folder in StateDir (a launch.Placer naming it), while a
		// pooled sandbox's folder is its own and empty until restored.
		Folders:       runner.S3Folders{Presign: s3.NewPresignClient(s3c), Client: s3c, Bucket: checkpointBucket},
		AlwaysFolders: s.Pool != nil,
		Callbacks:     callbacks,
		Schedules:     s.Schedules.Book(),
		Observer:      o.Observer,
		Metrics:       sink,
		Prices:        &prices,
		MemoryMiB:     memory,
		Log:           log,
	})
	if err != nil {
		return nil, err
	}
	// The runner function's handler, as its Lambda main registers it: runs,
	// child agents and improvement chats' turns.
	chats, err := agent.New(agent.Config{Store: s.Store, Model: s.Model.Model, DefaultModel: s.Model.DefaultModel, Invoker: s.Funcs, Log: log})
	if err != nil {
		return nil, err
	}
	s.Funcs.Register(invoke.Runner, improve.Dispatch(s.Runner.Handle, chats.Handle))
	if s.API, err = api.New(api.Config{Store: s.Store, Invoker: s.Funcs, Schedules: s.Schedules, Callbacks: callbacks, Log: log}); err != nil {
		return nil, err
	}
	if err := s.startSlack(getenv, secrets, log); err != nil {
		return nil, err
	}
	return s, nil
}

// startPool puts a warm pool over the local launcher, its records in the
// table, and fills it. Closing the stack drains it: every sandboxd it
// started is stopped and its record dropped.
func (s *stack) startPool(ctx context.Context, o stackOptions, log *slog.Logger) (*pool.Pool, error) {
	p, err := pool.New(pool.Config{Starter: s.Sandbox, Records: s.Store, Target: o.Warm, BrowserTarget: o.BrowserWarm, Logger: log})
	if err != nil {
		return nil, err
	}
	s.Pool, s.Warm, s.BrowserWarm = p, o.Warm, o.BrowserWarm
	sweeps, stopSweeps := context.WithCancel(context.Background())
	var sweeping sync.WaitGroup
	s.closers = append(s.closers, func() {
		stopSweeps()
		sweeping.Wait()
		dctx, cancel := context.WithTimeout(context.Background(), drainTimeout)
		defer cancel()
		if err := p.Drain(dctx); err != nil {
			log.Warn("stop the warm sandboxes", "err", err)
		}
	})
	for _, size := range fleet.SandboxSizes() {
		if o.Warm[size] == 0 && o.BrowserWarm[size] == 0 {
			continue
		}
		if _, err := p.TopUp(ctx, size); err != nil {
			return nil, fmt.Errorf("fill the warm pool: %w", err)
		}
	}
	if o.Sweep > 0 {
		sweeping.Go(func() {
			t := time.NewTicker(o.Sweep)
			defer t.Stop()
			for {
				select {
				case <-sweeps.Done():
					return
				case <-t.C:
					if err := p.Sweep(sweeps); err != nil && sweeps.Err() == nil {
						log.Warn("sweep the warm pool", "err", err)
					}
				}
			}
		})
	}
	return p, nil
}

// Close stops what the stack started, last first.
func (s *stack) Close() {
	for i := len(s.closers) - 1; i >= 0; i-- {
		s.closers[i]()
	}
	s.closers = nil
}
