package proxy

import (
	"fmt"
	"net"
	"net/netip"

	"github.com/agentsfleet/agentsfleet/shared/web/egress"
)

type rule struct {
	prefix netip.Prefix
	what   string
}

func rules(pairs ...string) []rule {
	out := make([]rule, 0, len(pairs)/2)
	for i := 0; i < len(pairs); i += 2 {
		out = append(out, rule{netip.MustParsePrefix(pairs[i]), pairs[i+1]})
	}
	return out
}

const loopback = "a loopback address, where the sandbox's own services listen"

// The browser's rules are narrower than the web tools' (egress.Classify):
// they keep the sandbox's own services and the metadata endpoints out of
// reach and leave the rest to the task's security group.
var (
	v4Rules = rules(
		"0.0.0.0/8", `in 0.0.0.0/8 (the unspecified "this network" block)`,
		"127.0.0.0/8", loopback,
		"169.254.0.0/16", "a link-local address (169.254.0.0/16, where the cloud metadata services answer)",
		"224.0.0.0/4", "a multicast address (224.0.0.0/4)",
		"255.255.255.255/32", "the broadcast address",
	)
	v6Rules = rules(
		"::/128", "the unspecified address",
		"::1/128", loopback,
		"fe80::/10", "a link-local address (fe80::/10)",
		"ff00::/8", "a multicast address (ff00::/8)",
		"fd00:ec2::/32", "an AWS service address (fd00:ec2::/32: metadata, DNS, time)",
		"64:ff9b:1::/48", "a local-use NAT64 address (64:ff9b:1::/48), which can lead to any IPv4 address",
		"2001::/32", "a Teredo address (2001::/32), which can tunnel to any IPv4 address",
	)
)

// classify reports whether the browser must never reach ip and, if so,
// what it is.
func classify(ip netip.Addr) (what string, refused bool) {
	if !ip.IsValid() {
		return "not a valid IP address", true
	}
	ip = ip.WithZone("")
	if egress.IsMetadata(ip) {
		return "a cloud metadata address", true
	}
	if v4, form, ok := egress.EmbeddedIPv4(ip); ok {
		if what, bad := classify(v4); bad {
			return fmt.Sprintf("the %s form of %s, %s", form, v4, what), true
		}
		return "", false
	}
	list := v6Rules
	if ip.Is4() {
		list = v4Rules
	}
	for _, r := range list {
		if r.prefix.Contains(ip) {
			return r.what, true
		}
	}
	return "", false
}

// ownAddress reports whether ip (or the IPv4 address inside it) is an
// address of one of this machine's interfaces: sandboxd listens on the
// task's own address, so that address leads to the sandbox's services as
// loopback does. It is read on every check, since interfaces may change;
// if they cannot be listed, every address counts as the machine's own.
func ownAddress(ip netip.Addr) (bool, error) {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return true, fmt.Errorf("list this machine's addresses: %w", err)
	}
	ip = ip.WithZone("").Unmap()
	v4, _, embeds := egress.EmbeddedIPv4(ip)
	for _, a := range addrs {
		n, ok := a.(*net.IPNet)
		if !ok {
			continue
		}
		own, ok := netip.AddrFromSlice(n.IP)
		if !ok {
			continue
		}
		own = own.Unmap()
		if own == ip || embeds && own == v4 {
			return true, nil
		}
	}
	return false, nil
}
