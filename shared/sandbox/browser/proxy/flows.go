package proxy

import (
	"io"
	"net"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/agentsfleet/agentsfleet/shared/run"
)

// keptFlows bounds the egress entries the proxy holds between two Drains;
// past it the oldest are dropped and counted.
const keptFlows = 1024

// flow is one tunnel or forwarded request while it is open. Its byte
// counts grow as it carries data; what a Drain already reported of them is
// kept so that the next one reports only what came after.
type flow struct {
	method string
	host   string
	port   int
	status atomic.Int64
	in     atomic.Int64 // destination → browser
	out    atomic.Int64 // browser → destination
	// discard: the request failed and its entry was recorded as a
	// refusal or an unreached destination instead.
	discard atomic.Bool

	// Under the proxy's mu: from when and how much the last Drain reported.
	from         time.Time
	reportedIn   int64
	reportedOut  int64
	reportedEver bool
}

// openFlow starts recording a tunnel or request to host (host:port, or a
// host alone for port 80).
func (p *Proxy) openFlow(method, host string) *flow {
	f := &flow{method: method}
	f.host, f.port = splitHostPort(host)
	p.mu.Lock()
	f.from = p.now()
	p.live[f] = struct{}{}
	p.mu.Unlock()
	return f
}

// closeFlow records what f carried since the last Drain and stops
// tracking it.
func (p *Proxy) closeFlow(f *flow) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.live, f)
	if f.discard.Load() {
		return
	}
	if e, ok := f.report(p.now()); ok {
		p.keepFlow(e)
	}
}

// report is f's entry for the time since the last Drain: none when it
// carried nothing since one reported it.
func (f *flow) report(now time.Time) (run.Egress, bool) {
	in, out := f.in.Load(), f.out.Load()
	if f.reportedEver && in == f.reportedIn && out == f.reportedOut {
		return run.Egress{}, false
	}
	e := run.Egress{
		Time: f.from, Method: f.method, Host: f.host, Port: f.port, Status: int(f.status.Load()),
		BytesIn: in - f.reportedIn, BytesOut: out - f.reportedOut, DurationMS: now.Sub(f.from).Milliseconds(),
	}
	f.from, f.reportedIn, f.reportedOut, f.reportedEver = now, in, out, true
	return e, true
}

// refusedFlow records a request the proxy refused by rule.
func (p *Proxy) refusedFlow(method, host, rule string) {
	e := run.Egress{Time: p.now(), Method: method, Refused: true, Rule: rule}
	e.Host, e.Port = splitHostPort(host)
	p.mu.Lock()
	p.keepFlow(e)
	p.mu.Unlock()
}

// unreachedFlow records a request whose destination could not be reached,
// why saying so.
func (p *Proxy) unreachedFlow(method, host, why string) {
	e := run.Egress{Time: p.now(), Method: method, Error: why}
	e.Host, e.Port = splitHostPort(host)
	p.mu.Lock()
	p.keepFlow(e)
	p.mu.Unlock()
}

// keepFlow holds e for the next Drain, dropping the oldest past
// keptFlows. Called with mu.
func (p *Proxy) keepFlow(e run.Egress) {
	if len(p.flows) == keptFlows {
		p.flows = append(p.flows[:0], p.flows[1:]...)
		p.droppedFlows++
	}
	p.flows = append(p.flows, e)
}

// Drain returns the egress entries since the last Drain (the first: since
// Start), oldest first, without their Tool, which the caller names: one
// for each request refused, each tunnel and forwarded request that ended,
// and each still open that carried bytes, with the bytes and time of that
// span alone (a tunnel the browser keeps open is reported again by the
// next Drain for what it carried next). dropped counts the entries past
// the last keptFlows that were not kept.
func (p *Proxy) Drain() (entries []run.Egress, dropped int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	entries, dropped = p.flows, p.droppedFlows
	p.flows, p.droppedFlows = nil, 0
	now := p.now()
	for f := range p.live {
		if e, ok := f.report(now); ok {
			entries = append(entries, e)
		}
	}
	return entries, dropped
}

// splitHostPort splits host:port, the port 80 when host names none; a
// port that is not a number is 0.
func splitHostPort(hostport string) (string, int) {
	h, ps, err := net.SplitHostPort(hostport)
	if err != nil {
		return hostport, 80
	}
	port, _ := strconv.Atoi(ps)
	return h, port
}

// counter counts the bytes written through it into n.
type counter struct {
	w io.Writer
	n *atomic.Int64
}

func (c counter) Write(b []byte) (int, error) {
	k, err := c.w.Write(b)
	c.n.Add(int64(k))
	return k, err
}

// countedBody counts the bytes read from a request body into n.
type countedBody struct {
	io.ReadCloser
	n *atomic.Int64
}

func (b countedBody) Read(p []byte) (int, error) {
	k, err := b.ReadCloser.Read(p)
	b.n.Add(int64(k))
	return k, err
}
