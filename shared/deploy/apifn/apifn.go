// Package apifn builds the api function (functions/api): the HTTP API, from its settings, as a deployment
// configures it (see package deploy). Its main imports it alone.
package apifn

import (
	"context"

	"github.com/agentsfleet/agentsfleet/shared/api"
	"github.com/agentsfleet/agentsfleet/shared/callback"
	"github.com/agentsfleet/agentsfleet/shared/deploy"
	"github.com/agentsfleet/agentsfleet/shared/deploy/table"
	"github.com/agentsfleet/agentsfleet/shared/invoke"
	"github.com/agentsfleet/agentsfleet/shared/schedule/keeper"
	"github.com/agentsfleet/agentsfleet/shared/setting"
	"github.com/agentsfleet/agentsfleet/shared/store"
)

// calls are the functions it calls, and the settings that name them.
var calls = []invoke.Callee{
	{Function: invoke.Runner, Env: invoke.EnvRunner, Required: true},
	{Function: invoke.Webtools, Env: invoke.EnvWebtools, Required: true}, // it scrubs schedule messages
}

// Settings are the variables New reads, each with whether the function
// starts without it.
func Settings() []setting.Var {
	return setting.Join(store.Settings(), invoke.Settings(calls), keeper.Settings(), callback.Settings())
}

// New is the api function: the HTTP API over the table, starting runs
// on the runner, with the fleets' schedules when the Scheduler settings are
// there (else the schedule routes answer that schedules are not
// configured). Its handler is API.HandleGateway, API Gateway's adapter
// over the http.Handler `agentsfleet dev` serves.
func New(_ context.Context, e deploy.Env) (*api.API, error) {
	getenv, log := e.Getenv, e.Logger()
	st, inv, err := table.Open(e, "api", Settings(), calls)
	if err != nil {
		return nil, err
	}
	callbacks, err := callback.FromEnv(getenv, log)
	if err != nil {
		return nil, err
	}
	cfg := api.Config{Store: st, Invoker: inv, Callbacks: callbacks, Log: log}
	k, ok, err := keeper.FromEnv(getenv, e.AWS, st, inv, log)
	if err != nil {
		return nil, err
	}
	if ok {
		cfg.Schedules = k
	}
	return api.New(cfg)
}
