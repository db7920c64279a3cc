// Package webtoolsfn builds the webtools function (functions/webtools):
// the web tools, the egress policy and the credential firewall, from its
// settings, as a deployment configures it (see package deploy). Its main
// imports it alone.
package webtoolsfn

import (
	"context"

	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"

	"github.com/agentsfleet/agentsfleet/shared/deploy"
	"github.com/agentsfleet/agentsfleet/shared/secret"
	"github.com/agentsfleet/agentsfleet/shared/setting"
	"github.com/agentsfleet/agentsfleet/shared/store"
	"github.com/agentsfleet/agentsfleet/shared/web"
	"github.com/agentsfleet/agentsfleet/shared/web/grants"
)

// Settings are the variables New reads, each with whether the function
// starts without it.
func Settings() []setting.Var {
	// The command line's mode switch, and the web tools' settings.
	return setting.Join([]setting.Var{{Name: setting.LambdaRuntimeAPI}}, web.Settings(), store.Settings())
}

// New is the webtools function: the web tools under the egress
// policy, the fleets' secrets (and the search key) read from Secrets
// Manager, and what each call may use read from the table by its run id
// (grants.Store); each call's requests go in its run's egress log in the
// same table. Its handler is Service.Invoke.
func New(_ context.Context, e deploy.Env) (*web.Service, error) {
	if err := setting.Check(e.Getenv, Settings(), "the webtools function"); err != nil {
		return nil, err
	}
	cfg, err := web.ConfigFromEnv(e.Getenv, secret.SecretsManager{Client: secretsmanager.NewFromConfig(e.AWS)}, e.Logger())
	if err != nil {
		return nil, err
	}
	st, err := store.FromEnv(e.Getenv, e.AWS)
	if err != nil {
		return nil, err
	}
	cfg.Grants = grants.New(st)
	cfg.Egress = st // each call's requests, in its run's egress log
	return web.NewService(cfg)
}
