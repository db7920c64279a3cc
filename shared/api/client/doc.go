// Package client is a Go client of agentsfleet's HTTP API (DESIGN.md §11,
// served by shared/api): fleets, runs and their events, schedules and API
// keys. It is what the operator CLI (`agentsfleet apply`, `start`, …)
// speaks to `agentsfleet dev` or to a deployed API with.
//
// Error answers come back as *Error (errors.As), with the API's stable code
// and message; a request that reached no API comes back as
// *UnreachableError, naming the URL.
package client
