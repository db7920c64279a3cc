package proxy

import (
	"fmt"
	"net/http"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/agentsfleet/agentsfleet/shared/run"
	"github.com/agentsfleet/agentsfleet/shared/web/egress"
)

// drainUntil drains p until ok accepts what came (a flow ends a moment
// after its client's side closes), collecting every entry.
func drainUntil(t *testing.T, p *Proxy, ok func([]run.Egress) bool) []run.Egress {
	t.Helper()
	var all []run.Egress
	deadline := time.Now().Add(30 * time.Second)
	for {
		got, dropped := p.Drain()
		if dropped != 0 {
			t.Fatalf("Drain dropped %d entries, want none", dropped)
		}
		all = append(all, got...)
		if ok(all) {
			return all
		}
		if time.Now().After(deadline) {
			t.Fatalf("Drain never gave what was wanted; got %+v", all)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestDrainReportsATunnelsBytesOnceEach(t *testing.T) {
	t.Parallel()
	up, _ := echo(t)
	p := newProxy(t, Config{Allow: up})
	c, br := openTunnel(t, p, up.String())
	defer c.Close()
	for range 3 {
		roundTrip(t, c, br)
	}
	// Open, it is reported for what it carried so far.
	first, _ := p.Drain()
	if len(first) != 1 || first[0].Method != http.MethodConnect || first[0].Host != up.Addr().String() ||
		first[0].Port != int(up.Port()) || first[0].BytesOut != 3 || first[0].BytesIn != 3 || first[0].Refused {
		t.Fatalf("Drain with the tunnel open = %+v, want one CONNECT of 3 bytes each way", first)
	}
	// Nothing more carried: nothing more reported.
	if again, _ := p.Drain(); len(again) != 0 {
		t.Fatalf("a second Drain with nothing carried = %+v, want none", again)
	}
	roundTrip(t, c, br)
	c.Close()
	rest := drainUntil(t, p, func(es []run.Egress) bool { return len(es) == 1 })
	if rest[0].BytesOut != 1 || rest[0].BytesIn != 1 {
		t.Fatalf("Drain after one more byte and the close = %+v, want 1 byte each way (only what came since)", rest)
	}
	if again, _ := p.Drain(); len(again) != 0 {
		t.Fatalf("a closed tunnel reported again: %+v", again)
	}
}

func TestDrainReportsRefusalsWithTheirRule(t *testing.T) {
	t.Parallel()
	p := newProxy(t, Config{Resolver: egress.Hosts{"inner.test": {netip.MustParseAddr("127.0.0.1")}}})
	for _, tt := range []struct{ ask, host, rule string }{
		{"CONNECT 169.254.169.254:80 HTTP/1.1\r\nHost: 169.254.169.254:80\r\n\r\n", "169.254.169.254", run.RuleAddress},
		{"CONNECT inner.test:443 HTTP/1.1\r\nHost: inner.test:443\r\n\r\n", "inner.test", run.RuleAddress},
		{"GET ftp://example.test/x HTTP/1.1\r\nHost: example.test\r\n\r\n", "example.test", run.RuleScheme},
	} {
		res, _, c, _ := ask(t, p.Addr(), tt.ask)
		c.Close()
		if res.StatusCode/100 != 4 {
			t.Fatalf("%q = %d, want a refusal", tt.ask, res.StatusCode)
		}
		got, _ := p.Drain()
		if len(got) != 1 || !got[0].Refused || got[0].Host != tt.host || got[0].Rule != tt.rule {
			t.Errorf("Drain after %q = %+v, want one refusal of %s by rule %q", tt.ask, got, tt.host, tt.rule)
		}
	}
}

func TestDrainReportsAForwardedRequest(t *testing.T) {
	t.Parallel()
	srv := newWatched(t, "127.0.0.1:0")
	p := newProxy(t, Config{Allow: srv.addr})
	res, body := get(t, p.Addr(), srv.URL+"/page", srv.addr.String())
	if res.StatusCode != http.StatusOK || body != "reached /page" {
		t.Fatalf("GET = %d %q", res.StatusCode, body)
	}
	got := drainUntil(t, p, func(es []run.Egress) bool { return len(es) > 0 })
	if len(got) != 1 || got[0].Method != http.MethodGet || got[0].Status != http.StatusOK ||
		got[0].BytesIn != int64(len("reached /page")) || got[0].Port != int(srv.port()) {
		t.Fatalf("Drain after a forwarded GET = %+v, want one GET, 200, %d bytes in", got, len("reached /page"))
	}
}

func TestDrainReportsAnUnreachedDestination(t *testing.T) {
	t.Parallel()
	closed := closedPort(t)
	p := newProxy(t, Config{Allow: closed})
	res, _, c, _ := connect(t, p.Addr(), closed.String())
	c.Close()
	if res.StatusCode != http.StatusBadGateway {
		t.Fatalf("CONNECT to a closed port = %d, want 502", res.StatusCode)
	}
	got, _ := p.Drain()
	if len(got) != 1 || got[0].Refused || !strings.Contains(got[0].Error, "refused the connection") || got[0].BytesIn != 0 {
		t.Fatalf("Drain after an unreached destination = %+v, want one entry saying why, not a refusal", got)
	}
}

// A page cannot make the proxy hold more than keptFlows entries between
// two Drains: the oldest go, counted.
func TestDrainKeepsABoundedNumber(t *testing.T) {
	t.Parallel()
	p := newProxy(t, Config{})
	for i := range keptFlows + 10 {
		p.refusedFlow(http.MethodConnect, fmt.Sprintf("h%d.test:443", i), run.RuleAddress)
	}
	got, dropped := p.Drain()
	if len(got) != keptFlows || dropped != 10 || got[0].Host != "h10.test" {
		t.Fatalf("Drain = %d entries (first %+v), %d dropped; want %d, the oldest 10 dropped", len(got), got[0], dropped, keptFlows)
	}
	if _, dropped := p.Drain(); dropped != 0 {
		t.Fatalf("the dropped count carried over: %d", dropped)
	}
}
