package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"

	"github.com/agentsfleet/agentsfleet/shared/emulator"
	"github.com/agentsfleet/agentsfleet/shared/invoke"
	"github.com/agentsfleet/agentsfleet/shared/model/provider"
	"github.com/agentsfleet/agentsfleet/shared/runner"
	"github.com/agentsfleet/agentsfleet/shared/sandbox/launch/local"
	"github.com/agentsfleet/agentsfleet/shared/secret"
	"github.com/agentsfleet/agentsfleet/shared/store"
	"github.com/agentsfleet/agentsfleet/shared/web"
)

// stack is agentsfleet on this machine: the AWS emulator (moto, or
// AWS_ENDPOINT_URL), the table and the checkpoint bucket, the webtools and
// the runner as in-process functions, and sandboxes as local sandboxd
// processes. `agentsfleet run` and `agentsfleet dev` both stand on it.
type stack struct {
	Endpoint string
	Table    string
	Store    *store.Store
	Funcs    *invoke.Local
	Runner   *runner.Runner
	Model    provider.Chosen
	Sandbox  *local.Launcher
	closers  []func()
}

// stackOptions say where the stack keeps things and who watches it.
type stackOptions struct {
	Workdir  string // the folder the sandboxes serve as the workdir
	StateDir string // the fleets' folders (/agent) and sandbox state
	Table    string
	Env      []string // variables the sandboxes' commands also get, besides PATH
	Sandboxd string   // the sandboxd binary; "" finds it beside agentsfleet or on PATH
	Observer func(runner.Note)
	Log      *slog.Logger
}

const checkpointBucket = "agentsfleet-checkpoints"

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

	webCfg, err := web.ConfigFromEnv(ctx, getenv, secret.SecretsManager{Client: secretsmanager.NewFromConfig(awsCfg)}, log)
	if err != nil {
		return nil, err
	}
	webSvc, err := web.NewService(webCfg)
	if err != nil {
		return nil, err
	}
	s.Funcs = invoke.NewLocal(log)
	s.closers = append(s.closers, s.Funcs.Close)
	s.Funcs.Register(invoke.Webtools, webSvc.Invoke)

	s.Sandbox, err = local.New(local.Config{Workdir: o.Workdir, StateDir: o.StateDir, Env: o.Env, Binary: o.Sandboxd})
	if err != nil {
		return nil, err
	}
	s.closers = append(s.closers, func() { s.Sandbox.Close() })

	s.Runner, err = runner.New(runner.Config{
		Store:        s.Store,
		Model:        s.Model.Model,
		DefaultModel: s.Model.DefaultModel,
		Sandboxes:    s.Sandbox,
		Invoker:      s.Funcs,
		Blobs:        runner.S3Blobs{Client: s3c, Bucket: checkpointBucket},
		Observer:     o.Observer,
		Log:          log,
	})
	if err != nil {
		return nil, err
	}
	s.Funcs.Register(invoke.Runner, s.Runner.Handle)
	return s, nil
}

// Close stops what the stack started, last first.
func (s *stack) Close() {
	for i := len(s.closers) - 1; i >= 0; i-- {
		s.closers[i]()
	}
	s.closers = nil
}
