package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"strings"
)

// slackCmd is `agentsfleet slack SUBCOMMAND`, a remote command: for now
// `slack route CHANNEL FLEET`.
func slackCmd(ctx context.Context, args []string, out io.Writer, getenv func(string) string) error {
	return remoteEnv{out: out, getenv: getenv, devKey: devKeyFile}.slack(ctx, args)
}

func (e remoteEnv) slack(ctx context.Context, args []string) error {
	if len(args) == 0 || strings.HasPrefix(args[0], "-") {
		return fmt.Errorf("%w: slack takes a subcommand: route", errUsage)
	}
	if args[0] != "route" {
		return fmt.Errorf("%w: slack has no subcommand %q; it has route", errUsage, args[0])
	}
	return e.slackRoute(ctx, args[1:])
}

// slackRoute is `agentsfleet slack route CHANNEL FLEET`: the app's
// mentions in the channel reach the fleet (PUT /v1/slack/routes/{channel}).
func (e remoteEnv) slackRoute(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("slack route", flag.ContinueOnError)
	c := connFlags(fs)
	s, pos, err := e.open(fs, c, args, "CHANNEL", "FLEET")
	if err != nil {
		return err
	}
	route, err := s.c.RouteSlackChannel(ctx, pos[0], pos[1])
	if err != nil {
		return s.fail(err)
	}
	if s.json {
		s.emit(route)
		return nil
	}
	fmt.Fprintf(s.out, "Slack channel %s routed to fleet %s: mentions of the app there start runs of %s\n", route.Channel, route.Fleet, route.Fleet)
	return nil
}
