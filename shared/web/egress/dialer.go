package egress

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"strconv"
	"syscall"
	"time"

	"github.com/agentsfleet/agentsfleet/shared/run"
)

// Resolver looks host names up. *net.Resolver satisfies it; tests give a
// map so that no test needs DNS.
type Resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

// Dialer connects only to addresses its Policy allows. Use its DialContext
// as an http.Transport's DialContext. A Dialer is safe for concurrent use
// and must not be copied after first use.
//
// Security boundary: DialContext resolves a name once, refuses the whole
// request if any resolved address is refused (an answer that mixes public
// and private addresses is a rebinding attempt, not a fallback), and then
// connects to exactly the checked addresses. The socket's Control hook
// checks the connected address again before connect(2), so no code path
// reaches a refused address even if the checks above had a bug.
type Dialer struct {
	Policy Policy
	// Resolver looks names up; nil means net.DefaultResolver.
	Resolver Resolver
	// Timeout bounds one connection attempt; 0 means 10 seconds.
	Timeout time.Duration
	// Logger receives a warning for each refused address; nil means
	// slog.Default().
	Logger *slog.Logger
	// Check, when not nil, decides which addresses may be dialed instead
	// of Policy.Check (Policy.Ports is then not consulted either): it
	// returns nil to allow ap and a *RefusedError to refuse it. The
	// sandbox's browser proxy uses it for rules of its own; the lookup,
	// the all-or-nothing check of every address and the Control hook stay
	// those of the Dialer.
	Check func(ap netip.AddrPort) error
}

// DialContext connects to address ("host:port") over TCP. It returns a
// *RefusedError (wrapped) when the policy refuses the destination, and
// otherwise the network's error.
func (d *Dialer) DialContext(ctx context.Context, network, address string) (net.Conn, error) {
	switch network {
	case "tcp", "tcp4", "tcp6":
	default:
		return nil, refused(run.RuleNetwork, "network %q: only TCP is allowed", network)
	}
	host, portText, err := net.SplitHostPort(address)
	if err != nil {
		return nil, fmt.Errorf("dial %s: %w", address, err)
	}
	port, err := strconv.ParseUint(portText, 10, 16)
	if err != nil || port == 0 {
		return nil, refused(run.RulePort, "port %q is not a valid port", portText)
	}
	ip, name, err := ParseHost(host)
	if err != nil {
		return nil, &RefusedError{Rule: run.RuleHost, Reason: err.Error()}
	}
	var addrs []netip.Addr
	if ip.IsValid() {
		addrs = []netip.Addr{ip}
	} else {
		// A port the policy refuses costs no lookup, unless it is the
		// admitted test port (whose address only the lookup can tell).
		if d.Check == nil && (!d.Policy.Allow.IsValid() || d.Policy.Allow.Port() != uint16(port)) {
			if err := d.Policy.CheckPort(uint16(port)); err != nil {
				return nil, err
			}
		}
		addrs, err = d.resolver().LookupNetIP(ctx, "ip", name)
		if err != nil {
			return nil, fmt.Errorf("resolve %s: %w", name, err)
		}
		if len(addrs) == 0 {
			return nil, fmt.Errorf("resolve %s: no addresses", name)
		}
	}
	for _, a := range addrs {
		if err := d.check(netip.AddrPortFrom(a, uint16(port))); err != nil {
			var re *RefusedError
			if name != "" && errors.As(err, &re) {
				err = refused(re.Rule, "%s resolves to %s", name, re.Reason)
			}
			d.logRefusal(a, address, err)
			return nil, err
		}
	}
	nd := &net.Dialer{Timeout: d.timeout(), Control: d.control}
	var errs []error
	for _, a := range addrs {
		conn, err := nd.DialContext(ctx, network, netip.AddrPortFrom(a, uint16(port)).String())
		if err == nil {
			return conn, nil
		}
		errs = append(errs, err)
		if ctx.Err() != nil {
			break
		}
	}
	return nil, fmt.Errorf("dial %s: %w", address, errors.Join(errs...))
}

// control runs on the socket just before connect(2): the last check, on the
// very address the kernel is asked to connect to.
func (d *Dialer) control(network, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return refused(run.RuleAddress, "socket address %q is not an IP address and port", address)
	}
	if err := d.check(ap); err != nil {
		d.logRefusal(ap.Addr(), address, err)
		return err
	}
	return nil
}

func (d *Dialer) check(ap netip.AddrPort) error {
	if d.Check != nil {
		return d.Check(ap)
	}
	return d.Policy.Check(ap)
}

func (d *Dialer) logRefusal(a netip.Addr, address string, err error) {
	log := d.Logger
	if log == nil {
		log = slog.Default()
	}
	msg := "egress refused"
	if IsMetadata(a) {
		msg = "egress refused: cloud metadata address"
	}
	log.Warn(msg, "address", address, "ip", a.String(), "reason", err.Error())
}

func (d *Dialer) resolver() Resolver {
	if d.Resolver != nil {
		return d.Resolver
	}
	return net.DefaultResolver
}

func (d *Dialer) timeout() time.Duration {
	if d.Timeout > 0 {
		return d.Timeout
	}
	return 10 * time.Second
}

// Hosts is a Resolver over a fixed map from lower-case name to addresses,
// like /etc/hosts; names not in it do not resolve. Tests use it so that a
// name can resolve to any address without DNS.
type Hosts map[string][]netip.Addr

// LookupNetIP returns the addresses mapped to host, or a *net.DNSError
// that says the name was not found.
func (h Hosts) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	if a, ok := h[host]; ok {
		return a, nil
	}
	return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
}

var _ Resolver = Hosts(nil)
var _ Resolver = (*net.Resolver)(nil)
