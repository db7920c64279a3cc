package proxy

import (
	"errors"
	"io"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/agentsfleet/agentsfleet/shared/run"
)

// tunnel serves CONNECT host:port: Chromium's way to https and wss (and,
// behind a proxy, to ws too). It checks and dials the destination before it
// answers, so a refused destination gets 403 and never a connection.
func (p *Proxy) tunnel(w http.ResponseWriter, r *http.Request) {
	host := r.URL.Host
	if h, port, err := net.SplitHostPort(host); err != nil || h == "" || port == "" {
		p.refuse(w, r, http.StatusBadRequest, host, netip.AddrPort{}, run.RuleHost, "CONNECT takes host:port, not "+quoteTarget(r.RequestURI))
		return
	}
	if !p.slot(w, r, host) {
		return
	}
	defer p.release()
	up, at, err := p.dial(r.Context(), host)
	if err != nil {
		p.refuseErr(w, r, host, at, err)
		return
	}
	hj, ok := w.(http.Hijacker)
	if !ok {
		up.Close()
		http.Error(w, "agentsfleet browser proxy: this connection cannot carry a tunnel", http.StatusInternalServerError)
		return
	}
	client, buf, err := hj.Hijack()
	if err != nil {
		up.Close()
		return
	}
	if !p.track(client) || !p.track(up) {
		client.Close()
		up.Close()
		return
	}
	defer p.untrack(client)
	defer p.untrack(up)
	f := p.openFlow(http.MethodConnect, host)
	f.status.Store(http.StatusOK)
	defer p.closeFlow(f)
	if _, err := io.WriteString(client, "HTTP/1.1 200 Connection established\r\n\r\n"); err != nil {
		return
	}
	// Whatever the browser sent after its CONNECT and the server already
	// read belongs to the tunnel.
	if n := buf.Reader.Buffered(); n > 0 {
		b, _ := buf.Reader.Peek(n)
		if _, err := (counter{up, &f.out}).Write(b); err != nil {
			return
		}
	}
	p.pipe(client, up, f)
}

// pipe copies both ways, counting the bytes into f, until either side
// ends, an error, Close, or p.idle without a byte either way; then it
// closes both. a is the browser's end, b the destination's.
func (p *Proxy) pipe(a, b net.Conn, f *flow) {
	act := newActivity(p.idle)
	ia, ib := idleConn{a, act}, idleConn{b, act}
	done := make(chan struct{}, 2)
	go func() { io.Copy(counter{ib, &f.out}, ia); done <- struct{}{} }()
	go func() { io.Copy(counter{ia, &f.in}, ib); done <- struct{}{} }()
	<-done
	a.Close()
	b.Close()
	<-done
}

// activity is when a tunnel last carried a byte, either way.
type activity struct {
	idle time.Duration
	last atomic.Int64 // UnixNano
}

func newActivity(idle time.Duration) *activity {
	a := &activity{idle: idle}
	a.touch()
	return a
}

func (a *activity) touch() { a.last.Store(time.Now().UnixNano()) }

// quiet reports whether nothing moved for the idle time.
func (a *activity) quiet() bool {
	return time.Since(time.Unix(0, a.last.Load())) >= a.idle
}

// idleConn is a connection that times out only when its activity (shared
// by both ends of a tunnel) has been quiet for the idle time, so that a
// long download with nothing sent the other way is not cut.
type idleConn struct {
	net.Conn
	act *activity
}

func (c idleConn) Read(b []byte) (int, error) {
	for {
		c.Conn.SetReadDeadline(time.Now().Add(c.act.idle))
		n, err := c.Conn.Read(b)
		if n > 0 {
			c.act.touch()
		}
		if n == 0 && isTimeout(err) && !c.act.quiet() {
			continue // the other direction moved meanwhile
		}
		return n, err
	}
}

func (c idleConn) Write(b []byte) (int, error) {
	c.Conn.SetWriteDeadline(time.Now().Add(c.act.idle))
	n, err := c.Conn.Write(b)
	if n > 0 {
		c.act.touch()
	}
	return n, err
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// quoteTarget quotes a request target for an error message, cut short.
func quoteTarget(s string) string {
	const most = 200
	if len(s) > most {
		s = s[:most] + "…"
	}
	return strconv.Quote(s)
}
