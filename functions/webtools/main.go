// Command webtools is the webtools λ: it runs agentsfleet's web tools
// (webfetch, websearch, web_fetch, http_request, pushover) under the egress
// policy and the credential firewall of package web. It is the only
// function that reads fleet secrets (AWS Secrets Manager).
//
// In Lambda (AWS_LAMBDA_RUNTIME_API is set) it serves invocations whose
// payload is a web.Request and whose response is a tool.Result,
// {"output": "…", "is_error": false}.
//
// Anywhere else it is a command line that runs one tool with the same
// production policy and prints exactly what the model would see:
//
//	webtools call [--hosts h1,h2,...] [--secrets-file FILE] TOOL 'JSON'
//
// Exit status: 0 for a normal result, 3 for an error result, 2 for bad
// usage, 1 when the environment is broken (for example an unreadable
// secret). --hosts is the fleet's network host list; --secrets-file holds
// NAME=value lines or a JSON object, and each NAME becomes a fleet secret.
// The deployment settings (search backend, the test-only
// AGENTSFLEET_TEST_ALLOW_ADDR) come from the environment as in Lambda.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"

	"github.com/agentsfleet/agentsfleet/shared/secret"
	"github.com/agentsfleet/agentsfleet/shared/web"
)

func main() {
	if os.Getenv("AWS_LAMBDA_RUNTIME_API") != "" {
		if err := serveLambda(context.Background()); err != nil {
			slog.Error("webtools: cannot start", "error", err)
			os.Exit(1)
		}
		return
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr, os.Getenv)
	stop()
	os.Exit(code)
}

// serveLambda wires Secrets Manager → web.Service → lambda.Start.
func serveLambda(ctx context.Context) error {
	log := slog.New(slog.NewJSONHandler(os.Stderr, nil))
	awsCfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		return fmt.Errorf("load AWS config: %w", err)
	}
	src := secret.SecretsManager{Client: secretsmanager.NewFromConfig(awsCfg)}
	cfg, err := web.ConfigFromEnv(os.Getenv, src, log)
	if err != nil {
		return err
	}
	svc, err := web.NewService(cfg)
	if err != nil {
		return err
	}
	lambda.Start(svc.Call)
	return nil
}

const usage = `usage: webtools call [--hosts h1,h2,...] [--secrets-file FILE] TOOL 'JSON'

Runs one web tool with the production egress policy and prints what the
model would see. TOOL is one of: %s.
Exit status: 0 normal result, 3 error result, 2 bad usage, 1 broken environment.
`

// Exit statuses.
const (
	exitOK       = 0
	exitBroken   = 1
	exitUsage    = 2
	exitToolFail = 3
)

// run is the command line. It returns the exit status.
func run(ctx context.Context, args []string, stdout, stderr io.Writer, getenv func(string) string) int {
	var names []string
	for _, spec := range web.Specs() {
		names = append(names, spec.Name())
	}
	bad := func(format string, a ...any) int {
		if format != "" {
			fmt.Fprintf(stderr, "webtools: "+format+"\n", a...)
		}
		fmt.Fprintf(stderr, usage, strings.Join(names, ", "))
		return exitUsage
	}
	if len(args) == 0 || args[0] != "call" {
		return bad("")
	}
	fs := flag.NewFlagSet("webtools call", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	hosts := fs.String("hosts", "", "the fleet's network host list, comma-separated")
	secretsFile := fs.String("secrets-file", "", "NAME=value lines or a JSON object; each NAME becomes a fleet secret")
	if err := fs.Parse(args[1:]); err != nil {
		return bad("%v", err)
	}
	if fs.NArg() != 2 {
		return bad("want TOOL and 'JSON', got %d arguments", fs.NArg())
	}
	tool, raw := fs.Arg(0), strings.TrimSpace(fs.Arg(1))
	if !slices.Contains(names, tool) {
		return bad("unknown tool %q", tool)
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal([]byte(raw), &obj); err != nil || obj == nil {
		return bad("the arguments must be a JSON object, such as '{\"url\": \"https://example.com/\"}'")
	}
	req := web.Request{Tool: tool, Arguments: json.RawMessage(raw), RunID: "cli"}
	for _, h := range strings.Split(*hosts, ",") {
		if h = strings.TrimSpace(h); h != "" {
			req.Hosts = append(req.Hosts, h)
		}
	}
	values := secret.Map{}
	if *secretsFile != "" {
		m, err := secret.ReadFile(*secretsFile)
		if err != nil {
			return bad("%v", err)
		}
		values = m
		req.Secrets = map[string]string{}
		for name := range m {
			req.Secrets[name] = name // the file is the store: id = name
		}
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	cfg, err := web.ConfigFromEnv(getenv, values, log)
	if err != nil {
		fmt.Fprintf(stderr, "webtools: %v\n", err)
		return exitBroken
	}
	svc, err := web.NewService(cfg)
	if err != nil {
		fmt.Fprintf(stderr, "webtools: %v\n", err)
		return exitBroken
	}
	res, err := svc.Call(ctx, req)
	if err != nil {
		fmt.Fprintf(stderr, "webtools: %v\n", err)
		return exitBroken
	}
	fmt.Fprintln(stdout, res.Output)
	if res.IsError {
		return exitToolFail
	}
	return exitOK
}
