package egress

import (
	"io"
	"log/slog"
	"net/netip"
	"testing"
)

// The Control hook is the second line: it must refuse on its own, whatever
// the checks before it decided.
func TestControlRefusesOnItsOwn(t *testing.T) {
	t.Parallel()
	d := &Dialer{
		Policy: Policy{Ports: []uint16{443}, Allow: netip.MustParseAddrPort("127.0.0.1:4000")},
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	}
	tests := []struct {
		addr string
		ok   bool
	}{
		{"10.0.0.1:443", false},
		{"169.254.169.254:443", false},
		{"[::ffff:127.0.0.1]:443", false},
		{"127.0.0.1:4001", false},
		{"8.8.8.8:80", false}, // port
		{"not-an-address", false},
		{"127.0.0.1:4000", true},
		{"8.8.8.8:443", true},
	}
	for _, tt := range tests {
		err := d.control("tcp4", tt.addr, nil)
		if got := err == nil; got != tt.ok {
			t.Errorf("control(%s) = %v, want allowed %v", tt.addr, err, tt.ok)
		}
	}
}
