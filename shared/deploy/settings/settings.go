// Package settings lists, for each of the Lambda functions, the variables
// its builder reads and which of them it cannot start without: the one
// place that says what a function reads (each builder's own Settings). The
// CDK stack (infra/) writes each variable's name through the component's
// constant, and its tests hold each function's environment in the
// template to this list. No function's main imports it: it links every
// function's components.
package settings

import (
	"github.com/agentsfleet/agentsfleet/shared/deploy/apifn"
	"github.com/agentsfleet/agentsfleet/shared/deploy/runnerfn"
	"github.com/agentsfleet/agentsfleet/shared/deploy/schedulefn"
	"github.com/agentsfleet/agentsfleet/shared/deploy/slackfn"
	"github.com/agentsfleet/agentsfleet/shared/deploy/webtoolsfn"
	"github.com/agentsfleet/agentsfleet/shared/setting"
)

// Of are the variables function's main reads (one of deploy.Functions),
// each with whether the function starts without it; nil for a name that
// is not one of them.
func Of(function string) []setting.Var {
	switch function {
	case "api":
		return apifn.Settings()
	case "runner":
		return runnerfn.Settings()
	case "schedule":
		return schedulefn.Settings()
	case "slack":
		return slackfn.Settings()
	case "webtools":
		return webtoolsfn.Settings()
	}
	return nil
}
