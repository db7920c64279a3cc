package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/agentsfleet/agentsfleet/shared/scope"
	"github.com/agentsfleet/agentsfleet/shared/store"
)

// table is `agentsfleet table create` and `agentsfleet table key`, which
// work on the DynamoDB table itself with the ordinary AWS configuration
// chain (AWS_ENDPOINT_URL points them at LocalStack or moto), not through
// the API.
func table(ctx context.Context, args []string, out io.Writer) error {
	if len(args) == 0 || (args[0] != "create" && args[0] != "key") {
		return fmt.Errorf("%w: table takes the subcommand create or key", errUsage)
	}
	if args[0] == "key" {
		return tableKey(ctx, args[1:], out)
	}
	fs := flag.NewFlagSet("table create", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	name := fs.String("name", envOr(store.EnvTable, "agentsfleet"), "table name")
	if err := fs.Parse(args[1:]); err != nil {
		return fmt.Errorf("%w: %v", errUsage, err)
	}
	if fs.NArg() != 0 {
		return fmt.Errorf("%w: table create takes no arguments, got %q", errUsage, fs.Args())
	}
	db, err := tableClient(ctx)
	if err != nil {
		return err
	}
	if err := store.CreateTable(ctx, db, *name); err != nil {
		return err
	}
	fmt.Fprintf(out, "table %s is ready\n", *name)
	return nil
}

// tableKey is `agentsfleet table key KEYNAME [--scopes a,b] [--fleets f,g]`: an API key
// written straight into the table, with AWS credentials that may write it.
// It is how a deployment gets its first key, since the API's own `keys
// create` needs a key holding keys:admin.
func tableKey(ctx context.Context, args []string, out io.Writer) error {
	fs := flag.NewFlagSet("table key", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	name := fs.String("name", envOr(store.EnvTable, "agentsfleet"), "table name")
	scopes := fs.String("scopes", "", "the key's scopes, comma-separated (default: every scope)")
	fleets := fs.String("fleets", "", fleetsUsage)
	if err := fs.Parse(args); err != nil {
		return fmt.Errorf("%w: %v", errUsage, err)
	}
	if fs.NArg() != 1 {
		return fmt.Errorf("%w: table key takes the key's name, such as: agentsfleet table key --name TABLE admin", errUsage)
	}
	list := scope.Names()
	if *scopes != "" {
		list = commaList(*scopes)
	}
	served, err := fleetList(fs, *fleets)
	if err != nil {
		return err
	}
	db, err := tableClient(ctx)
	if err != nil {
		return err
	}
	k, secret, err := store.New(db, *name).CreateKey(ctx, fs.Arg(0), list, served...)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "key %s (%s; %s; %s):\n%s\nthis is the only time it is shown: keep it now (AGENTSFLEET_API_KEY)\n",
		k.ID, k.Name, strings.Join(k.Scopes, ", "), fleetsText(k.Fleets), secret)
	return nil
}

// tableClient is DynamoDB by the ordinary AWS configuration chain.
func tableClient(ctx context.Context) (*dynamodb.Client, error) {
	cfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		return nil, fmt.Errorf("load AWS config: %w", err)
	}
	return dynamodb.NewFromConfig(cfg), nil
}

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

// commaList splits a comma-separated flag, dropping blanks around and
// between its items.
func commaList(s string) []string {
	var out []string
	for _, item := range strings.Split(s, ",") {
		if item = strings.TrimSpace(item); item != "" {
			out = append(out, item)
		}
	}
	return out
}
