package eventbridge_test

import (
	"os"
	"testing"
	"time"

	"github.com/agentsfleet/agentsfleet/shared/schedule/eventbridge"
)

// TestParseSweep: the sweep schedule's Input is a sweep, with the
// function's grace or the payload's; a firing's Payload is not; a sweep
// with a field it does not know or a negative grace is refused.
func TestParseSweep(t *testing.T) {
	t.Parallel()
	if got := string(eventbridge.SweepInput()); got != `{"kind":"sweep"}` {
		t.Fatalf("SweepInput = %s", got)
	}
	def := 2 * time.Minute
	for _, tc := range []struct {
		in    string
		ok    bool
		bad   bool
		grace time.Duration
	}{
		{`{"kind":"sweep"}`, true, false, def},
		{`{"kind": "sweep", "grace_seconds": 0}`, true, false, 0},
		{`{"kind": "sweep", "grace_seconds": 30}`, true, false, 30 * time.Second},
		{`{"kind": "sweep", "grace_seconds": -1}`, true, true, 0},
		{`{"kind": "sweep", "fleet": "ops"}`, true, true, 0},
		{`{"fleet": "ops", "schedule_id": "sch_1"}`, false, false, 0},
		{`{"kind": "other"}`, false, false, 0},
		{`not json`, false, false, 0},
	} {
		p, ok, err := eventbridge.ParseSweep([]byte(tc.in))
		if ok != tc.ok || (err != nil) != tc.bad {
			t.Errorf("ParseSweep(%s) = ok %v, err %v; want ok %v, refused %v", tc.in, ok, err, tc.ok, tc.bad)
			continue
		}
		if ok && !tc.bad {
			if got := p.Grace(def); got != tc.grace {
				t.Errorf("ParseSweep(%s).Grace = %v, want %v", tc.in, got, tc.grace)
			}
		}
	}
	if _, err := eventbridge.ParsePayload(eventbridge.SweepInput()); err == nil {
		t.Error("ParsePayload accepts the sweep's Input as a firing")
	}
}

// TestSweepSampleEvent: events/schedule/sweep.json, the payload the
// deployment's sweep schedule sends the schedule function, is a sweep.
func TestSweepSampleEvent(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile("../../../events/schedule/sweep.json")
	if err != nil {
		t.Fatal(err)
	}
	p, ok, err := eventbridge.ParseSweep(b)
	if !ok || err != nil || p.GraceSeconds != nil {
		t.Fatalf("ParseSweep(%s) = %+v, ok %v, %v; want a sweep with the function's grace", b, p, ok, err)
	}
	want, _, _ := eventbridge.ParseSweep(eventbridge.SweepInput())
	if p.Kind != want.Kind {
		t.Errorf("the sample %s is not the sweep schedule's Input %s", b, eventbridge.SweepInput())
	}
}
