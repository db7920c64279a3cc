// Package egress decides which network destinations the web tools may reach
// and dials only those. It is the SSRF boundary of the webtools λ.
//
// The boundary is the address actually dialed. A Dialer resolves a host name
// once, checks every address the resolver returned against its Policy, and
// connects to exactly those checked addresses: there is no second lookup, so
// a name that resolves to a public address at check time and to a private one
// later (DNS rebinding) cannot slip through. As a second line, the socket's
// Control hook checks the address again immediately before connect(2).
//
// What the policy refuses: loopback, private (RFC 1918), link-local, shared
// (CGNAT 100.64.0.0/10), multicast, unspecified, broadcast, "this network"
// 0.0.0.0/8, documentation, benchmarking and reserved ranges, IETF protocol
// assignments, cloud metadata addresses, IPv6 unique-local, site-local,
// discard-only, Teredo and anything outside global unicast 2000::/3; an
// IPv4 address written in an IPv6 form (IPv4-mapped, IPv4-compatible, NAT64
// 64:ff9b::/96, 6to4 2002::/16) is judged by the IPv4 address inside it, and
// local-use NAT64 64:ff9b:1::/48 is refused outright. Host names written as
// legacy IPv4 literals (2130706433, 0177.0.0.1, 0x7f.1, 127.1) are read the
// way inet_aton and browsers read them, so they cannot bypass the check.
//
// What it does not do: it knows nothing of a fleet's host list, schemes or
// redirects. Callers check those per request and on every redirect hop; the
// Dialer then guarantees that whatever they let through lands on an allowed
// address. It does not protect against a public host that proxies requests
// onwards.
//
// The only exception is Policy.Allow, a single ip:port admitted for tests,
// set from AGENTSFLEET_TEST_ALLOW_ADDR (see AllowFromEnv) and nowhere else.
package egress
