package api

import (
	"net/http"

	"github.com/agentsfleet/agentsfleet/shared/fault"
)

// statuses is the status the API answers with for each product code. A
// code missing here answers 500; TestEveryCodeHasAStatus fails for it.
var statuses = map[fault.Code]int{
	// From the specification.
	fault.SchedFleetCap:    http.StatusConflict,
	fault.SchedPersonOwns:  http.StatusForbidden,
	fault.SchedNotRunnable: http.StatusConflict,
	fault.FleetPaused:      http.StatusConflict,
	fault.RunNoThread:      http.StatusConflict,
	fault.RunMessageCap:    http.StatusConflict,
	fault.ChildCapReached:  http.StatusConflict,
	fault.ChildToolNotHeld: http.StatusForbidden,
	fault.ChildNotFound:    http.StatusNotFound,

	// agentsfleet's own.
	fault.SchedTotalCap:     http.StatusConflict,
	fault.SchedNotFound:     http.StatusNotFound,
	fault.FleetNotFound:     http.StatusNotFound,
	fault.FleetExists:       http.StatusConflict,
	fault.RunNotFound:       http.StatusNotFound,
	fault.RunBadTransition:  http.StatusConflict,
	fault.RunLeaseHeld:      http.StatusLocked,
	fault.RunBudgetSpent:    http.StatusPaymentRequired,
	fault.ChildDepth:        http.StatusConflict,
	fault.DefinitionInvalid: http.StatusBadRequest,
	fault.ScopeMissing:      http.StatusForbidden,
	fault.RevisionNotFound:  http.StatusNotFound,
	fault.RequestInvalid:    http.StatusBadRequest,
	fault.KeyUnauthorized:   http.StatusUnauthorized,
	fault.KeyNotFound:       http.StatusNotFound,
	fault.SecretUnreadable:  http.StatusConflict,
	fault.HookUnauthorized:  http.StatusUnauthorized,
	fault.HookNoSecret:      http.StatusNotFound,
	fault.HookReplayed:      http.StatusConflict,
	fault.SlackUnauthorized: http.StatusUnauthorized,
	fault.ImproveNotFound:   http.StatusNotFound,
	fault.ImproveStale:      http.StatusConflict,
	fault.ImproveBusy:       http.StatusLocked,
	fault.ImproveClosed:     http.StatusGone,
	fault.ImproveNoProposal: http.StatusPreconditionFailed,
	fault.ApprovalNotFound:  http.StatusNotFound,
	fault.ApprovalDecided:   http.StatusConflict,
}

// Status returns the HTTP status for a request that failed with err: the
// status of the product code in err's chain (see fault.CodeOf), or 500
// Internal Server Error when err carries no code, which means a broken
// environment rather than a mistake the caller can fix. Status(nil) is
// 200 OK.
func Status(err error) int {
	if err == nil {
		return http.StatusOK
	}
	if c, ok := fault.CodeOf(err); ok {
		if s, ok := statuses[c]; ok {
			return s
		}
	}
	return http.StatusInternalServerError
}
