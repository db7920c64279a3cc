package pin_test

import (
	"crypto/tls"
	"errors"
	"io"
	"net"
	"net/http"
	"sync/atomic"
	"testing"

	"github.com/agentsfleet/agentsfleet/shared/sandbox/pin"
)

// resumingServer serves TLS on ln with cfg and counts the requests that
// came over a resumed session.
type resumingServer struct {
	url               string
	requests, resumed atomic.Int64
}

func serveResuming(t *testing.T, ln net.Listener, cfg *tls.Config) *resumingServer {
	t.Helper()
	s := &resumingServer{url: "https://" + ln.Addr().String()}
	hs := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.requests.Add(1)
		if r.TLS.DidResume {
			s.resumed.Add(1)
		}
		io.WriteString(w, "ok")
	})}
	go hs.Serve(tls.NewListener(ln, cfg))
	t.Cleanup(func() { hs.Close() })
	return s
}

func getOnce(t *testing.T, url, tok string) error {
	t.Helper()
	tr := pin.Transport(tok) // a new transport: a new connection
	defer tr.CloseIdleConnections()
	resp, err := (&http.Client{Transport: tr}).Get(url)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	_, err = io.ReadAll(resp.Body)
	return err
}

// A new connection to the sandbox (a new client, as in a later invocation
// of a warm runner) resumes the session of an earlier one.
func TestNewConnectionsResume(t *testing.T) {
	t.Parallel()
	tok := newToken()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := serveResuming(t, ln, serverTLS(t, tok))
	for i := range 3 {
		if err := getOnce(t, srv.url, tok); err != nil {
			t.Fatalf("call %d: %v", i, err)
		}
	}
	if n, r := srv.requests.Load(), srv.resumed.Load(); n != 3 || r != 2 {
		t.Fatalf("%d requests, %d of them resumed; want 3 and 2", n, r)
	}
}

// A ticket is offered to the address it came from, whoever serves there
// now. Another sandbox (another token) at that address cannot open it,
// so the handshake is a full one and the pin refuses that sandbox.
func TestTicketOpensOnlyItsSandbox(t *testing.T) {
	t.Parallel()
	tok, other := newToken(), newToken()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	first := serveResuming(t, ln, serverTLS(t, tok))
	if err := getOnce(t, first.url, tok); err != nil {
		t.Fatal(err)
	}
	ln.Close()
	ln2, err := net.Listen("tcp", addr)
	if err != nil {
		t.Skipf("the port was taken meanwhile: %v", err)
	}
	impostor := serveResuming(t, ln2, serverTLS(t, other))
	err = getOnce(t, impostor.url, tok)
	if !errors.Is(err, pin.ErrWrongKey) {
		t.Fatalf("a call to another sandbox at the address: %v, want ErrWrongKey", err)
	}
	if n := impostor.requests.Load(); n != 0 {
		t.Fatalf("the other sandbox got %d requests", n)
	}
}

// The clients of one sandbox share a transport, so a client made anew
// calls over the connection the last one kept; another sandbox's clients
// never get that connection.
func TestSharedIsOnePerSandbox(t *testing.T) {
	t.Parallel()
	tok, other := newToken(), newToken()
	if pin.Shared(tok) != pin.Shared(tok) {
		t.Error("two transports for one sandbox")
	}
	if pin.Shared(tok) == pin.Shared(other) {
		t.Error("one transport for two sandboxes")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var conns atomic.Int64
	srv := serveResuming(t, &acceptCounter{Listener: ln, n: &conns}, serverTLS(t, tok))
	for i := range 3 {
		resp, err := (&http.Client{Transport: pin.Shared(tok)}).Get(srv.url)
		if err != nil {
			t.Fatalf("call %d: %v", i, err)
		}
		io.ReadAll(resp.Body)
		resp.Body.Close()
	}
	if n := conns.Load(); n != 1 {
		t.Fatalf("three clients of one sandbox made %d connections, want 1", n)
	}
}

type acceptCounter struct {
	net.Listener
	n *atomic.Int64
}

func (l *acceptCounter) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err == nil {
		l.n.Add(1)
	}
	return c, err
}
