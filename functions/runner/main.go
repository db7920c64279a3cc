// Command runner is the runner λ: the agent loop (shared/runner). Its
// payload is {"run_id": "…"}, sent by the API when a run starts and by the
// runner itself when an invocation nears its deadline (InvocationType
// Event).
//
// Settings (environment):
//
//	AGENTSFLEET_TABLE                 the DynamoDB table
//	AGENTSFLEET_CHECKPOINT_BUCKET     S3 bucket for checkpoints larger than an item (optional)
//	AGENTSFLEET_FUNCTION_WEBTOOLS     the webtools function's name or ARN
//	AGENTSFLEET_MODEL_PROVIDER        bedrock (default), anthropic, openai or scripted; see shared/model/provider
//	AGENTSFLEET_MODEL                 the model id for Definitions that name none
//	AWS_LAMBDA_FUNCTION_NAME          set by Lambda: the runner invokes itself by it
package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	awslambda "github.com/aws/aws-sdk-go-v2/service/lambda"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/agentsfleet/agentsfleet/shared/invoke"
	"github.com/agentsfleet/agentsfleet/shared/model/provider"
	"github.com/agentsfleet/agentsfleet/shared/runner"
	"github.com/agentsfleet/agentsfleet/shared/sandbox/launch"
	"github.com/agentsfleet/agentsfleet/shared/store"
)

// noSandboxes is why sandbox tools cannot run in AWS yet.
const noSandboxes = "this deployment has no sandboxes yet: sandboxes on ECS Fargate come with agentsfleet's sandbox fleet, which is not built; the file and shell tools run only with `agentsfleet run` and `agentsfleet dev` for now"

func main() {
	log := slog.New(slog.NewJSONHandler(os.Stderr, nil))
	r, err := newRunner(context.Background(), os.Getenv, log)
	if err != nil {
		log.Error("runner: cannot start", "error", err)
		os.Exit(1)
	}
	lambda.Start(func(ctx context.Context, p runner.Payload) error {
		return r.Run(ctx, p.RunID)
	})
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
	awsCfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		return nil, fmt.Errorf("load the AWS configuration: %w", err)
	}
	chosen, err := provider.FromEnv(ctx, getenv, provider.Bedrock, func(context.Context) (aws.Config, error) { return awsCfg, nil })
	if err != nil {
		return nil, err
	}
	cfg := runner.Config{
		Store:        store.New(dynamodb.NewFromConfig(awsCfg), table),
		Model:        chosen.Model,
		DefaultModel: chosen.DefaultModel,
		Sandboxes:    launch.None{Why: noSandboxes},
		Invoker:      invoke.NewLambda(awslambda.NewFromConfig(awsCfg), map[string]string{invoke.Runner: self, invoke.Webtools: webtools}),
		Log:          log,
	}
	if bucket := getenv("AGENTSFLEET_CHECKPOINT_BUCKET"); bucket != "" {
		cfg.Blobs = runner.S3Blobs{Client: s3.NewFromConfig(awsCfg), Bucket: bucket}
	}
	log.Info("runner ready", "model", chosen.About, "table", table)
	return runner.New(cfg)
}
