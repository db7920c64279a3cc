// Package fault holds agentsfleet's product error codes in one place: the
// ones the specification names (UZ-SCHED-009, child_cap_reached, …) and the
// ones agentsfleet adds in the same style. [Code.FromSpec] tells them apart.
//
// A code is a comparable value that is also an error, so callers match with
// errors.Is whatever wraps it:
//
//	err := fmt.Errorf("create schedule %s: %w", id, fault.SchedFleetCap)
//	errors.Is(err, fault.SchedFleetCap) // true
//
// Wrap a code with New to add a message the user sees; errors.Is still
// matches the code and errors.As finds the *Error. A code carries no HTTP
// status: the edge maps codes to statuses (package api, Status).
package fault

import (
	"errors"
	"fmt"
	"slices"
)

// Code is a product error code. The zero Code is not a valid code.
type Code struct {
	id       string
	text     string
	fromSpec bool
}

// ID is the code as the specification writes it, such as "UZ-SCHED-009".
func (c Code) ID() string { return c.id }

// FromSpec reports whether the specification names this code; the others
// are agentsfleet's own.
func (c Code) FromSpec() bool { return c.fromSpec }

// Error returns "ID: text".
func (c Code) Error() string { return c.id + ": " + c.text }

// Codes returns every code the package declares, in the order declared.
func Codes() []Code { return slices.Clone(all) }

// all is every code, filled as the declarations below run.
var all []Code

func declare(c Code) Code {
	all = append(all, c)
	return c
}

// specCode declares a code the specification names; ownCode one it does not.
func specCode(id, text string) Code { return declare(Code{id: id, text: text, fromSpec: true}) }
func ownCode(id, text string) Code  { return declare(Code{id: id, text: text}) }

// The codes the specification names, in its sections on child agents and
// limits. The texts, here and below, say what went wrong in the user's terms.
var (
	// Schedules.
	SchedFleetCap    = specCode("UZ-SCHED-009", "a fleet can create at most 16 schedules itself")
	SchedPersonOwns  = specCode("UZ-SCHED-010", "a schedule a person created can only be changed or deleted by a person")
	SchedNotRunnable = specCode("UZ-SCHED-011", "cron_run cannot run a paused schedule, a schedule being removed, or from a run a schedule started")

	// Fleets.
	FleetPaused = specCode("UZ-AGT-012", "the fleet is paused")

	// Runs.
	RunNoThread   = specCode("UZ-RUN-019", "this run has no Slack thread: it was started from the API, a webhook or a schedule")
	RunMessageCap = specCode("UZ-RUN-020", "a run can post at most 8 message lines")

	// Child agents (the specification writes these in lower case).
	ChildCapReached  = specCode("child_cap_reached", "a run has at most 4 children working at once and starts at most 16 in all")
	ChildToolNotHeld = specCode("child_tool_not_held", "a child can only hold tools its parent holds")
	ChildNotFound    = specCode("child_not_found", "this run never issued that child_id")
)

// agentsfleet's own codes, in the specification's style. Some name a limit
// the specification states without a code (32 schedules in all, two levels
// of children). UZ-RUN-402 (examples/reference.toml) and UZ-KEY-403 (the
// scopes of DESIGN.md) are among them: the specification names neither.
var (
	// Schedules.
	SchedTotalCap = ownCode("UZ-SCHED-008", "a fleet can hold at most 32 schedules")
	SchedNotFound = ownCode("UZ-SCHED-404", "no such schedule")

	// Fleets.
	FleetNotFound = ownCode("UZ-AGT-404", "no such fleet")
	FleetExists   = ownCode("UZ-AGT-409", "a fleet with that name already exists")

	// Runs.
	RunNotFound      = ownCode("UZ-RUN-404", "no such run")
	RunBadTransition = ownCode("UZ-RUN-409", "the run cannot move to that status from its current one")
	RunLeaseHeld     = ownCode("UZ-RUN-423", "another runner holds the run's lease")
	RunBudgetSpent   = ownCode("UZ-RUN-402", "the run's budget is spent")

	// Child agents.
	ChildDepth = ownCode("child_depth_reached", "child agents nest two levels deep")

	// Definitions and keys.
	DefinitionInvalid = ownCode("UZ-DEF-400", "the Definition is not valid")
	ScopeMissing      = ownCode("UZ-KEY-403", "the API key lacks a scope the Definition's tools need")
	// SlackUnauthorized is a Slack request whose signature does not verify.
	SlackUnauthorized = ownCode("UZ-SLACK-401", "the request is not signed with the Slack app's signing secret")
	RevisionNotFound  = ownCode("UZ-DEF-404", "no such Definition revision")
	// KeyUnauthorized never says whether the key was missing, malformed,
	// unknown or revoked.
	KeyUnauthorized = ownCode("UZ-KEY-401", "the API key is missing, not valid or revoked")
	KeyNotFound     = ownCode("UZ-KEY-404", "no such API key")
	// SecretUnreadable is text that must be screened for a fleet's secret
	// values (a schedule's message) while a secret cannot be read.
	SecretUnreadable = ownCode("UZ-SECRET-409", "a secret the fleet names cannot be read, so the text cannot be screened for its value")

	// Webhooks.
	HookUnauthorized = ownCode("UZ-HOOK-401", "the webhook delivery's signature or timestamp is missing, not valid or outside the 5-minute window")
	HookNoSecret     = ownCode("UZ-HOOK-404", "the fleet has no webhook secret: create one with POST /v1/fleets/{name}/webhook-secret")
	HookReplayed     = ownCode("UZ-HOOK-409", "this webhook delivery was seen before")

	// Improvement chats.
	ImproveNotFound   = ownCode("UZ-IMP-404", "no such improvement chat")
	ImproveStale      = ownCode("UZ-IMP-409", "the fleet changed since the proposal's from_revision: the proposal is stale and was not applied")
	ImproveBusy       = ownCode("UZ-IMP-423", "the chat's agent is still answering the last message")
	ImproveClosed     = ownCode("UZ-IMP-410", "the chat is closed: its proposal was applied or the chat discarded")
	ImproveNoProposal = ownCode("UZ-IMP-412", "the chat has no proposal to apply yet")

	// Approvals.
	ApprovalNotFound = ownCode("UZ-APR-404", "no such approval on this run")
	ApprovalDecided  = ownCode("UZ-APR-409", "the approval is no longer pending: it was decided, it expired, or its run ended")

	// Requests: an argument the caller can fix (wrap with New to say which).
	RequestInvalid = ownCode("UZ-REQ-400", "the request is not valid")
)

// Error is a code with a message of its own.
type Error struct {
	Code Code
	Msg  string
}

// New returns an error carrying code with a specific message.
func New(code Code, format string, args ...any) *Error {
	return &Error{Code: code, Msg: fmt.Sprintf(format, args...)}
}

func (e *Error) Error() string { return e.Code.id + ": " + e.Msg }

// Is reports whether target is e's code, so errors.Is(err, fault.X) matches.
func (e *Error) Is(target error) bool {
	c, ok := target.(Code)
	return ok && c == e.Code
}

// CodeOf returns the product code in err's chain, if there is one.
func CodeOf(err error) (Code, bool) {
	var fe *Error
	if errors.As(err, &fe) {
		return fe.Code, true
	}
	var c Code
	if errors.As(err, &c) {
		return c, true
	}
	return Code{}, false
}
