package wire_test

import (
	"strings"
	"testing"
	"time"

	"github.com/agentsfleet/agentsfleet/shared/fleet"
	"github.com/agentsfleet/agentsfleet/shared/sandbox/wire"
)

// The header's bounds are the Definition's, so that every timeout a fleet
// can set reaches sandboxd and nothing else does.
func TestToolTimeoutBoundsAreTheDefinitions(t *testing.T) {
	t.Parallel()
	if got, want := wire.MinToolTimeout, fleet.MinToolTimeoutSeconds*time.Second; got != want {
		t.Errorf("MinToolTimeout = %v, want %v (fleet.MinToolTimeoutSeconds)", got, want)
	}
	if got, want := wire.MaxToolTimeout, fleet.MaxToolTimeoutSeconds*time.Second; got != want {
		t.Errorf("MaxToolTimeout = %v, want %v (fleet.MaxToolTimeoutSeconds)", got, want)
	}
}

func TestParseToolTimeout(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		values []string
		want   time.Duration
		err    string // "" for a good value
	}{
		{nil, 0, ""},
		{[]string{"1"}, time.Second, ""},
		{[]string{"120"}, 2 * time.Minute, ""},
		{[]string{"3600"}, time.Hour, ""},
		{[]string{"0030"}, 30 * time.Second, ""},
		{[]string{""}, 0, `is "": it must be whole seconds, 1 to 3600`},
		{[]string{"0"}, 0, "is 0: it must be whole seconds, 1 to 3600"},
		{[]string{"3601"}, 0, "is 3601: it must be whole seconds, 1 to 3600"},
		{[]string{"99999"}, 0, `is "99999": it must be whole seconds`},
		{[]string{"-5"}, 0, `is "-5"`},
		{[]string{"+5"}, 0, `is "+5"`},
		{[]string{"1.5"}, 0, `is "1.5"`},
		{[]string{"10s"}, 0, `is "10s"`},
		{[]string{"5, 6"}, 0, `is "5, 6"`},
		{[]string{strings.Repeat("9", 100)}, 0, `is "999999999999"…: it must be`},
		{[]string{"5", "6"}, 0, "given 2 times"},
	} {
		got, err := wire.ParseToolTimeout(tt.values)
		switch {
		case tt.err == "" && (err != nil || got != tt.want):
			t.Errorf("ParseToolTimeout(%q) = %v, %v; want %v", tt.values, got, err, tt.want)
		case tt.err != "" && (err == nil || got != 0 || !strings.Contains(err.Error(), tt.err) || !strings.Contains(err.Error(), wire.ToolTimeoutHeader)):
			t.Errorf("ParseToolTimeout(%q) = %v, %v; want an error naming %s and containing %q", tt.values, got, err, wire.ToolTimeoutHeader, tt.err)
		}
	}
}

func TestToolTimeoutValue(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		d    time.Duration
		want string // "" for a refusal
	}{
		{time.Second, "1"},
		{1500 * time.Millisecond, "2"},
		{time.Millisecond, "1"},
		{2 * time.Minute, "120"},
		{time.Hour, "3600"},
		{0, ""},
		{-time.Second, ""},
		{time.Hour + time.Millisecond, ""},
	} {
		got, err := wire.ToolTimeoutValue(tt.d)
		if got != tt.want || (err == nil) != (tt.want != "") {
			t.Errorf("ToolTimeoutValue(%v) = %q, %v; want %q", tt.d, got, err, tt.want)
			continue
		}
		if err != nil {
			continue
		}
		// What one side sends, the other accepts, as the rounded-up seconds.
		back, err := wire.ParseToolTimeout([]string{got})
		if err != nil || back < tt.d || back-tt.d >= time.Second {
			t.Errorf("ParseToolTimeout(ToolTimeoutValue(%v)) = %v, %v", tt.d, back, err)
		}
	}
}
