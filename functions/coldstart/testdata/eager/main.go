// Command eager reads a secret before lambda.Start, as the functions must
// not: the cold-start test starts it to show that such a call is seen.
package main

import (
	"context"
	"encoding/json"
	"os"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
)

func main() {
	ctx := context.Background()
	cfg, err := config.LoadDefaultConfig(ctx, config.WithRetryMaxAttempts(1))
	if err != nil {
		os.Exit(1)
	}
	// The answer does not matter: the request is what the test looks for.
	secretsmanager.NewFromConfig(cfg).GetSecretValue(ctx, &secretsmanager.GetSecretValueInput{SecretId: aws.String("eager")})
	lambda.Start(func(context.Context, json.RawMessage) (string, error) { return "ok", nil })
}
