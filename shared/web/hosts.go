package web

import "github.com/agentsfleet/agentsfleet/shared/fleet"

// HostAllower answers whether a fleet's network host list allows host, a
// host name or IP address (IPv6 with or without brackets) without port.
// Only the host counts: an allowed host is allowed on any port.
// fleet.HostList implements it.
type HostAllower interface {
	Allows(host string) bool
}

var _ HostAllower = fleet.HostList(nil)
