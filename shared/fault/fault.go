// Package fault holds agentsfleet's product error codes, the ones the
// specification names (UZ-SCHED-009, child_cap_reached, …), in one place.
//
// A code is a comparable value that is also an error, so callers match with
// errors.Is whatever wraps it:
//
//	err := fmt.Errorf("create schedule %s: %w", id, fault.SchedFleetCap)
//	errors.Is(err, fault.SchedFleetCap) // true
//
// Wrap a code with New to add a message the user sees; errors.Is still
// matches the code and errors.As finds the *Error. HTTP statuses are
// attached here so that the edge (API, Slack) maps codes in one way.
package fault

import (
	"errors"
	"fmt"
	"net/http"
)

// Code is a product error code. The zero Code is not a valid code.
type Code struct {
	id     string
	status int
	text   string
}

// ID is the code as the specification writes it, such as "UZ-SCHED-009".
func (c Code) ID() string { return c.id }

// HTTPStatus is the status the API answers with for this code.
func (c Code) HTTPStatus() int { return c.status }

// Error returns "ID: text".
func (c Code) Error() string { return c.id + ": " + c.text }

// The codes. The texts say what went wrong in the user's terms.
var (
	// Schedules.
	SchedFleetCap    = Code{"UZ-SCHED-009", http.StatusConflict, "a fleet can create at most 16 schedules itself"}
	SchedPersonOwns  = Code{"UZ-SCHED-010", http.StatusForbidden, "a schedule a person created can only be changed or deleted by a person"}
	SchedNotRunnable = Code{"UZ-SCHED-011", http.StatusConflict, "cron_run cannot run a paused schedule, a schedule being removed, or from a run a schedule started"}
	SchedTotalCap    = Code{"UZ-SCHED-008", http.StatusConflict, "a fleet can hold at most 32 schedules"}
	SchedNotFound    = Code{"UZ-SCHED-404", http.StatusNotFound, "no such schedule"}

	// Fleets and agents.
	FleetPaused   = Code{"UZ-AGT-012", http.StatusConflict, "the fleet is paused"}
	FleetNotFound = Code{"UZ-AGT-404", http.StatusNotFound, "no such fleet"}
	FleetExists   = Code{"UZ-AGT-409", http.StatusConflict, "a fleet with that name already exists"}

	// Runs.
	RunNoThread      = Code{"UZ-RUN-019", http.StatusConflict, "this run has no Slack thread: it was started from the API, a webhook or a schedule"}
	RunMessageCap    = Code{"UZ-RUN-020", http.StatusConflict, "a run can post at most 8 message lines"}
	RunNotFound      = Code{"UZ-RUN-404", http.StatusNotFound, "no such run"}
	RunBadTransition = Code{"UZ-RUN-409", http.StatusConflict, "the run cannot move to that status from its current one"}
	RunLeaseHeld     = Code{"UZ-RUN-423", http.StatusLocked, "another runner holds the run's lease"}
	RunBudgetSpent   = Code{"UZ-RUN-402", http.StatusPaymentRequired, "the run's budget is spent"}

	// Child agents (the specification writes these in lower case).
	ChildCapReached  = Code{"child_cap_reached", http.StatusConflict, "a run has at most 4 children working at once and starts at most 16 in all"}
	ChildToolNotHeld = Code{"child_tool_not_held", http.StatusForbidden, "a child can only hold tools its parent holds"}
	ChildNotFound    = Code{"child_not_found", http.StatusNotFound, "this run never issued that child_id"}
	ChildDepth       = Code{"child_depth_reached", http.StatusConflict, "child agents nest two levels deep"}

	// Definitions.
	DefinitionInvalid = Code{"UZ-DEF-400", http.StatusBadRequest, "the Definition is not valid"}
	ScopeMissing      = Code{"UZ-KEY-403", http.StatusForbidden, "the API key lacks a scope the Definition's tools need"}
	RevisionNotFound  = Code{"UZ-DEF-404", http.StatusNotFound, "no such Definition revision"}

	// Requests: an argument the caller can fix (wrap with New to say which).
	RequestInvalid = Code{"UZ-REQ-400", http.StatusBadRequest, "the request is not valid"}
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
