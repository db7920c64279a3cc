// Package proxy is the browser's only way out of the sandbox: an HTTP
// forward proxy (CONNECT tunnels and absolute-form requests) on loopback
// that dials only addresses the sandbox's browser may reach.
//
// Chromium is started with ChromiumFlags, which send every request it makes
// (pages, frames, subresources, fetch, XHR, WebSocket, service workers)
// through the proxy, keep it from resolving names or sending UDP itself, and
// remove its implicit bypass of loopback and link-local destinations. Each
// redirect hop is a new request through the proxy, so each is checked.
//
// Security boundary: the address dialed. The proxy resolves a name once,
// refuses the whole request if any address it got is refused, dials only
// the checked addresses (through egress.Dialer, so there is no second
// lookup to rebind), and checks again in the socket's Control hook before
// connect(2). It refuses:
//
//   - loopback (127.0.0.0/8, ::1), where the sandbox's own services listen,
//     sandboxd among them, and the proxy itself;
//   - every address of this machine's interfaces, since sandboxd also
//     listens on the task's own address;
//   - link-local (169.254.0.0/16, fe80::/10) and every cloud metadata address
//     egress knows (egress.IsMetadata, fd00:ec2::254 among them), and AWS's
//     fd00:ec2::/32 service block;
//   - unspecified (0.0.0.0/8, ::), multicast and the broadcast address;
//   - local-use NAT64 (64:ff9b:1::/48) and Teredo (2001::/32), whose IPv4
//     destination cannot be told from the address.
//
// An IPv4 address written in an IPv6 form (mapped, compatible, NAT64, 6to4)
// is judged by the IPv4 address inside it, and host names written as legacy
// IPv4 literals (2130706433, 0177.0.0.1, 0x7f.1, 127.1) are read as inet_aton
// reads them (egress.ParseHost).
//
// What it does not do: it is not the web tools' public-only policy. Private
// (RFC 1918, unique-local) addresses stay reachable when the task's security
// group lets the sandbox reach them, as a command in the sandbox could; the
// operator's network policy is the bound there. It does not authenticate
// (it listens on loopback and only restricts what a sandbox command could
// do anyway), it does not look inside tunnels, and it does not stop a page
// from reaching a public host that forwards requests onwards.
//
// Config.Allow, one loopback ip:port, is admitted whatever the rules: it is
// how tests let the browser reach an httptest server, set from
// egress.AllowFromEnv and nowhere else.
package proxy
