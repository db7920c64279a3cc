package proxy

import "net"

// ChromiumFlags are the command-line switches that send all of Chromium's
// traffic through the proxy at addr and nowhere else:
//
//   - --proxy-server=http://ADDR: every scheme (http, https, ws, wss) goes
//     to the proxy; a fixed proxy list without "direct://" never falls back
//     to a direct connection. Chromium tunnels ws:// with CONNECT too.
//   - --proxy-bypass-list=<-loopback>: Chromium otherwise bypasses the
//     proxy implicitly for localhost, loopback and link-local addresses
//     (169.254.169.254 among them) and connects to them itself; "<-loopback>"
//     removes those rules. Without it the Chromium test's page reaches its
//     loopback server directly.
//   - --host-resolver-rules=MAP * ~NOTFOUND , EXCLUDE HOST: Chromium
//     resolves no name itself (no DNS prefetch, no preconnect lookup, no
//     lookup for WebRTC); names go to the proxy, which resolves and checks
//     them. The rule applies to IP literals too, so the proxy's own
//     address is excluded: without the EXCLUDE Chromium cannot reach the
//     proxy and loads nothing.
//   - --webrtc-ip-handling-policy=disable_non_proxied_udp: WebRTC sends no
//     UDP (no STUN, no direct peer) and reaches TURN servers only over TCP
//     through the proxy, where CONNECT is checked like any tunnel. This is
//     the switch Chromium reads (chrome/common/chrome_switches.cc); with
//     --force-webrtc-ip-handling-policy alone, Chromium 156 still sent STUN
//     datagrams to loopback. The force- form is kept for builds that read
//     it; Chromium ignores a switch it does not know.
//   - --disable-quic: no QUIC to any origin. Chromium uses no QUIC for a
//     proxied request and WebTransport sends nothing with a proxy set
//     (the Chromium test checks both), so this is a second line.
//   - --disable-background-networking: none of Chromium's own traffic
//     (component, safe-browsing and variation updates, suggestions); it
//     would go through the proxy, but a sandbox's browser has no use for
//     it.
//
// Service workers, workers, EventSource, prefetch and beacons use the same
// network stack and proxy as pages, so they need no switch of their own.
func ChromiumFlags(addr string) []string {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		host = addr
	}
	return []string{
		"--proxy-server=http://" + addr,
		"--proxy-bypass-list=<-loopback>",
		"--host-resolver-rules=MAP * ~NOTFOUND , EXCLUDE " + host,
		"--webrtc-ip-handling-policy=disable_non_proxied_udp",
		"--force-webrtc-ip-handling-policy=disable_non_proxied_udp",
		"--disable-quic",
		"--disable-background-networking",
	}
}
