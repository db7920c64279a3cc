package proxy

import "net"

// ChromiumFlags are the command-line switches that send all of Chromium's
// traffic through the proxy at addr and nowhere else:
//
//   - --proxy-server=http://ADDR: every scheme (http, https, ws, wss) goes
//     to the proxy; a fixed proxy list without "direct://" never falls back
//     to a direct connection.
//   - --proxy-bypass-list=<-loopback>: Chromium otherwise bypasses the
//     proxy implicitly for localhost, loopback and link-local addresses
//     (169.254.169.254 among them); "<-loopback>" removes those rules.
//   - --host-resolver-rules=MAP * ~NOTFOUND , EXCLUDE HOST: Chromium
//     resolves no name itself (no DNS prefetch, no preconnect, no lookup
//     by WebRTC), and every name goes to the proxy to resolve; the
//     proxy's own address is excluded so that Chromium can reach it.
//   - --webrtc-ip-handling-policy=disable_non_proxied_udp: WebRTC sends no
//     UDP and reaches peers only over TCP through the proxy (TURN over
//     CONNECT, checked like any tunnel). Current Chromium reads this
//     switch; --force-webrtc-ip-handling-policy, the same with the same
//     value, is the name some builds read, and Chromium ignores a switch
//     it does not know.
//   - --disable-quic: no QUIC (HTTP/3 over UDP) to any origin.
//   - --disable-background-networking: none of Chromium's own traffic
//     (component, safe-browsing and variation updates, suggestions);
//     it would go through the proxy, but a sandbox's browser has no use
//     for it.
//
// Service workers, shared workers, prefetch and beacons use the same
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
