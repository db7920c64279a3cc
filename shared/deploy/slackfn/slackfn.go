// Package slackfn builds the slack function (functions/slack): Slack's request URLs and the runs' thread posts, from its settings, as a deployment
// configures it (see package deploy). Its main imports it alone.
package slackfn

import (
	"context"
	"errors"

	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"

	"github.com/agentsfleet/agentsfleet/shared/deploy"
	"github.com/agentsfleet/agentsfleet/shared/deploy/table"
	"github.com/agentsfleet/agentsfleet/shared/invoke"
	"github.com/agentsfleet/agentsfleet/shared/secret"
	"github.com/agentsfleet/agentsfleet/shared/setting"
	"github.com/agentsfleet/agentsfleet/shared/slack"
	"github.com/agentsfleet/agentsfleet/shared/store"
)

// calls are the functions it calls, and the settings that name them.
var calls = []invoke.Callee{{Function: invoke.Runner, Env: invoke.EnvRunner, Required: true}}

// Settings are the variables New reads, each with whether the function
// starts without it.
func Settings() []setting.Var {
	return setting.Join(store.Settings(), invoke.Settings(calls), slack.Settings())
}

// New is the slack function: Slack's request URLs and the runner's
// posts in runs' threads, its secrets in Secrets Manager, read on the
// first request that needs them. Its handler is Function.Invoke.
func New(_ context.Context, e deploy.Env) (*slack.Function, error) {
	getenv, log := e.Getenv, e.Logger()
	st, inv, err := table.Open(e, "slack", Settings(), calls)
	if err != nil {
		return nil, err
	}
	f, ok, err := slack.FromEnv(getenv, secret.SecretsManager{Client: secretsmanager.NewFromConfig(e.AWS)}, st, inv, log)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, errors.New("the slack function needs its secrets' settings")
	}
	return f, nil
}
