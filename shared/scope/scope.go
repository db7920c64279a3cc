// Package scope is the one list of the scopes an agentsfleet API key can
// carry and what each allows: the API scopes that guard the routes of the
// HTTP API, and the tool scopes of package fleet that a key needs to apply a
// Definition allowing a tool (DESIGN.md §4).
//
// Scopes match exactly; no scope implies another. KeysAdmin is the strongest
// of them in effect: a key holding it can create keys with any scope, so the
// API should let a key grant only scopes it holds itself.
//
// The package sits below package api so that package store can validate the
// scopes of a new key without importing the HTTP edge.
package scope

import (
	"fmt"
	"slices"
	"strings"

	"github.com/agentsfleet/agentsfleet/shared/fault"
	"github.com/agentsfleet/agentsfleet/shared/fleet"
)

// The API scopes. Each comment says which routes of DESIGN.md §11 it opens.
const (
	// FleetsRead: GET /v1/fleets and GET /v1/fleets/{name}.
	FleetsRead = "fleets:read"
	// FleetsWrite: PUT /v1/fleets/{name} (with the tool scopes of the
	// Definition), POST …/pause, …/resume, and …/webhook-secret together
	// with RunsWrite (the secret signs deliveries that start runs).
	FleetsWrite = "fleets:write"
	// RunsRead: GET /v1/fleets/{name}/runs, GET /v1/runs/{id},
	// GET /v1/runs/{id}/events and GET /v1/runs/{id}/egress.
	RunsRead = "runs:read"
	// RunsWrite: POST /v1/fleets/{name}/runs (with RunsRead too when it
	// continues a conversation) and POST /v1/runs/{id}/cancel.
	RunsWrite = "runs:write"
	// RunsApprove: POST /v1/runs/{id}/approvals/{approval_id}, deciding
	// a call that waits for a person ([x-agentsfleet.approval]).
	RunsApprove = "runs:approve"
	// SchedulesRead: GET /v1/fleets/{name}/schedules.
	SchedulesRead = "schedules:read"
	// SchedulesWrite: POST, PATCH and DELETE of schedules, and their
	// pause, resume and run.
	SchedulesWrite = "schedules:write"
	// SlackAdmin: PUT /v1/slack/routes/{channel}.
	SlackAdmin = "slack:admin"
	// KeysAdmin: POST /v1/keys, listing and revoking keys.
	KeysAdmin = "keys:admin"
)

// Info is one scope and what it allows, in words for a person.
type Info struct {
	Name   string
	Allows string
}

var api = []Info{
	{FleetsRead, "read fleets, their Definitions and revisions (and improvement chats, with runs:read)"},
	{FleetsWrite, "apply and restore Definitions (with the tool scopes they need), hold improvement chats (with runs:read) and apply their proposals, pause and resume fleets, create and rotate webhook secrets (with runs:write)"},
	{RunsRead, "read runs and their events"},
	{RunsWrite, "start and cancel runs (continuing a conversation needs runs:read too)"},
	{RunsApprove, "approve or deny the calls runs wait on ([x-agentsfleet.approval])"},
	{SchedulesRead, "list schedules"},
	{SchedulesWrite, "create, change, pause, resume, run and delete schedules"},
	{SlackAdmin, "route Slack channels to fleets"},
	{KeysAdmin, "create, list and revoke API keys (a key holding it can mint any scope)"},
}

// all is api followed by the tool scopes, each described by the tools it
// admits in a Definition, from package fleet's catalog.
var all = func() []Info {
	out := slices.Clone(api)
	tools := map[string][]string{}
	for _, t := range fleet.Tools() {
		tools[t.Scope] = append(tools[t.Scope], t.Name)
	}
	for _, s := range fleet.Scopes() {
		if s == fleet.ScopeMCP {
			out = append(out, Info{s, "apply a Definition with MCP servers ([[x-agentsfleet.mcp]]) and allowing their mcp__<server>__<tool> tools"})
			continue
		}
		out = append(out, Info{s, "apply a Definition allowing " + strings.Join(tools[s], ", ")})
	}
	return out
}()

// All returns every scope with what it allows: the API scopes in the order
// above, then the tool scopes sorted. The caller owns the slice.
func All() []Info { return slices.Clone(all) }

// Names returns the name of every scope, in the order of All.
func Names() []string {
	out := make([]string, len(all))
	for i, s := range all {
		out[i] = s.Name
	}
	return out
}

// Known reports whether name is a scope.
func Known(name string) bool {
	return slices.ContainsFunc(all, func(s Info) bool { return s.Name == name })
}

// Check returns nil when every name is a scope, and otherwise a
// fault.RequestInvalid error that names the unknown ones and lists the
// valid ones.
func Check(names []string) error {
	var bad []string
	for _, n := range names {
		if !Known(n) && !slices.Contains(bad, n) {
			bad = append(bad, n)
		}
	}
	if len(bad) == 0 {
		return nil
	}
	quoted := make([]string, len(bad))
	for i, b := range bad {
		quoted[i] = fmt.Sprintf("%q", b)
	}
	noun := "scope"
	if len(bad) > 1 {
		noun = "scopes"
	}
	return fault.New(fault.RequestInvalid, "unknown %s %s; valid scopes are %s",
		noun, strings.Join(quoted, ", "), strings.Join(Names(), ", "))
}
