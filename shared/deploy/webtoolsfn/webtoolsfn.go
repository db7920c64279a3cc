// Package webtoolsfn builds the webtools function (functions/webtools): the web tools, the egress policy and the credential firewall, from its settings, as a deployment
// configures it (see package deploy). Its main imports it alone.
package webtoolsfn

import (
	"context"

	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"

	"github.com/agentsfleet/agentsfleet/shared/deploy"
	"github.com/agentsfleet/agentsfleet/shared/secret"
	"github.com/agentsfleet/agentsfleet/shared/setting"
	"github.com/agentsfleet/agentsfleet/shared/web"
)

// Settings are the variables New reads, each with whether the function
// starts without it.
func Settings() []setting.Var {
	// The command line's mode switch, and the web tools' settings.
	return setting.Join([]setting.Var{{Name: setting.LambdaRuntimeAPI}}, web.Settings())
}

// New is the webtools function: the web tools under the egress
// policy, the fleets' secrets (and the search key) read from Secrets
// Manager. Its handler is Service.Invoke.
func New(_ context.Context, e deploy.Env) (*web.Service, error) {
	cfg, err := web.ConfigFromEnv(e.Getenv, secret.SecretsManager{Client: secretsmanager.NewFromConfig(e.AWS)}, e.Logger())
	if err != nil {
		return nil, err
	}
	return web.NewService(cfg)
}
