// Command agentsfleet is the operator CLI: it checks Definitions, lists the
// tools, creates the DynamoDB table, and runs the local stack
// (`agentsfleet dev`).
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

const usage = `usage: agentsfleet COMMAND [ARGS]

commands:
  validate FILE...        check fleet Definitions (.toml or .json); prints each one's hash
  run -f DEFINITION [--workdir DIR] [--output json] [--state DIR] [--env NAME] INPUT
                          run the fleet once on this machine and print its events and answer
  tools [--output json] [TOOL...]
                          list the tools: where each runs, its scope, description and schema
  table create [--name N] create the DynamoDB table (against AWS_ENDPOINT_URL or AWS)
  dev [--workdir DIR] [--state DIR] [--table NAME]
                          run the product on this machine against moto (or AWS_ENDPOINT_URL)
`

// errUsage marks a mistake in the command line: exit status 2.
var errUsage = errors.New("usage")

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	switch {
	case err == nil:
	case errors.Is(err, errRunFailed): // the view said why
		os.Exit(1)
	case errors.Is(err, errUsage):
		fmt.Fprint(os.Stderr, err.Error(), "\n\n", usage)
		os.Exit(2)
	default:
		fmt.Fprintln(os.Stderr, "agentsfleet:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		return fmt.Errorf("%w: no command", errUsage)
	}
	switch args[0] {
	case "validate":
		return validate(args[1:], stdout)
	case "run":
		return runCmd(ctx, args[1:], stdout, stderr, os.Getenv)
	case "tools":
		return tools(args[1:], stdout)
	case "table":
		return table(ctx, args[1:], stdout)
	case "dev":
		return dev(ctx, args[1:], stdout, stderr)
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
		return nil
	}
	return fmt.Errorf("%w: unknown command %q", errUsage, args[0])
}
