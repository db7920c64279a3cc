// Package api is the edge of agentsfleet's HTTP API: the one place where
// product error codes (package fault) become HTTP statuses.
//
// The routes (fleets, runs, schedules, keys, webhooks and Slack's
// endpoints, as DESIGN.md lists them) are not built yet; for now the
// package holds only Status.
package api
