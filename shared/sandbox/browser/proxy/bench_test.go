package proxy

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"testing"
	"time"
)

// BenchmarkProxyConnect measures, against one loopback echo server, a
// connection through the proxy (CONNECT, its answer, one byte there and
// back) against a direct one (connect, one byte there and back), and one
// byte there and back over an open tunnel against an open direct
// connection. ratio is proxied/direct for the new connections, kept-ratio
// for the open ones.
func BenchmarkProxyConnect(b *testing.B) {
	up, _ := echo(b)
	p := newProxy(b, Config{Allow: up})
	target := up.String()
	one := []byte{'x'}
	trip := func(c net.Conn, r io.Reader) {
		if _, err := c.Write(one); err != nil {
			b.Fatal(err)
		}
		if _, err := io.ReadFull(r, one); err != nil {
			b.Fatal(err)
		}
	}
	direct := func() {
		c, err := net.Dial("tcp", target)
		if err != nil {
			b.Fatal(err)
		}
		trip(c, c)
		c.Close()
	}
	tunnelled := func() {
		c, err := net.Dial("tcp", p.Addr())
		if err != nil {
			b.Fatal(err)
		}
		io.WriteString(c, "CONNECT "+target+" HTTP/1.1\r\nHost: "+target+"\r\n\r\n")
		br := bufio.NewReader(c)
		res, err := http.ReadResponse(br, nil)
		if err != nil || res.StatusCode != http.StatusOK {
			b.Fatalf("CONNECT: %v %v", res, err)
		}
		trip(c, br)
		c.Close()
	}
	dc, err := net.Dial("tcp", target)
	if err != nil {
		b.Fatal(err)
	}
	defer dc.Close()
	tc, tr := openTunnel(b, p, target)
	defer tc.Close()

	const trips = 20
	var dNew, pNew, dKept, pKept time.Duration
	n := 0
	for b.Loop() {
		t0 := time.Now()
		direct()
		t1 := time.Now()
		tunnelled()
		t2 := time.Now()
		for range trips {
			trip(dc, dc)
		}
		t3 := time.Now()
		for range trips {
			trip(tc, tr)
		}
		t4 := time.Now()
		dNew += t1.Sub(t0)
		pNew += t2.Sub(t1)
		dKept += t3.Sub(t2)
		pKept += t4.Sub(t3)
		n++
	}
	per := func(d time.Duration, k int) float64 { return float64(d.Nanoseconds()) / 1e3 / float64(n*k) }
	b.ReportMetric(per(dNew, 1), "µs/direct")
	b.ReportMetric(per(pNew, 1), "µs/proxied")
	b.ReportMetric(float64(pNew)/float64(dNew), "ratio")
	b.ReportMetric(per(dKept, trips), "µs/direct-trip")
	b.ReportMetric(per(pKept, trips), "µs/tunnel-trip")
	b.ReportMetric(float64(pKept)/float64(dKept), "kept-ratio")
}
