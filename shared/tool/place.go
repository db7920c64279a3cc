package tool

import (
	"errors"
	"fmt"
)

// Location says which part of agentsfleet executes a tool. A product
// tool's contract carries it (About.RunsIn), and the runner sends each call
// there.
type Location string

// The places a tool can run.
const (
	// InSandbox: sandboxd, inside the run's Fargate sandbox.
	InSandbox Location = "sandbox"
	// InWebtools: the webtools λ, the egress side with the credential firewall.
	InWebtools Location = "webtools"
	// InRunner: the runner λ itself (control tools).
	InRunner Location = "runner"
	// InDisplay: the sandbox's headless browser, present only where the
	// image carries one; sandboxd serves these tools too.
	InDisplay Location = "display"
)

// known reports whether l is one of the four places.
func (l Location) known() bool {
	switch l {
	case InSandbox, InWebtools, InRunner, InDisplay:
		return true
	}
	return false
}

// The scopes an API key needs to apply a Definition that allows a tool; a
// product tool's contract carries its own (About.Scope). No scope implies
// another.
const (
	// ScopeFiles: read, glob, list — reading the agent's files.
	ScopeFiles = "tools:files"
	// ScopeSearch: grep, webfetch, websearch — searching files and the public web.
	ScopeSearch = "tools:search"
	// ScopeWrite: apply_patch — changing files in the writable roots, without
	// running anything.
	ScopeWrite = "tools:write"
	// ScopeExecute: bash, exec_command, write_stdin — running processes, the
	// strongest sandbox scope.
	ScopeExecute = "tools:execute"
	// ScopeNetwork: http_request, web_fetch, pushover — requests to the
	// fleet's network host list, with secrets filled in.
	ScopeNetwork = "tools:network"
	// ScopeControl: update_plan, message — talking to the thread that started the run.
	ScopeControl = "tools:control"
	// ScopeSchedule: the schedule tools and cron_run — starting later runs.
	ScopeSchedule = "tools:schedule"
	// ScopeAgents: the six child-agent tools — more agents on the run's budget.
	ScopeAgents = "tools:agents"
	// ScopeBrowser: browser_open, screenshot — driving a headless browser.
	ScopeBrowser = "tools:browser"
)

// Info is what the catalog of tools says about one: the part of a contract
// that is not for the model. Specs made without a place (About.RunsIn ""),
// such as tests', have only a Name.
type Info struct {
	// Name is the tool name a Definition lists and the model calls.
	Name string
	// Builtin is true for the seven tools of the built-in tools page
	// (read, grep, glob, list, bash, webfetch, websearch).
	Builtin bool
	// RunsIn is where the tool executes.
	RunsIn Location
	// Scope is the API-key scope needed to allow the tool in a Definition.
	Scope string
	// Summary is a one-line description for people (not the model prompt).
	Summary string
}

// check reports what is wrong with the Info of a product tool.
func (i Info) check() error {
	switch {
	case i.RunsIn == "":
		if i.Scope != "" || i.Builtin || i.Summary != "" {
			return errors.New("a scope, a summary or Builtin without a place (RunsIn)")
		}
	case !i.RunsIn.known():
		return fmt.Errorf("place %q is not sandbox, webtools, runner or display", i.RunsIn)
	case i.Scope == "":
		return errors.New("a place (RunsIn) without a scope")
	case i.Summary == "":
		return errors.New("a place (RunsIn) without a summary")
	}
	return nil
}
