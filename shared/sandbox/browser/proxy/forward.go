package proxy

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httputil"
	"net/netip"
	"strings"
	"sync"
	"syscall"

	"github.com/agentsfleet/agentsfleet/shared/run"
	"golang.org/x/net/http/httpguts"
)

// forwardRequest serves an absolute-form request (GET http://host/path, or
// ws://host/path with Upgrade: websocket). It is forwarded as is, without
// the hop-by-hop and Proxy-* headers, to the checked destination; the
// proxy follows no redirect, so each hop the browser follows comes back
// here and is checked again.
func (p *Proxy) forwardRequest(w http.ResponseWriter, r *http.Request) {
	host := r.URL.Host
	switch r.URL.Scheme {
	case "http", "ws":
	case "https", "wss":
		p.refuse(w, r, http.StatusBadRequest, host, netip.AddrPort{}, run.RuleScheme,
			r.URL.Scheme+" goes through a CONNECT tunnel, not an absolute-form request")
		return
	default:
		p.refuse(w, r, http.StatusBadRequest, host, netip.AddrPort{}, run.RuleScheme,
			"scheme "+quoteTarget(r.URL.Scheme)+" is not carried: only http and ws, and https and wss through CONNECT")
		return
	}
	if host == "" || r.URL.User != nil {
		p.refuse(w, r, http.StatusBadRequest, host, netip.AddrPort{}, run.RuleHost, "the request target needs a host and no user name: "+quoteTarget(r.RequestURI))
		return
	}
	target := withPort(host, "80")
	if httpguts.HeaderValuesContainsToken(r.Header["Connection"], "upgrade") {
		// An upgraded request holds its connection like a tunnel.
		if !p.slot(w, r, target) {
			return
		}
		defer p.release()
	}
	f := p.openFlow(r.Method, target)
	defer p.closeFlow(f)
	note := &dialNote{flow: f}
	ctx := context.WithValue(r.Context(), dialNoteKey{}, note)
	out := r.WithContext(ctx)
	if r.Body != nil && r.Body != http.NoBody {
		out.Body = countedBody{r.Body, &f.out}
	}
	p.forward.ServeHTTP(&flowWriter{ResponseWriter: w, f: f}, out)
}

// flowWriter counts a forwarded response's status and body bytes into its
// flow.
type flowWriter struct {
	http.ResponseWriter
	f *flow
}

func (w *flowWriter) WriteHeader(status int) {
	w.f.status.CompareAndSwap(0, int64(status))
	w.ResponseWriter.WriteHeader(status)
}

func (w *flowWriter) Write(b []byte) (int, error) {
	w.f.status.CompareAndSwap(0, http.StatusOK)
	n, err := w.ResponseWriter.Write(b)
	w.f.in.Add(int64(n))
	return n, err
}

// Unwrap lets http.ResponseController reach the connection's Flush and
// Hijack (an upgraded request's bytes after its handshake are not counted).
func (w *flowWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// rewrite makes the outbound request: the browser's, to the same URL (ws
// spoken as the HTTP/1.1 upgrade it is), without Proxy-* headers.
// ReverseProxy has already removed the hop-by-hop headers (keeping Upgrade
// for an upgrade) and any X-Forwarded-*; it adds none.
func rewrite(pr *httputil.ProxyRequest) {
	if pr.Out.URL.Scheme == "ws" {
		pr.Out.URL.Scheme = "http"
	}
	pr.Out.Host = pr.In.Host
	for k := range pr.Out.Header {
		if strings.HasPrefix(k, "Proxy-") {
			delete(pr.Out.Header, k)
		}
	}
}

// dialNote carries, from the Transport's dial back to the request's error
// handler, the address the rules refused.
type dialNote struct {
	mu   sync.Mutex
	at   netip.AddrPort
	flow *flow // the request's, whose entry refuseErr records instead
}

type dialNoteKey struct{}

// dialForward is the Transport's DialContext: the checked dial, with the
// idle bound on the connection.
func (p *Proxy) dialForward(ctx context.Context, _, address string) (net.Conn, error) {
	conn, at, err := p.dial(ctx, address)
	if note, ok := ctx.Value(dialNoteKey{}).(*dialNote); ok && at.IsValid() {
		note.mu.Lock()
		note.at = at
		note.mu.Unlock()
	}
	if err != nil {
		return nil, err
	}
	return idleConn{conn, newActivity(p.idle)}, nil
}

// forwardError answers a forwarded request that failed: 403 for a refused
// destination, 502 or 504 otherwise.
func (p *Proxy) forwardError(w http.ResponseWriter, r *http.Request, err error) {
	var at netip.AddrPort
	if note, ok := r.Context().Value(dialNoteKey{}).(*dialNote); ok {
		note.mu.Lock()
		at = note.at
		note.mu.Unlock()
		note.flow.discard.Store(true)
	}
	p.refuseErr(w, r, withPort(r.URL.Host, "80"), at, err)
}

// unreachable says, without the internals of the error, why host could
// not be reached.
func unreachable(host string, err error) (int, string) {
	var dns *net.DNSError
	switch {
	case errors.As(err, &dns):
		return http.StatusBadGateway, host + " does not resolve"
	case errors.Is(err, context.DeadlineExceeded) || isTimeout(err):
		return http.StatusGatewayTimeout, "timed out reaching " + host
	case errors.Is(err, syscall.ECONNREFUSED):
		return http.StatusBadGateway, host + " refused the connection"
	case errors.Is(err, context.Canceled):
		return http.StatusBadGateway, "the request to " + host + " was cancelled"
	default:
		return http.StatusBadGateway, "cannot reach " + host
	}
}
