// Package api is agentsfleet's HTTP API (DESIGN.md §11): fleets and their
// Definitions, runs and their events, schedules, API keys, and the fleets'
// signed webhooks. One handler (API) serves the api λ behind API Gateway's
// HTTP API (HandleGateway, payload format 2.0) and `agentsfleet dev` over
// net/http (ServeHTTP).
//
// It is the one place where product error codes (package fault) become
// HTTP statuses (Status). Keys are checked against the store (hashed, with
// scopes: shared/scope, and the fleets each serves); the route table
// (Routes) names each route's scopes and where it finds its fleet, which
// the key must serve. A Definition can be applied only by a key holding
// every scope its tools need. Runs are recorded and the runner
// started through start.Run, as every door does. Webhook signatures are
// shared/api/webhook's; completion callbacks are shared/callback's,
// sent by the runner as a run ends.
//
// PUT /v1/slack/routes/{channel} routes a Slack channel to a fleet; Slack's
// own endpoints (/slack/*) are shared/slack's, served by the slack
// function.
package api
