package proxy

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentsfleet/agentsfleet/shared/web/egress"
)

// watched is a live HTTP server on loopback that counts every connection
// it accepts, so that a test can prove the proxy never reached it.
type watched struct {
	*httptest.Server
	conns atomic.Int64
	addr  netip.AddrPort
}

func (w *watched) port() uint16 { return w.addr.Port() }

// newWatched starts a watched server on network's loopback address
// ("tcp4" or "tcp6"), answering every request with "reached PATH" and
// echoing the request's headers as X-Got-* headers.
func newWatched(t testing.TB, listen string) *watched {
	t.Helper()
	w := &watched{}
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		t.Skipf("cannot listen on %s: %v", listen, err)
	}
	w.Server = httptest.NewUnstartedServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		for k, v := range r.Header {
			rw.Header()["X-Got-"+k] = v
		}
		if r.URL.Path == "/redirect" {
			http.Redirect(rw, r, "http://127.0.0.1:1/next", http.StatusFound)
			return
		}
		fmt.Fprintf(rw, "reached %s", r.URL.Path)
	}))
	w.Listener.Close()
	w.Listener = ln
	w.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			w.conns.Add(1)
		}
	}
	w.Start()
	t.Cleanup(w.Close)
	w.addr = netip.MustParseAddrPort(ln.Addr().String())
	return w
}

func newProxy(t testing.TB, cfg Config) *Proxy {
	t.Helper()
	p, err := Start(cfg)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

// ask sends one raw request to the proxy and reads the response head and
// body; conn stays open for a tunnel (the caller closes it).
func ask(t testing.TB, proxyAddr, request string) (*http.Response, string, net.Conn, *bufio.Reader) {
	t.Helper()
	c, err := net.Dial("tcp", proxyAddr)
	if err != nil {
		t.Fatal(err)
	}
	c.SetDeadline(time.Now().Add(30 * time.Second))
	if _, err := io.WriteString(c, request); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(c)
	res, err := http.ReadResponse(br, nil)
	if err != nil {
		c.Close()
		t.Fatalf("read the proxy's answer to %q: %v", request, err)
	}
	body := ""
	if res.StatusCode != http.StatusOK && res.StatusCode != http.StatusSwitchingProtocols {
		b, _ := io.ReadAll(res.Body)
		body = string(b)
	}
	return res, body, c, br
}

func connect(t testing.TB, proxyAddr, target string) (*http.Response, string, net.Conn, *bufio.Reader) {
	return ask(t, proxyAddr, "CONNECT "+target+" HTTP/1.1\r\nHost: "+target+"\r\n\r\n")
}

// refusedConnect asks for a tunnel to target and fails t unless the proxy
// answers 403 with a reason containing want.
func refusedConnect(t testing.TB, p *Proxy, target, want string) {
	t.Helper()
	res, body, c, _ := connect(t, p.Addr(), target)
	c.Close()
	if res.StatusCode != http.StatusForbidden || !strings.Contains(body, want) {
		t.Errorf("CONNECT %s = %d %q, want 403 saying %q", target, res.StatusCode, body, want)
	}
}

// unreached fails t if srv accepted a connection.
func unreached(t testing.TB, srv *watched, what string) {
	t.Helper()
	if n := srv.conns.Load(); n != 0 {
		t.Errorf("%s got %d connections through the proxy, want 0", what, n)
	}
}

func get(t testing.TB, proxyAddr, url, host string) (*http.Response, string) {
	t.Helper()
	res, body, c, _ := ask(t, proxyAddr, "GET "+url+" HTTP/1.1\r\nHost: "+host+"\r\nConnection: close\r\n\r\n")
	if res.StatusCode == http.StatusOK {
		b, _ := io.ReadAll(res.Body)
		body = string(b)
	}
	c.Close()
	return res, body
}

// The destinations a page must never reach, each as CONNECT and as an
// absolute-form GET: the watched server's port on every spelling of
// loopback, and the metadata and other refused addresses.
func refusedTargets(port uint16) []struct{ target, want string } {
	p := fmt.Sprint(port)
	return []struct{ target, want string }{
		{"127.0.0.1:" + p, "loopback"},
		{"127.0.0.2:" + p, "loopback"},
		{"127.1:" + p, "loopback"},
		{"2130706433:" + p, "loopback"},
		{"0x7f.1:" + p, "loopback"},
		{"0177.0.0.1:" + p, "loopback"},
		{"0x7f000001:" + p, "loopback"},
		{"[::1]:" + p, "loopback"},
		{"[::ffff:127.0.0.1]:" + p, "IPv4-mapped form of 127.0.0.1"},
		{"[::ffff:7f00:1]:" + p, "IPv4-mapped form of 127.0.0.1"},
		{"[::127.0.0.1]:" + p, "IPv4-compatible form of 127.0.0.1"},
		{"[64:ff9b::7f00:1]:" + p, "NAT64 form of 127.0.0.1"},
		{"[2002:7f00:1::1]:" + p, "6to4 form of 127.0.0.1"},
		{"loop.test:" + p, "loop.test resolves to 127.0.0.1"},
		{"LOOP.Test.:" + p, "loop.test resolves to 127.0.0.1"},
		{"v6loop.test:" + p, "loopback"},
		{"localhost:" + p, "loopback"},
		{"0.0.0.0:" + p, "0.0.0.0/8"},
		{"0:" + p, "0.0.0.0/8"},
		{"[::]:" + p, "unspecified"},
		{"169.254.169.254:80", "cloud metadata"},
		{"169.254.170.2:80", "cloud metadata"},
		{"169.254.170.23:80", "cloud metadata"},
		{"2852039166:80", "cloud metadata"}, // 169.254.169.254
		{"[::ffff:169.254.169.254]:80", "cloud metadata"},
		{"[fd00:ec2::254]:80", "cloud metadata"},
		{"[fd00:ec2::253]:80", "AWS service address"},
		{"100.100.100.200:80", "cloud metadata"},
		{"meta.test:80", "cloud metadata"},
		{"169.254.1.1:80", "link-local"},
		{"[fe80::1]:80", "link-local"},
		{"[fe80::1%25lo]:80", "link-local"},
		{"224.0.0.1:80", "multicast"},
		{"[ff02::1]:80", "multicast"},
		{"255.255.255.255:80", "broadcast"},
		{"[2001::1]:80", "Teredo"},
		{"127.0.0.1:99999", "not a valid port"},
		{"loop.test:0", "not a valid port"},
		{"[64:ff9b:1::a00:1]:80", "local-use NAT64"},
	}
}

var testHosts = egress.Hosts{
	"loop.test":   {netip.MustParseAddr("127.0.0.1")},
	"v6loop.test": {netip.MustParseAddr("::1")},
	"localhost":   {netip.MustParseAddr("127.0.0.1"), netip.MustParseAddr("::1")},
	"meta.test":   {netip.MustParseAddr("169.254.169.254")},
}

func TestRefusedBeforeDialing(t *testing.T) {
	t.Parallel()
	srv := newWatched(t, "127.0.0.1:0")
	p := newProxy(t, Config{Resolver: testHosts})
	for _, tt := range refusedTargets(srv.port()) {
		target := tt.target
		t.Run("CONNECT "+target, func(t *testing.T) { refusedConnect(t, p, target, tt.want) })
		t.Run("GET "+tt.target, func(t *testing.T) {
			url := "http://" + tt.target + "/secret"
			res, body := get(t, p.Addr(), url, tt.target)
			if res.StatusCode != http.StatusForbidden || !strings.Contains(body, tt.want) {
				t.Fatalf("GET %s = %d %q, want 403 saying %q", url, res.StatusCode, body, tt.want)
			}
			if ct := res.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/plain") {
				t.Fatalf("GET %s: Content-Type %q, want text/plain", url, ct)
			}
		})
	}
	unreached(t, srv, "the loopback server")
	// Every refusal is recorded, the last 64 kept, the newest last.
	got := p.Refusals()
	if len(got) != keptRefusals {
		t.Fatalf("Refusals() holds %d, want the last %d", len(got), keptRefusals)
	}
	last := got[len(got)-1]
	if last.Host != "[64:ff9b:1::a00:1]:80" || last.Addr != "[64:ff9b:1::a00:1]:80" || !strings.Contains(last.Reason, "local-use NAT64") {
		t.Fatalf("last refusal = %+v, want the local-use NAT64 GET with its address", last)
	}
}

// A name is refused with the address it resolved to, and the metadata
// addresses are refused with no dial: no connection to them is ever tried,
// which the empty dial log shows.
func TestRefusalRecordsTheAddress(t *testing.T) {
	t.Parallel()
	srv := newWatched(t, "127.0.0.1:0")
	p := newProxy(t, Config{Resolver: testHosts})
	target := fmt.Sprintf("loop.test:%d", srv.port())
	res, _, c, _ := connect(t, p.Addr(), target)
	c.Close()
	if res.StatusCode != http.StatusForbidden {
		t.Fatalf("CONNECT %s = %d, want 403", target, res.StatusCode)
	}
	got := p.Refusals()
	want := Refusal{Host: target, Addr: fmt.Sprintf("127.0.0.1:%d", srv.port())}
	if len(got) != 1 || got[0].Host != want.Host || got[0].Addr != want.Addr || !strings.Contains(got[0].Reason, "loopback") {
		t.Fatalf("Refusals() = %+v, want one for %s at %s", got, want.Host, want.Addr)
	}
}

func TestAllowAdmitsExactlyItsAddress(t *testing.T) {
	t.Parallel()
	allowed := newWatched(t, "127.0.0.1:0")
	other := newWatched(t, "127.0.0.1:0") // same ip, another port
	p := newProxy(t, Config{Allow: allowed.addr, Resolver: egress.Hosts{
		"allowed.test": {allowed.addr.Addr()},
		"mixed.test":   {allowed.addr.Addr(), netip.MustParseAddr("127.0.0.2")},
	}})

	res, body := get(t, p.Addr(), "http://"+allowed.addr.String()+"/page", allowed.addr.String())
	if res.StatusCode != http.StatusOK || body != "reached /page" {
		t.Fatalf("GET the allowed server = %d %q, want 200 \"reached /page\"", res.StatusCode, body)
	}
	name := fmt.Sprintf("allowed.test:%d", allowed.port())
	if res, body := get(t, p.Addr(), "http://"+name+"/byname", name); res.StatusCode != http.StatusOK || body != "reached /byname" {
		t.Fatalf("GET the allowed server by name = %d %q, want 200", res.StatusCode, body)
	}
	res, _, c, br := connect(t, p.Addr(), allowed.addr.String())
	if res.StatusCode != http.StatusOK {
		t.Fatalf("CONNECT the allowed server = %d, want 200", res.StatusCode)
	}
	io.WriteString(c, "GET /tunnelled HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
	inner, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatalf("request through the tunnel: %v", err)
	}
	b, _ := io.ReadAll(inner.Body)
	c.Close()
	if string(b) != "reached /tunnelled" {
		t.Fatalf("through the tunnel got %q, want \"reached /tunnelled\"", b)
	}
	before := allowed.conns.Load()

	for _, target := range []string{
		other.addr.String(), // the same ip on another port
		fmt.Sprintf("[::ffff:127.0.0.1]:%d", other.port()),         // …in another form
		fmt.Sprintf("mixed.test:%d", allowed.port()),               // the allowed address beside a refused one
		fmt.Sprintf("127.0.0.2:%d", allowed.port()),                // another loopback ip on the allowed port
		fmt.Sprintf("[::1]:%d", allowed.port()),                    // IPv6 loopback on the allowed port
		fmt.Sprintf("0.0.0.0:%d", allowed.port()),                  // "any", which Linux connects to loopback
		netip.AddrPortFrom(allowed.addr.Addr(), 80).String(),       // the allowed ip on a well-known port
		fmt.Sprintf("2130706433:%d", other.port()),                 // legacy literal of the other
		fmt.Sprintf("[::ffff:7f00:1]:%d", other.port()),            // mapped hex of the other
		fmt.Sprintf("[64:ff9b::7f00:1]:%d", allowed.port()),        // NAT64 of the allowed ip
		fmt.Sprintf("[2002:7f00:1::]:%d", allowed.port()),          // 6to4 of the allowed ip
		fmt.Sprintf("[::127.0.0.1]:%d", allowed.port()),            // compatible form of the allowed ip
		fmt.Sprintf("[fe80::1%%25lo]:%d", allowed.port()),          // zoned link-local
		netip.AddrPortFrom(netip.MustParseAddr("::1"), 1).String(), // port 1
	} {
		refusedConnect(t, p, target, "")
	}
	unreached(t, other, "the server on the other port")
	if n := allowed.conns.Load() - before; n != 0 {
		t.Errorf("the allowed server got %d connections from refused requests, want 0", n)
	}
}

// A destination that cannot be reached is not a refusal: 502 or 504, with
// a reason and no internals.
// closedPort is a loopback address where nothing listens.
func closedPort(t testing.TB) netip.AddrPort {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return netip.MustParseAddrPort(ln.Addr().String())
}

func TestUnreachable(t *testing.T) {
	t.Parallel()
	closed := closedPort(t)
	p := newProxy(t, Config{Allow: closed, Resolver: egress.Hosts{}})
	for _, tt := range []struct{ target, want string }{
		{closed.String(), "refused the connection"},
		{"nowhere.test:80", "does not resolve"},
	} {
		res, body, c, _ := connect(t, p.Addr(), tt.target)
		c.Close()
		if res.StatusCode != http.StatusBadGateway || !strings.Contains(body, tt.want) {
			t.Errorf("CONNECT %s = %d %q, want 502 saying %q", tt.target, res.StatusCode, body, tt.want)
		}
		res, body = get(t, p.Addr(), "http://"+tt.target+"/", tt.target)
		if res.StatusCode != http.StatusBadGateway || !strings.Contains(body, tt.want) {
			t.Errorf("GET http://%s/ = %d %q, want 502 saying %q", tt.target, res.StatusCode, body, tt.want)
		}
	}
	if got := p.Refusals(); len(got) != 0 {
		t.Errorf("Refusals() = %v, want none for unreachable destinations", got)
	}
}

func TestStartRefusesABadAllow(t *testing.T) {
	t.Parallel()
	for _, a := range []string{"10.0.0.1:80", "8.8.8.8:443", "127.0.0.1:0", "169.254.169.254:80"} {
		p, err := Start(Config{Allow: netip.MustParseAddrPort(a)})
		if err == nil {
			p.Close()
			t.Errorf("Start(Allow %s) succeeded, want an error", a)
		}
	}
}

// A page must not loop through the proxy to the proxy.
func TestTheProxyItselfIsRefused(t *testing.T) {
	t.Parallel()
	p := newProxy(t, Config{})
	refusedConnect(t, p, p.Addr(), "proxy itself")
	res, body := get(t, p.Addr(), "http://"+p.Addr()+"/", p.Addr())
	if res.StatusCode != http.StatusForbidden || !strings.Contains(body, "proxy itself") {
		t.Fatalf("GET the proxy through itself = %d %q, want 403", res.StatusCode, body)
	}
}

// sandboxd listens on the task's own address as well as loopback: every
// address of this machine is refused like loopback.
func TestOwnAddressesAreRefused(t *testing.T) {
	t.Parallel()
	var own netip.Addr
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok {
			ip, _ := netip.AddrFromSlice(n.IP)
			ip = ip.Unmap()
			if ip.Is4() && !ip.IsLoopback() {
				own = ip
				break
			}
		}
	}
	if !own.IsValid() {
		t.Skip("this machine has no IPv4 address but loopback")
	}
	srv := newWatched(t, "0.0.0.0:0")
	p := newProxy(t, Config{})
	for _, target := range []string{
		netip.AddrPortFrom(own, srv.port()).String(),
		fmt.Sprintf("[::ffff:%s]:%d", own, srv.port()),
	} {
		refusedConnect(t, p, target, "address of this machine")
	}
	unreached(t, srv, "the server on this machine's address")
}

func TestBadRequests(t *testing.T) {
	t.Parallel()
	srv := newWatched(t, "127.0.0.1:0")
	p := newProxy(t, Config{Allow: srv.addr})
	a := srv.addr.String()
	tests := []struct {
		request string
		status  int
		want    string
	}{
		{"GET /secret HTTP/1.1\r\nHost: " + a + "\r\n\r\n", 400, "forward proxy"},
		{"GET ftp://" + a + "/ HTTP/1.1\r\nHost: " + a + "\r\n\r\n", 400, `scheme "ftp"`},
		{"GET file:///etc/passwd HTTP/1.1\r\nHost: x\r\n\r\n", 400, `scheme "file"`},
		{"GET https://" + a + "/ HTTP/1.1\r\nHost: " + a + "\r\n\r\n", 400, "CONNECT"},
		{"GET http://user@" + a + "/ HTTP/1.1\r\nHost: " + a + "\r\n\r\n", 400, "no user name"},
		{"CONNECT " + srv.addr.Addr().String() + " HTTP/1.1\r\nHost: x\r\n\r\n", 400, "host:port"},
		{"CONNECT :80 HTTP/1.1\r\nHost: x\r\n\r\n", 400, "host:port"},
		{"GET http://" + a + "/ HTTP/1.1\r\nHost: " + a + "\r\nX-Big: " + strings.Repeat("a", MaxHeaderBytes+8192) + "\r\n\r\n", 431, ""},
	}
	for _, tt := range tests {
		res, body, c, _ := ask(t, p.Addr(), tt.request)
		c.Close()
		if res.StatusCode != tt.status || !strings.Contains(body, tt.want) {
			t.Errorf("%.60q = %d %q, want %d saying %q", tt.request, res.StatusCode, body, tt.status, tt.want)
		}
	}
	unreached(t, srv, "the server, from bad requests,")
}

// The proxy passes the browser's request on without hop-by-hop or Proxy-*
// headers, and passes a redirect back instead of following it.
func TestForwardHeadersAndRedirects(t *testing.T) {
	t.Parallel()
	srv := newWatched(t, "127.0.0.1:0")
	p := newProxy(t, Config{Allow: srv.addr})
	a := srv.addr.String()
	res, _, c, _ := ask(t, p.Addr(), "GET http://"+a+"/redirect HTTP/1.1\r\nHost: "+a+
		"\r\nProxy-Authorization: Basic eDp5\r\nProxy-Connection: keep-alive\r\nProxy-Secret: 1"+
		"\r\nConnection: close, X-Hop\r\nX-Hop: 1\r\nKeep-Alive: 300\r\nX-Page: kept\r\nCookie: a=b\r\n\r\n")
	c.Close()
	if res.StatusCode != http.StatusFound || res.Header.Get("Location") != "http://127.0.0.1:1/next" {
		t.Fatalf("GET /redirect = %d Location %q, want the 302 passed back unfollowed", res.StatusCode, res.Header.Get("Location"))
	}
	for _, h := range []string{"Proxy-Authorization", "Proxy-Connection", "Proxy-Secret", "X-Hop", "Keep-Alive", "X-Forwarded-For"} {
		if v := res.Header.Get("X-Got-" + h); v != "" {
			t.Errorf("the server got %s: %q, want it removed", h, v)
		}
	}
	for h, want := range map[string]string{"X-Page": "kept", "Cookie": "a=b"} {
		if v := res.Header.Get("X-Got-" + h); v != want {
			t.Errorf("the server got %s: %q, want %q", h, v, want)
		}
	}
}

// upgrader answers an upgrade with 101 and then echoes bytes, as a
// WebSocket server would carry frames.
func upgrader(t *testing.T) (netip.AddrPort, *atomic.Int64) {
	var conns atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		conns.Add(1)
		if r.Header.Get("Upgrade") != "websocket" {
			http.Error(w, "want an upgrade", http.StatusBadRequest)
			return
		}
		c, buf, err := w.(http.Hijacker).Hijack()
		if err != nil {
			return
		}
		defer c.Close()
		io.WriteString(c, "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n")
		io.Copy(c, buf)
	}))
	t.Cleanup(srv.Close)
	return netip.MustParseAddrPort(srv.Listener.Addr().String()), &conns
}

func TestForwardWebSocketUpgrade(t *testing.T) {
	t.Parallel()
	up, conns := upgrader(t)
	p := newProxy(t, Config{Allow: up})
	for _, scheme := range []string{"ws", "http"} {
		res, _, c, br := ask(t, p.Addr(), "GET "+scheme+"://"+up.String()+"/socket HTTP/1.1\r\nHost: "+up.String()+
			"\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n")
		if res.StatusCode != http.StatusSwitchingProtocols {
			c.Close()
			t.Fatalf("%s upgrade = %d, want 101", scheme, res.StatusCode)
		}
		io.WriteString(c, "frame")
		got := make([]byte, 5)
		if _, err := io.ReadFull(br, got); err != nil || string(got) != "frame" {
			t.Fatalf("%s upgrade: echo = %q, %v; want \"frame\"", scheme, got, err)
		}
		c.Close()
	}
	// Close ends an upgraded request as it ends a tunnel.
	res, _, c, br := ask(t, p.Addr(), "GET ws://"+up.String()+"/socket HTTP/1.1\r\nHost: "+up.String()+"\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n")
	defer c.Close()
	if res.StatusCode != http.StatusSwitchingProtocols {
		t.Fatalf("upgrade = %d, want 101", res.StatusCode)
	}
	if err := p.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if n, err := br.Read(make([]byte, 1)); err != io.EOF {
		t.Fatalf("read from the upgraded request after Close = %d, %v; want EOF", n, err)
	}
	// ws:// to loopback is refused before any dial.
	target := fmt.Sprintf("127.0.0.1:%d", up.Port()+0)
	p2 := newProxy(t, Config{})
	before := conns.Load()
	res, body, c, _ := ask(t, p2.Addr(), "GET ws://"+target+"/socket HTTP/1.1\r\nHost: "+target+"\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n")
	c.Close()
	if res.StatusCode != http.StatusForbidden || !strings.Contains(body, "loopback") {
		t.Fatalf("ws upgrade to loopback = %d %q, want 403", res.StatusCode, body)
	}
	if n := conns.Load() - before; n != 0 {
		t.Fatalf("the refused upgrade reached the server %d times, want 0", n)
	}
}

// echo starts a TCP server that echoes bytes; closed reports, for each
// connection, when the server saw it end.
func echo(t testing.TB) (netip.AddrPort, chan struct{}) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	closed := make(chan struct{}, 1024)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				io.Copy(c, c)
				c.Close()
				closed <- struct{}{}
			}()
		}
	}()
	return netip.MustParseAddrPort(ln.Addr().String()), closed
}

func openTunnel(t testing.TB, p *Proxy, target string) (net.Conn, *bufio.Reader) {
	t.Helper()
	res, body, c, br := connect(t, p.Addr(), target)
	if res.StatusCode != http.StatusOK {
		c.Close()
		t.Fatalf("CONNECT %s = %d %q, want 200", target, res.StatusCode, body)
	}
	return c, br
}

func roundTrip(t testing.TB, c net.Conn, br *bufio.Reader) {
	t.Helper()
	if _, err := c.Write([]byte{'x'}); err != nil {
		t.Fatal(err)
	}
	if b, err := br.ReadByte(); err != nil || b != 'x' {
		t.Fatalf("echo through the tunnel = %q, %v", b, err)
	}
}

func TestCloseEndsTunnels(t *testing.T) {
	t.Parallel()
	up, closed := echo(t)
	p, err := Start(Config{Allow: up})
	if err != nil {
		t.Fatal(err)
	}
	c, br := openTunnel(t, p, up.String())
	defer c.Close()
	roundTrip(t, c, br)
	if err := p.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	// Close has returned: the tunnel's both ends are closed already.
	c.SetReadDeadline(time.Now().Add(30 * time.Second))
	if n, err := br.Read(make([]byte, 1)); err != io.EOF {
		t.Fatalf("read from the tunnel after Close = %d, %v; want EOF", n, err)
	}
	select {
	case <-closed:
	case <-time.After(30 * time.Second):
		t.Fatal("the destination's connection was not closed by Close")
	}
	if c, err := net.Dial("tcp", p.Addr()); err == nil {
		c.Close()
		t.Fatal("the proxy still accepts connections after Close")
	}
}

func TestTooManyTunnels(t *testing.T) {
	t.Parallel()
	up, _ := echo(t)
	p := newProxy(t, Config{Allow: up})
	var open []net.Conn
	defer func() {
		for _, c := range open {
			c.Close()
		}
	}()
	for range MaxTunnels {
		c, _ := openTunnel(t, p, up.String())
		open = append(open, c)
	}
	res, body, c, _ := connect(t, p.Addr(), up.String())
	c.Close()
	if res.StatusCode != http.StatusServiceUnavailable || !strings.Contains(body, "too many open tunnels") {
		t.Fatalf("tunnel %d = %d %q, want 503", MaxTunnels+1, res.StatusCode, body)
	}
	// A slot frees when a tunnel ends.
	open[0].Close()
	for i := 0; ; i++ {
		res, _, c, _ := connect(t, p.Addr(), up.String())
		c.Close()
		if res.StatusCode == http.StatusOK {
			break
		}
		if i == 1000 {
			t.Fatal("no tunnel slot came free after one tunnel closed")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestIdleTunnelEnds(t *testing.T) {
	t.Parallel()
	up, closed := echo(t)
	p, err := start(Config{Allow: up}, 200*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	c, br := openTunnel(t, p, up.String())
	defer c.Close()
	roundTrip(t, c, br)
	c.SetReadDeadline(time.Now().Add(30 * time.Second))
	if _, err := br.Read(make([]byte, 1)); err != io.EOF {
		t.Fatalf("idle tunnel read = %v, want EOF once idle", err)
	}
	<-closed
}

func TestChromiumFlags(t *testing.T) {
	t.Parallel()
	got := strings.Join(ChromiumFlags("127.0.0.1:4321"), " ")
	for _, want := range []string{
		"--proxy-server=http://127.0.0.1:4321",
		"--proxy-bypass-list=<-loopback>",
		"--host-resolver-rules=MAP * ~NOTFOUND , EXCLUDE 127.0.0.1",
		"--webrtc-ip-handling-policy=disable_non_proxied_udp",
		"--force-webrtc-ip-handling-policy=disable_non_proxied_udp",
		"--disable-quic",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("ChromiumFlags = %s, missing %s", got, want)
		}
	}
}

// RefusalsSince gives what came after a mark even once the kept refusals
// are at their bound, where the count of Refusals no longer grows.
func TestRefusalsSinceAMark(t *testing.T) {
	t.Parallel()
	p := newProxy(t, Config{Resolver: testHosts})
	for i := range keptRefusals + 6 {
		refusedConnect(t, p, fmt.Sprintf("127.0.0.%d:80", i%200+1), "loopback")
	}
	if got, mark := p.RefusalsSince(0); len(got) != keptRefusals || mark != keptRefusals+6 {
		t.Fatalf("RefusalsSince(0) = %d refusals, mark %d; want %d and %d", len(got), mark, keptRefusals, keptRefusals+6)
	}
	_, mark := p.RefusalsSince(0)
	if got, again := p.RefusalsSince(mark); len(got) != 0 || again != mark {
		t.Fatalf("nothing new: got %d refusals and mark %d, want none and %d", len(got), again, mark)
	}
	refusedConnect(t, p, "169.254.169.254:80", "metadata")
	got, next := p.RefusalsSince(mark)
	if len(got) != 1 || got[0].Host != "169.254.169.254:80" || next != mark+1 {
		t.Fatalf("after one more: %+v, mark %d; want the metadata refusal alone and mark %d", got, next, mark+1)
	}
}
