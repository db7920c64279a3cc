package api

import (
	"errors"
	"fmt"
	"net/http"
	"testing"

	"github.com/agentsfleet/agentsfleet/shared/fault"
)

func TestStatus(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		err  error
		want int
	}{
		{"no error", nil, http.StatusOK},
		{"no code", errors.New("read run item: connection reset"), http.StatusInternalServerError},
		{"no code, wrapped", fmt.Errorf("commit step 3: %w", errors.New("throttled")), http.StatusInternalServerError},
		{"bare code", fault.RunNotFound, http.StatusNotFound},
		{"wrapped code", fmt.Errorf("create schedule s1: %w", fault.SchedFleetCap), http.StatusConflict},
		{"code with a message", fmt.Errorf("spawn: %w", fault.New(fault.ChildToolNotHeld, "the parent lacks bash")), http.StatusForbidden},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := Status(tt.err); got != tt.want {
				t.Errorf("Status(%v) = %d, want %d", tt.err, got, tt.want)
			}
		})
	}
}

// TestEveryCodeHasAStatus fails for a code the API has no status for, and
// pins each code's status.
func TestEveryCodeHasAStatus(t *testing.T) {
	t.Parallel()
	want := map[string]int{
		"UZ-SCHED-009":        http.StatusConflict,
		"UZ-SCHED-010":        http.StatusForbidden,
		"UZ-SCHED-011":        http.StatusConflict,
		"UZ-AGT-012":          http.StatusConflict,
		"UZ-RUN-019":          http.StatusConflict,
		"UZ-RUN-020":          http.StatusConflict,
		"child_cap_reached":   http.StatusConflict,
		"child_tool_not_held": http.StatusForbidden,
		"child_not_found":     http.StatusNotFound,
		"UZ-SCHED-008":        http.StatusConflict,
		"UZ-SCHED-404":        http.StatusNotFound,
		"UZ-AGT-404":          http.StatusNotFound,
		"UZ-AGT-409":          http.StatusConflict,
		"UZ-RUN-404":          http.StatusNotFound,
		"UZ-RUN-409":          http.StatusConflict,
		"UZ-RUN-423":          http.StatusLocked,
		"UZ-RUN-402":          http.StatusPaymentRequired,
		"child_depth_reached": http.StatusConflict,
		"UZ-DEF-400":          http.StatusBadRequest,
		"UZ-KEY-403":          http.StatusForbidden,
		"UZ-DEF-404":          http.StatusNotFound,
		"UZ-REQ-400":          http.StatusBadRequest,
		"UZ-KEY-401":          http.StatusUnauthorized,
		"UZ-KEY-404":          http.StatusNotFound,
		"UZ-SECRET-409":       http.StatusConflict,
		"UZ-HOOK-401":         http.StatusUnauthorized,
		"UZ-HOOK-404":         http.StatusNotFound,
		"UZ-HOOK-409":         http.StatusConflict,
		"UZ-SLACK-401":        http.StatusUnauthorized,
		"UZ-IMP-404":          http.StatusNotFound,
		"UZ-IMP-409":          http.StatusConflict,
		"UZ-IMP-423":          http.StatusLocked,
		"UZ-IMP-410":          http.StatusGone,
		"UZ-IMP-412":          http.StatusPreconditionFailed,
		"UZ-APR-404":          http.StatusNotFound,
		"UZ-APR-409":          http.StatusConflict,
	}
	codes := fault.Codes()
	if len(codes) != len(want) {
		t.Errorf("fault has %d codes, this test's table %d: add or remove the difference", len(codes), len(want))
	}
	for _, c := range codes {
		t.Run(c.ID(), func(t *testing.T) {
			t.Parallel()
			if _, ok := statuses[c]; !ok {
				t.Fatalf("statuses has no entry for %s (%v)", c.ID(), c)
			}
			w, ok := want[c.ID()]
			if !ok {
				t.Fatalf("this test's table has no status for %s", c.ID())
			}
			if got := Status(fmt.Errorf("op: %w", c)); got != w {
				t.Errorf("Status(%s) = %d, want %d", c.ID(), got, w)
			}
		})
	}
}
