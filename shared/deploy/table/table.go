// Package table opens what the functions over agentsfleet's table share
// (the api, runner, schedule and slack functions' builders): their
// settings checked, the store, and the invoker of the functions each
// calls. The webtools function only reads the table (runs, revisions,
// children: what a call may use) and invokes nothing; it opens its store
// itself.
package table

import (
	"github.com/agentsfleet/agentsfleet/shared/deploy"
	"github.com/agentsfleet/agentsfleet/shared/invoke"
	"github.com/agentsfleet/agentsfleet/shared/setting"
	"github.com/agentsfleet/agentsfleet/shared/store"
)

// Open checks function's settings (its builder's Settings, an error naming
// every one missing) and returns the store of the table they name and the
// invoker of callees. It makes no AWS call.
func Open(e deploy.Env, function string, settings []setting.Var, callees []invoke.Callee) (*store.Store, invoke.Invoker, error) {
	if err := setting.Check(e.Getenv, settings, "the "+function+" function"); err != nil {
		return nil, nil, err
	}
	st, err := store.FromEnv(e.Getenv, e.AWS)
	if err != nil {
		return nil, nil, err
	}
	inv, err := e.Calls(callees)
	if err != nil {
		return nil, nil, err
	}
	return st, inv, nil
}
