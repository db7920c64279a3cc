// Package e2e holds the tests of the whole product on one machine, each
// driving it only through its public edges — a signed Slack event, the
// HTTP API, a signed webhook, the CLI — with local fakes of what lies
// outside: an OpenAI-compatible model server, the Slack Web API and a web
// server.
//
// TestProductEndToEnd starts `agentsfleet dev` as a process, as a person
// would. TestDeployedEndToEnd and TestDeployedSweep run the stack as AWS
// runs it: the synthesized template's functions as their real bootstraps,
// wired by the template (package e2e/deployment), so that what a
// deployment runs is what is tested.
package e2e
