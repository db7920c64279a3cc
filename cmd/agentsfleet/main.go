// Command agentsfleet is the operator CLI: it checks Definitions, lists the
// tools, creates the DynamoDB table, runs the local stack (`agentsfleet
// dev`), and drives the HTTP API of the local stack or a deployment
// (apply, start, events, schedules, keys, …).
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
                          (Linux only: its sandbox is confined with seccomp and Landlock)
  tools [-f DEFINITION] [--output json] [TOOL...]
                          list the tools: where each runs, its scope, description and schema
                          (with -f, the Definition's declared tools among them)
  table create [--name N] create the DynamoDB table (against AWS_ENDPOINT_URL or AWS)
  table key KEYNAME [--name N] [--scopes a,b] [--fleets f,g]
                          write an API key (printed once; every scope unless --scopes, every
                          fleet unless --fleets) straight into the table with your AWS
                          credentials: a deployment's first key
  dev [--workdir DIR] [--state DIR] [--table NAME]
                          run the product on this machine against moto (or AWS_ENDPOINT_URL)
                          (Linux only, as run)
  version                 print this binary's version and system

commands against the HTTP API of agentsfleet dev or a deployment:
  apply -f FILE           apply a Definition (.toml or .json): its fleet's next revision
  fleets                  list the fleets
  pause FLEET             pause a fleet: it starts no runs until resumed
  resume FLEET            resume a paused fleet
  start FLEET INPUT [--follow]
                          start a run; --follow shows it as run does, exit 0 if it succeeded
  runs FLEET [--cursor C] list a fleet's runs, newest first
  events RUN [--follow]   print a run's events; --follow until it ends, exit 0 if it succeeded
  cancel RUN              cancel a run that has not ended
  approve RUN APPROVAL [--note TEXT]
  deny RUN APPROVAL [--note TEXT]
                          approve or deny a call a run waits on ([x-agentsfleet.approval]);
                          GET /v1/runs/{id}'s pending_approvals lists them
  egress RUN [--cursor C] list every outbound request of a run (web tools, MCP, callbacks)
  schedules FLEET         list a fleet's schedules
  schedule create FLEET --expression E --message M [--timezone TZ] [--spend-cap TOKENS]
                          create a schedule: E is cron(…), rate(…) or at(yyyy-mm-ddThh:mm:ss)
  schedule delete FLEET ID
  schedule pause FLEET ID
  schedule resume FLEET ID
  schedule run FLEET ID   delete, pause, resume a schedule, or start its run now
  keys create NAME --scopes a,b [--fleets f,g]
                          create an API key (printed once) with those scopes, serving those
                          fleets (default: those of your key, every fleet for a deployment-wide one)
  keys list               list the API keys
  keys revoke ID          revoke an API key
  improve FLEET           an improvement chat in the terminal: say what should change, read
                          the agent's proposal as a diff, then apply, discard or keep talking
  revisions FLEET [--diff A B]
                          list a fleet's revisions (who, from where, when, the chat), or the
                          diff between two of them
  slack route CHANNEL FLEET
                          route a Slack channel (its id, such as C0123456789) to a fleet

Each of them also takes --api URL (else AGENTSFLEET_API_URL, else the local stack:
http://$AGENTSFLEET_ADDR or http://127.0.0.1:8080), --key KEY (else AGENTSFLEET_API_KEY,
else, for the local stack, .dev/api-key) and --output json (one JSON object, or one a line
for lists and events).
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
		return tools(args[1:], stdout, os.Getenv)
	case "table":
		return table(ctx, args[1:], stdout)
	case "dev":
		return dev(ctx, args[1:], stdout, stderr, os.Getenv)
	case "version":
		return versionCmd(args[1:], stdout)
	case "apply", "fleets", "pause", "resume", "start", "runs", "events", "egress", "cancel", "approve", "deny", "schedules", "schedule", "keys", "revisions":
		return remote(ctx, args, stdout, os.Getenv)
	case "improve":
		return improveCmd(ctx, args[1:], os.Stdin, stdout, os.Getenv)
	case "slack":
		return slackCmd(ctx, args[1:], stdout, os.Getenv)
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
		return nil
	}
	return fmt.Errorf("%w: unknown command %q", errUsage, args[0])
}
