package egress_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"testing"

	"github.com/agentsfleet/agentsfleet/shared/web/egress"
)

func TestClassify(t *testing.T) {
	t.Parallel()
	tests := []struct {
		ip   string
		want string // "" means allowed; otherwise a substring of the reason
	}{
		{"8.8.8.8", ""},
		{"1.1.1.1", ""},
		{"2606:4700:4700::1111", ""},
		{"::ffff:8.8.8.8", ""},
		{"64:ff9b::808:808", ""}, // NAT64 of 8.8.8.8
		{"2002:808:808::1", ""},  // 6to4 of 8.8.8.8
		{"127.0.0.1", "loopback"},
		{"127.255.255.254", "loopback"},
		{"0.0.0.0", "unspecified"},
		{"0.1.2.3", "this network"},
		{"10.1.2.3", "private"},
		{"172.16.0.1", "private"},
		{"172.31.255.255", "private"},
		{"192.168.1.1", "private"},
		{"100.64.0.1", "carrier-grade NAT"},
		{"100.127.255.255", "carrier-grade NAT"},
		{"169.254.1.1", "link-local"},
		{"169.254.169.254", "cloud metadata"},
		{"169.254.170.2", "cloud metadata"},
		{"100.100.100.200", "cloud metadata"},
		{"192.0.0.192", "cloud metadata"},
		{"192.0.0.8", "IETF protocol"},
		{"192.0.2.1", "documentation"},
		{"198.51.100.7", "documentation"},
		{"203.0.113.9", "documentation"},
		{"198.18.0.1", "benchmarking"},
		{"198.19.255.255", "benchmarking"},
		{"224.0.0.1", "multicast"},
		{"239.255.255.250", "multicast"},
		{"240.0.0.1", "reserved"},
		{"255.255.255.255", "broadcast"},
		{"::", "unspecified"},
		{"::1", "loopback"},
		{"::ffff:127.0.0.1", "IPv4-mapped form of 127.0.0.1, a loopback"},
		{"::ffff:169.254.169.254", "IPv4-mapped form of 169.254.169.254, a cloud metadata"},
		{"::ffff:10.0.0.1", "IPv4-mapped form of 10.0.0.1, a private"},
		{"::127.0.0.1", "IPv4-compatible"},
		{"::8.8.8.8", "IPv4-compatible"},
		{"::ffff:0:a00:1", "IPv4-translated"},
		{"64:ff9b::7f00:1", "NAT64 form of 127.0.0.1"},
		{"64:ff9b::a9fe:a9fe", "NAT64 form of 169.254.169.254"},
		{"64:ff9b:1::a00:1", "local-use NAT64"},
		{"2002:7f00:1::1", "6to4 form of 127.0.0.1"},
		{"2002:a00:1::", "6to4 form of 10.0.0.1"},
		{"2001:0:4136:e378:8000:63bf:3fff:fdd2", "Teredo"},
		{"2001:db8::1", "documentation"},
		{"3fff::1", "documentation"},
		{"100::1", "discard-only"},
		{"fc00::1", "unique-local"},
		{"fd00::1", "unique-local"},
		{"fd00:ec2::254", "cloud metadata"},
		{"fe80::1", "link-local"},
		{"fe80::1%eth0", "link-local"},
		{"fec0::1", "site-local"},
		{"ff02::1", "multicast"},
		{"4000::1", "global unicast"},
	}
	for _, tt := range tests {
		t.Run(tt.ip, func(t *testing.T) {
			t.Parallel()
			what, bad := egress.Classify(netip.MustParseAddr(tt.ip))
			if tt.want == "" {
				if bad {
					t.Fatalf("Classify(%s) refused as %q, want allowed", tt.ip, what)
				}
				return
			}
			if !bad || !strings.Contains(what, tt.want) {
				t.Fatalf("Classify(%s) = %q, %v; want refused containing %q", tt.ip, what, bad, tt.want)
			}
		})
	}
}

func TestParseHost(t *testing.T) {
	t.Parallel()
	tests := []struct {
		host     string
		wantIP   string // the address a resolver would have produced
		wantName string
		wantErr  bool
	}{
		{host: "127.0.0.1", wantIP: "127.0.0.1"},
		{host: "2130706433", wantIP: "127.0.0.1"},
		{host: "0177.0.0.1", wantIP: "127.0.0.1"},
		{host: "0x7f.1", wantIP: "127.0.0.1"},
		{host: "0x7F.0.0.1", wantIP: "127.0.0.1"},
		{host: "0x7f000001", wantIP: "127.0.0.1"},
		{host: "127.1", wantIP: "127.0.0.1"},
		{host: "127.0.1", wantIP: "127.0.0.1"},
		{host: "127.0.0.1.", wantIP: "127.0.0.1"},
		{host: "017700000001", wantIP: "127.0.0.1"},
		{host: "0", wantIP: "0.0.0.0"},
		{host: "0x", wantIP: "0.0.0.0"},
		{host: "169.254.43518", wantIP: "169.254.169.254"},
		{host: "0xa9fea9fe", wantIP: "169.254.169.254"},
		{host: "１２７.０.０.１", wantIP: "127.0.0.1"}, // full-width digits
		{host: "::1", wantIP: "::1"},
		{host: "::ffff:127.0.0.1", wantIP: "::ffff:127.0.0.1"},
		{host: "Example.COM.", wantName: "example.com"},
		{host: "bücher.example", wantName: "xn--bcher-kva.example"},
		{host: "1.2.3.example", wantName: "1.2.3.example"},
		{host: "1.0x7g", wantName: "1.0x7g"}, // last label not a number: a name
		{host: "0x7g.1", wantErr: true},      // ends in a number, so must be an address
		{host: "08.0.0.1", wantErr: true},    // 8 is not octal
		{host: "256.0.0.1", wantErr: true},
		{host: "1.2.3.4.5", wantErr: true},
		{host: "4294967296", wantErr: true},
		{host: "example.com.1", wantErr: true}, // ends in a number, not an address
		{host: "", wantErr: true},
		{host: "a b", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.host, func(t *testing.T) {
			t.Parallel()
			ip, name, err := egress.ParseHost(tt.host)
			if tt.wantErr {
				if err == nil {
					t.Fatalf("ParseHost(%q) = %v, %q; want an error", tt.host, ip, name)
				}
				return
			}
			if err != nil {
				t.Fatalf("ParseHost(%q): %v", tt.host, err)
			}
			if tt.wantIP != "" && ip.String() != tt.wantIP {
				t.Fatalf("ParseHost(%q) ip = %v, want %s", tt.host, ip, tt.wantIP)
			}
			if name != tt.wantName {
				t.Fatalf("ParseHost(%q) name = %q, want %q", tt.host, name, tt.wantName)
			}
		})
	}
}

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// listen starts a TCP listener on loopback that accepts and closes
// connections, and returns its address.
func listen(t *testing.T) netip.AddrPort {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	return netip.MustParseAddrPort(ln.Addr().String())
}

func TestDialerRefuses(t *testing.T) {
	t.Parallel()
	admitted := listen(t)
	other := listen(t) // a live loopback port that is not admitted
	hosts := egress.Hosts{
		"internal.example.com": {netip.MustParseAddr("10.0.0.5")},
		"meta.example.com":     {netip.MustParseAddr("169.254.169.254")},
		"mixed.example.com":    {netip.MustParseAddr("8.8.8.8"), netip.MustParseAddr("127.0.0.1")},
		"v6.example.com":       {netip.MustParseAddr("fd00::1")},
		"local.example.com":    {admitted.Addr()},
		"public.example.com":   {netip.MustParseAddr("8.8.8.8")},
	}
	d := &egress.Dialer{
		Policy:   egress.Policy{Ports: []uint16{80, 443}, Allow: admitted},
		Resolver: hosts,
		Logger:   quiet(),
	}
	tests := []struct {
		addr string
		want string
	}{
		{"127.0.0.1:80", "loopback"},
		{"2130706433:80", "loopback"},
		{"0177.0.0.1:80", "loopback"},
		{"0x7f.1:80", "loopback"},
		{"127.1:443", "loopback"},
		{"[::1]:80", "loopback"},
		{"[::ffff:127.0.0.1]:80", "IPv4-mapped"},
		{"0.0.0.0:80", "unspecified"},
		{"169.254.169.254:80", "cloud metadata"},
		{"[fd00::1]:80", "unique-local"},
		{"[fd00:ec2::254]:80", "cloud metadata"},
		{"internal.example.com:80", "internal.example.com resolves to 10.0.0.5 is a private"},
		{"meta.example.com:80", "cloud metadata"},
		{"mixed.example.com:443", "loopback"},
		{"v6.example.com:443", "unique-local"},
		{"public.example.com:8080", "port 8080 is not allowed"},
		{other.String(), "loopback"},
		{netip.AddrPortFrom(admitted.Addr(), 80).String(), "loopback"}, // right ip, wrong port
	}
	for _, tt := range tests {
		t.Run(tt.addr, func(t *testing.T) {
			t.Parallel()
			conn, err := d.DialContext(context.Background(), "tcp", tt.addr)
			if err == nil {
				conn.Close()
				t.Fatalf("DialContext(%s) connected, want refused", tt.addr)
			}
			var re *egress.RefusedError
			if !errors.As(err, &re) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("DialContext(%s) = %v, want a RefusedError containing %q", tt.addr, err, tt.want)
			}
		})
	}
}

func TestDialerAdmitsOnlyTheTestAddress(t *testing.T) {
	t.Parallel()
	admitted := listen(t)
	d := &egress.Dialer{
		Policy:   egress.Policy{Ports: []uint16{80, 443}, Allow: admitted},
		Resolver: egress.Hosts{"local.example.com": {admitted.Addr()}},
		Logger:   quiet(),
	}
	for _, addr := range []string{admitted.String(), net.JoinHostPort("local.example.com", strconv.Itoa(int(admitted.Port())))} {
		conn, err := d.DialContext(context.Background(), "tcp", addr)
		if err != nil {
			t.Fatalf("DialContext(%s) = %v, want connected", addr, err)
		}
		conn.Close()
	}
	if _, err := d.DialContext(context.Background(), "udp", admitted.String()); err == nil {
		t.Fatal("udp dial succeeded, want refused")
	}
}

func TestDialerUnknownName(t *testing.T) {
	t.Parallel()
	d := &egress.Dialer{Resolver: egress.Hosts{}, Logger: quiet()}
	_, err := d.DialContext(context.Background(), "tcp", "nowhere.example.com:443")
	var dnsErr *net.DNSError
	if !errors.As(err, &dnsErr) {
		t.Fatalf("DialContext = %v, want a DNS error", err)
	}
}

func TestAllowFromEnv(t *testing.T) {
	t.Parallel()
	tests := []struct {
		env     map[string]string
		want    string
		wantErr bool
	}{
		{env: map[string]string{}, want: "invalid AddrPort"},
		{env: map[string]string{egress.AllowEnv: "127.0.0.1:8080"}, want: "127.0.0.1:8080"},
		{env: map[string]string{egress.AllowEnv: "[::1]:8080"}, want: "[::1]:8080"},
		{env: map[string]string{egress.AllowEnv: "10.0.0.1:8080"}, wantErr: true},
		{env: map[string]string{egress.AllowEnv: "169.254.169.254:80"}, wantErr: true},
		{env: map[string]string{egress.AllowEnv: "127.0.0.1:0"}, wantErr: true},
		{env: map[string]string{egress.AllowEnv: "localhost:8080"}, wantErr: true},
		{env: map[string]string{egress.AllowEnv: "127.0.0.1:9001", "AWS_LAMBDA_RUNTIME_API": "127.0.0.1:9001"}, wantErr: true},
		{env: map[string]string{egress.AllowEnv: "127.0.0.2:9001", "AWS_LAMBDA_RUNTIME_API": "127.0.0.1:9001"}, wantErr: true},
		{env: map[string]string{egress.AllowEnv: "[::1]:9001", "AWS_LAMBDA_RUNTIME_API": "127.0.0.1:9001"}, wantErr: true},
		{env: map[string]string{egress.AllowEnv: "127.0.0.1:9001", "AWS_LAMBDA_RUNTIME_API": "not an address"}, wantErr: true},
		// Under a Runtime API of its own (a deployment on one machine),
		// another loopback address is a test server.
		{env: map[string]string{egress.AllowEnv: "127.0.0.1:8080", "AWS_LAMBDA_RUNTIME_API": "127.0.0.1:9001"}, want: "127.0.0.1:8080"},
	}
	for _, tt := range tests {
		var logged strings.Builder
		log := slog.New(slog.NewTextHandler(&logged, nil))
		got, err := egress.AllowFromEnv(func(k string) string { return tt.env[k] }, log)
		if tt.wantErr {
			if err == nil {
				t.Errorf("AllowFromEnv(%v) = %v, want an error", tt.env, got)
			}
			continue
		}
		if err != nil || got.String() != tt.want {
			t.Errorf("AllowFromEnv(%v) = %v, %v; want %s", tt.env, got, err, tt.want)
		}
		if got.IsValid() && !strings.Contains(logged.String(), "level=WARN") {
			t.Errorf("AllowFromEnv(%v) logged %q, want a WARN", tt.env, logged.String())
		}
	}
}

func TestPolicyCheck(t *testing.T) {
	t.Parallel()
	allow := netip.MustParseAddrPort("127.0.0.1:5555")
	p := egress.Policy{Ports: []uint16{80, 443}, Allow: allow}
	tests := []struct {
		ap   string
		want bool
	}{
		{"127.0.0.1:5555", true},
		{"[::ffff:127.0.0.1]:5555", true}, // the same socket address, mapped
		{"127.0.0.1:5556", false},
		{"127.0.0.2:5555", false},
		{"8.8.8.8:443", true},
		{"8.8.8.8:22", false},
		{"[2606:4700:4700::1111]:80", true},
	}
	for _, tt := range tests {
		err := p.Check(netip.MustParseAddrPort(tt.ap))
		if got := err == nil; got != tt.want {
			t.Errorf("Check(%s) = %v, want allowed %v", tt.ap, err, tt.want)
		}
	}
}

func TestEmbeddedIPv4(t *testing.T) {
	t.Parallel()
	tests := []struct {
		ip, want, form string // want "" means none
	}{
		{"::ffff:127.0.0.1", "127.0.0.1", "IPv4-mapped"},
		{"::127.0.0.1", "127.0.0.1", "IPv4-compatible"},
		{"::a9fe:a9fe", "169.254.169.254", "IPv4-compatible"},
		{"64:ff9b::7f00:1", "127.0.0.1", "NAT64"},
		{"2002:a9fe:aa02::1", "169.254.170.2", "6to4"},
		{"fe80::1%eth0", "", ""},
		{"::", "", ""},
		{"::1", "", ""},
		{"127.0.0.1", "", ""},
		{"2606:4700:4700::1111", "", ""},
		{"64:ff9b:1::a00:1", "", ""}, // local-use NAT64 carries no known IPv4 address
	}
	for _, tt := range tests {
		v4, form, ok := egress.EmbeddedIPv4(netip.MustParseAddr(tt.ip))
		if tt.want == "" {
			if ok {
				t.Errorf("EmbeddedIPv4(%s) = %s (%s), want none", tt.ip, v4, form)
			}
			continue
		}
		if !ok || v4.String() != tt.want || form != tt.form {
			t.Errorf("EmbeddedIPv4(%s) = %s, %q, %v; want %s, %q", tt.ip, v4, form, ok, tt.want, tt.form)
		}
	}
}

// A Dialer with Check follows it, for the lookup's every address and in
// its Control hook, and ignores Policy.
func TestDialerCheck(t *testing.T) {
	t.Parallel()
	up := listen(t)
	other := listen(t)
	var checked []netip.AddrPort
	d := &egress.Dialer{
		Policy: egress.Policy{Ports: []uint16{443}}, // would refuse both ports
		Check: func(ap netip.AddrPort) error {
			checked = append(checked, ap)
			if ap != up {
				return &egress.RefusedError{Reason: ap.String() + " is not the one"}
			}
			return nil
		},
		Resolver: egress.Hosts{
			"up.test":    {up.Addr()},
			"mixed.test": {up.Addr(), netip.MustParseAddr("127.0.0.2")},
		},
		Logger: quiet(),
	}
	conn, err := d.DialContext(context.Background(), "tcp", "up.test:"+strconv.Itoa(int(up.Port())))
	if err != nil {
		t.Fatalf("DialContext(up.test) = %v, want a connection", err)
	}
	conn.Close()
	// Once for the looked-up address, once in the Control hook.
	if len(checked) != 2 || checked[0] != up || checked[1] != up {
		t.Fatalf("Check saw %v, want %s twice", checked, up)
	}
	for _, addr := range []string{other.String(), "mixed.test:" + strconv.Itoa(int(up.Port()))} {
		conn, err := d.DialContext(context.Background(), "tcp", addr)
		if err == nil {
			conn.Close()
			t.Fatalf("DialContext(%s) connected, want refused by Check", addr)
		}
		var re *egress.RefusedError
		if !errors.As(err, &re) || !strings.Contains(err.Error(), "is not the one") {
			t.Fatalf("DialContext(%s) = %v, want Check's refusal", addr, err)
		}
	}
}
