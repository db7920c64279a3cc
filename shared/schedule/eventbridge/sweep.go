package eventbridge

import (
	"bytes"
	"encoding/json"
	"fmt"
	"time"
)

// SweepPayload is the schedule function's other payload, beside Payload:
// the Input of the deployment's sweep schedule (a rate(5 minutes) schedule
// the stack defines, and `agentsfleet dev`'s ticker), which has the
// function re-invoke the runner on every run and child agent that no live
// invocation executes (schedule/keeper, Keeper.Sweep):
//
//	{"kind": "sweep"}
//	{"kind": "sweep", "grace_seconds": 0}
//
// GraceSeconds, when present, replaces the function's grace (how long a
// run may go without a holder before it is swept, AGENTSFLEET_SWEEP_GRACE_SECONDS)
// for this sweep; a test that killed a runner sweeps at once with 0. No
// grace makes a live holder's run swept: a live holder's lease never runs
// out.
type SweepPayload struct {
	Kind         string `json:"kind"` // KindSweep
	GraceSeconds *int   `json:"grace_seconds,omitempty"`
}

// KindSweep is SweepPayload's kind.
const KindSweep = "sweep"

// SweepInput is the sweep schedule's Input: {"kind":"sweep"}.
func SweepInput() []byte { return SweepPayload{Kind: KindSweep}.Marshal() }

// Marshal returns the payload's JSON.
func (p SweepPayload) Marshal() []byte {
	b, _ := json.Marshal(p) // a string and an int: cannot fail
	return b
}

// Grace is the sweep's grace: GraceSeconds when set, else def.
func (p SweepPayload) Grace(def time.Duration) time.Duration {
	if p.GraceSeconds == nil {
		return def
	}
	return time.Duration(*p.GraceSeconds) * time.Second
}

// ParseSweep reports whether b is a SweepPayload (its kind is "sweep") and
// reads it, refusing fields it does not know and a negative grace. ok is
// false, with no error, for anything else (a Payload).
func ParseSweep(b []byte) (p SweepPayload, ok bool, err error) {
	var kind struct {
		Kind string `json:"kind"`
	}
	if json.Unmarshal(b, &kind) != nil || kind.Kind != KindSweep {
		return SweepPayload{}, false, nil
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&p); err != nil {
		return SweepPayload{}, true, fmt.Errorf("sweep payload: %w", err)
	}
	if p.GraceSeconds != nil && *p.GraceSeconds < 0 {
		return SweepPayload{}, true, fmt.Errorf("sweep payload %s: grace_seconds must not be negative", b)
	}
	return p, true, nil
}
