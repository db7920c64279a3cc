package web

import (
	"strings"

	"github.com/agentsfleet/agentsfleet/shared/fleet"
)

// HostAllower answers whether a fleet's network host list allows host, a
// host name or IP address without port. Only the host counts: an allowed
// host is allowed on any port. fleet.HostList implements it.
type HostAllower interface {
	Allows(host string) bool
}

var _ HostAllower = fleet.HostList(nil)

// listAllows asks list about host, a host in egress.CanonicalHost form
// (IPv6 without brackets), writing IPv6 in the bracketed form of
// fleet.HostList entries.
func listAllows(list HostAllower, host string) bool {
	if list == nil {
		return false
	}
	if strings.Contains(host, ":") {
		host = "[" + host + "]"
	}
	return list.Allows(host)
}
