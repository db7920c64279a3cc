package egress

import (
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"strings"

	"github.com/agentsfleet/agentsfleet/shared/run"
)

// RefusedError is the error for a destination the policy does not allow. Its
// message says why, in terms the model and a person can act on, and never
// carries anything but the host, the address and the port.
type RefusedError struct {
	Reason string // such as "127.0.0.1 is a loopback address"
	// Rule names the rule that refused, as a run's egress log records it
	// (run.RuleAddress, run.RulePort, …); "" when the refuser set none.
	Rule string
}

func (e *RefusedError) Error() string { return "refused: " + e.Reason }

func refused(rule, format string, args ...any) *RefusedError {
	return &RefusedError{Rule: rule, Reason: fmt.Sprintf(format, args...)}
}

// Policy says which addresses and ports a Dialer may connect to.
//
// The zero Policy allows every public address on every port. A Policy is a
// plain value, safe to copy and to use from several goroutines.
type Policy struct {
	// Ports, when not empty, are the only ports allowed (webfetch and
	// websearch use 80 and 443).
	Ports []uint16
	// Allow is the test-only escape hatch: exactly this ip:port is admitted
	// whatever its address and port. The zero value admits nothing. Set it
	// only from AllowFromEnv; nothing a fleet controls may reach it.
	Allow netip.AddrPort
}

// PublicWeb is the policy of webfetch and websearch: public addresses on
// ports 80 and 443.
func PublicWeb() Policy { return Policy{Ports: []uint16{80, 443}} }

// Check returns a *RefusedError if the policy does not allow a connection to
// ap, and nil if it does.
func (p Policy) Check(ap netip.AddrPort) error {
	if p.admitted(ap) {
		return nil
	}
	if what, bad := Classify(ap.Addr()); bad {
		return refused(run.RuleAddress, "%s is %s", ap.Addr().WithZone(""), what)
	}
	return p.CheckPort(ap.Port())
}

// CheckPort returns a *RefusedError if port is not among p.Ports. It does
// not know about Allow: callers that can tell the address first use Check.
func (p Policy) CheckPort(port uint16) error {
	if len(p.Ports) == 0 || slices.Contains(p.Ports, port) {
		return nil
	}
	names := make([]string, len(p.Ports))
	for i, q := range p.Ports {
		names[i] = strconv.Itoa(int(q))
	}
	return refused(run.RulePort, "port %d is not allowed: this tool reaches ports %s only", port, strings.Join(names, " and "))
}

func (p Policy) admitted(ap netip.AddrPort) bool {
	if !p.Allow.IsValid() {
		return false
	}
	a := netip.AddrPortFrom(ap.Addr().Unmap().WithZone(""), ap.Port())
	b := netip.AddrPortFrom(p.Allow.Addr().Unmap(), p.Allow.Port())
	return a == b
}

type span struct {
	prefix netip.Prefix
	what   string
}

func spans(pairs ...string) []span {
	out := make([]span, 0, len(pairs)/2)
	for i := 0; i < len(pairs); i += 2 {
		out = append(out, span{netip.MustParsePrefix(pairs[i]), pairs[i+1]})
	}
	return out
}

const metadata = "a cloud metadata address"

// v4Refused is checked in order, so specific entries (metadata, broadcast)
// come before the ranges holding them and give the more useful reason.
var v4Refused = spans(
	"169.254.169.254/32", metadata+" (AWS, GCP, Azure, OpenStack)",
	"169.254.170.2/32", metadata+" (ECS task credentials)",
	"169.254.170.23/32", metadata+" (EKS pod identity)",
	"169.254.0.23/32", metadata+" (Tencent Cloud)",
	"100.100.100.200/32", metadata+" (Alibaba Cloud)",
	"192.0.0.192/32", metadata+" (Oracle Cloud)",
	"255.255.255.255/32", "the broadcast address",
	"0.0.0.0/32", "the unspecified address",
	"0.0.0.0/8", `in 0.0.0.0/8 ("this network")`,
	"10.0.0.0/8", "a private address (10.0.0.0/8)",
	"100.64.0.0/10", "a shared carrier-grade NAT address (100.64.0.0/10)",
	"127.0.0.0/8", "a loopback address",
	"169.254.0.0/16", "a link-local address (169.254.0.0/16)",
	"172.16.0.0/12", "a private address (172.16.0.0/12)",
	"192.0.0.0/24", "an IETF protocol assignment (192.0.0.0/24)",
	"192.0.2.0/24", "a documentation address (192.0.2.0/24)",
	"192.88.99.0/24", "a 6to4 relay anycast address (192.88.99.0/24)",
	"192.168.0.0/16", "a private address (192.168.0.0/16)",
	"198.18.0.0/15", "a benchmarking address (198.18.0.0/15)",
	"198.51.100.0/24", "a documentation address (198.51.100.0/24)",
	"203.0.113.0/24", "a documentation address (203.0.113.0/24)",
	"224.0.0.0/4", "a multicast address (224.0.0.0/4)",
	"240.0.0.0/4", "a reserved address (240.0.0.0/4)",
)

var v6Refused = spans(
	"fd00:ec2::254/128", metadata+" (AWS, IPv6)",
	"fd00:ec2::23/128", metadata+" (EKS pod identity, IPv6)",
	"::/128", "the unspecified address",
	"::1/128", "a loopback address",
	"::/96", "an IPv4-compatible IPv6 address (::/96, deprecated)",
	"::ffff:0:0:0/96", "an IPv4-translated IPv6 address (::ffff:0:0:0/96)",
	"64:ff9b:1::/48", "a local-use NAT64 address (64:ff9b:1::/48)",
	"100::/64", "a discard-only address (100::/64)",
	"2001::/32", "a Teredo address (2001::/32), which can tunnel to any IPv4 address",
	"2001:db8::/32", "a documentation address (2001:db8::/32)",
	"2001::/23", "an IETF special-purpose address (2001::/23)",
	"3fff::/20", "a documentation address (3fff::/20)",
	"fc00::/7", "a unique-local address (fc00::/7)",
	"fe80::/10", "a link-local address (fe80::/10)",
	"fec0::/10", "a site-local address (fec0::/10, deprecated)",
	"ff00::/8", "a multicast address (ff00::/8)",
)

var (
	compatible  = netip.MustParsePrefix("::/96")
	nat64       = netip.MustParsePrefix("64:ff9b::/96")
	sixToFour   = netip.MustParsePrefix("2002::/16")
	globalUni6  = netip.MustParsePrefix("2000::/3")
	metadataSet = []netip.Addr{} // filled in init from the metadata spans, for IsMetadata
)

func init() {
	for _, s := range append(slices.Clone(v4Refused), v6Refused...) {
		if strings.HasPrefix(s.what, metadata) {
			metadataSet = append(metadataSet, s.prefix.Addr())
		}
	}
}

// Classify reports whether ip is a destination the web tools must never
// reach and, if so, what it is ("a loopback address", "the IPv4-mapped form
// of 10.0.0.1, a private address (10.0.0.0/8)", …). An invalid address is
// refused.
func Classify(ip netip.Addr) (what string, refused bool) {
	if !ip.IsValid() {
		return "not a valid IP address", true
	}
	ip = ip.WithZone("") // Prefix.Contains is false for zoned addresses
	if ip.Is4() {
		for _, s := range v4Refused {
			if s.prefix.Contains(ip) {
				return s.what, true
			}
		}
		return "", false
	}
	if ip.Is4In6() {
		v4 := ip.Unmap()
		if what, bad := Classify(v4); bad {
			return fmt.Sprintf("the IPv4-mapped form of %s, %s", v4, what), true
		}
		return "", false
	}
	for _, s := range v6Refused {
		if s.prefix.Contains(ip) {
			return s.what, true
		}
	}
	if v4, form, ok := EmbeddedIPv4(ip); ok {
		if what, bad := Classify(v4); bad {
			return fmt.Sprintf("the %s form of %s, %s", form, v4, what), true
		}
		return "", false
	}
	if !globalUni6.Contains(ip) {
		return "not a global unicast IPv6 address (outside 2000::/3)", true
	}
	return "", false
}

// EmbeddedIPv4 returns the IPv4 address that an IPv6 address carries in
// one of the forms that lead to it: IPv4-mapped (::ffff:a.b.c.d),
// IPv4-compatible (::a.b.c.d, deprecated; not :: or ::1), NAT64
// (64:ff9b::a.b.c.d) and 6to4 (2002:aabb:ccdd::/48). form names the form
// ("IPv4-mapped", "IPv4-compatible", "NAT64", "6to4"); ok is false for an
// IPv4 address and any other IPv6 address. Whoever judges an IPv6
// destination judges these by the IPv4 address inside.
func EmbeddedIPv4(ip netip.Addr) (v4 netip.Addr, form string, ok bool) {
	if !ip.Is6() {
		return netip.Addr{}, "", false
	}
	ip = ip.WithZone("")
	b := ip.As16()
	switch {
	case ip.Is4In6():
		return ip.Unmap(), "IPv4-mapped", true
	case compatible.Contains(ip) && ip != netip.IPv6Unspecified() && ip != netip.IPv6Loopback():
		return netip.AddrFrom4([4]byte(b[12:16])), "IPv4-compatible", true
	case nat64.Contains(ip):
		return netip.AddrFrom4([4]byte(b[12:16])), "NAT64", true
	case sixToFour.Contains(ip):
		return netip.AddrFrom4([4]byte(b[2:6])), "6to4", true
	}
	return netip.Addr{}, "", false
}

// IsMetadata reports whether ip is a well-known cloud metadata address, in
// any IPv6 form of an IPv4 one. Classify already refuses all of them; this is
// for callers that want to log such attempts more loudly.
func IsMetadata(ip netip.Addr) bool {
	ip = ip.WithZone("").Unmap()
	return slices.Contains(metadataSet, ip)
}
