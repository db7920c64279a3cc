package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/agentsfleet/agentsfleet/shared/store"
)

// table creates the DynamoDB table. It uses the ordinary AWS configuration
// chain, so AWS_ENDPOINT_URL points it at LocalStack or moto.
func table(ctx context.Context, args []string, out io.Writer) error {
	if len(args) == 0 || args[0] != "create" {
		return fmt.Errorf("%w: table takes the subcommand create", errUsage)
	}
	fs := flag.NewFlagSet("table create", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	name := fs.String("name", envOr("AGENTSFLEET_TABLE", "agentsfleet"), "table name")
	if err := fs.Parse(args[1:]); err != nil {
		return fmt.Errorf("%w: %v", errUsage, err)
	}
	cfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		return fmt.Errorf("load AWS config: %w", err)
	}
	if err := store.CreateTable(ctx, dynamodb.NewFromConfig(cfg), *name); err != nil {
		return err
	}
	fmt.Fprintf(out, "table %s is ready\n", *name)
	return nil
}

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}
