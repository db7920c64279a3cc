package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"

	"github.com/agentsfleet/agentsfleet/shared/secret"
	"github.com/agentsfleet/agentsfleet/shared/web"
	"github.com/agentsfleet/agentsfleet/shared/web/wire"
)

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
	req := wire.Request{Tool: tool, Arguments: json.RawMessage(raw), RunID: "cli"}
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
