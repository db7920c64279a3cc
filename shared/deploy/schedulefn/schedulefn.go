// Package schedulefn builds the schedule function (functions/schedule), the target of EventBridge Scheduler, from its settings, as a deployment
// configures it (see package deploy). Its main imports it alone.
package schedulefn

import (
	"context"
	"errors"

	"github.com/agentsfleet/agentsfleet/shared/deploy"
	"github.com/agentsfleet/agentsfleet/shared/deploy/table"
	"github.com/agentsfleet/agentsfleet/shared/invoke"
	"github.com/agentsfleet/agentsfleet/shared/schedule/eventbridge"
	"github.com/agentsfleet/agentsfleet/shared/schedule/keeper"
	"github.com/agentsfleet/agentsfleet/shared/setting"
	"github.com/agentsfleet/agentsfleet/shared/store"
)

// calls are the functions it calls, and the settings that name them.
var calls = []invoke.Callee{
	{Function: invoke.Runner, Env: invoke.EnvRunner, Required: true},
	{Function: invoke.Webtools, Env: invoke.EnvWebtools}, // a firing saves no message: nothing is scrubbed
}

// Settings are the variables New reads, each with whether the function
// starts without it.
func Settings() []setting.Var {
	// Scheduler's group, target and role: the schedule function is
	// nothing without them.
	return setting.Join(store.Settings(), invoke.Settings(calls), setting.Required(eventbridge.Settings()), keeper.Settings())
}

// New is the schedule function, the target of EventBridge
// Scheduler: the Keeper over the table and the deployment's schedule
// group, starting runs on the runner. Its handler is Keeper.Handle.
func New(_ context.Context, e deploy.Env) (*keeper.Keeper, error) {
	getenv, log := e.Getenv, e.Logger()
	st, inv, err := table.Open(e, "schedule", Settings(), calls)
	if err != nil {
		return nil, err
	}
	k, ok, err := keeper.FromEnv(getenv, e.AWS, st, inv, log)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, errors.New("the schedule function needs its Scheduler settings")
	}
	return k, nil
}
