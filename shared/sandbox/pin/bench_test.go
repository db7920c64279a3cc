package pin_test

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentsfleet/agentsfleet/shared/sandbox/client"
	"github.com/agentsfleet/agentsfleet/shared/sandbox/pin"
	"github.com/agentsfleet/agentsfleet/shared/sandbox/sandboxtest"
	"github.com/agentsfleet/agentsfleet/shared/sandbox/wire"
)

// BenchmarkPinnedRoundTrip measures a trivial tool call (read of a one-line
// file) to a real `sandboxd serve --tls-from-token` through the pinned
// client, against the same call to a sandboxd serving plain HTTP, both on
// loopback, in alternating rounds of the same run. It reports
//
//	tls, plain          a call on a kept connection, each way (µs)
//	tls/plain           their ratio: what TLS adds to every call
//	tls-new, plain-new  the first call of a new client, as a runner's next
//	                    invocation makes one (µs): client.Pinned's shared
//	                    transport keeps the sandbox's connection, a plain
//	                    client makes a new one
//	tls-new/plain-new   their ratio (issue 26's target: ≤ 1.5)
//	tls-conn            the first call over a new connection (a transport
//	                    of its own), which resumes the TLS session (µs)
//	tls-conn/plain-new  its ratio: a resumed TLS 1.3 handshake (an X25519
//	                    and ML-KEM exchange, no certificate or signature)
func BenchmarkPinnedRoundTrip(b *testing.B) {
	const calls, rounds = 200, 5
	bin := buildSandboxd(b)
	// Enterable by the user sandboxd acts as when the bench runs as root.
	base, err := os.MkdirTemp("", "pin-bench-")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { os.RemoveAll(base) })
	work := filepath.Join(base, "work")
	if err := os.Chmod(base, 0o755); err != nil {
		b.Fatal(err)
	}
	if err := os.MkdirAll(work, 0o755); err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(work, "tiny.txt"), []byte("one line\n"), 0o644); err != nil {
		b.Fatal(err)
	}
	tlsTok, plainTok := newToken(), newToken()
	tlsAddr := serve(b, bin, work, tlsTok, "--tls-from-token")
	plainAddr := serve(b, bin, work, plainTok)
	pinned := func() *client.Client {
		c, err := client.Pinned(client.Config{URL: "https://" + tlsAddr, Token: tlsTok})
		if err != nil {
			b.Fatal(err)
		}
		return c
	}
	newConn := func() *client.Client {
		c, err := client.New(client.Config{URL: "https://" + tlsAddr, Token: tlsTok, Transport: pin.Transport(tlsTok)})
		if err != nil {
			b.Fatal(err)
		}
		return c
	}
	plain := func() *client.Client {
		c, err := client.New(client.Config{URL: "http://" + plainAddr, Token: plainTok})
		if err != nil {
			b.Fatal(err)
		}
		return c
	}
	args := []byte(`{"path":"tiny.txt"}`)
	call := func(c *client.Client) {
		res, err := c.Call(context.Background(), "read", args, "")
		if err != nil || res.IsError || !strings.Contains(res.Output, "one line") {
			b.Fatalf("read: %+v, %v", res, err)
		}
	}
	// kept times n calls on one client; fresh makes a client for each.
	kept := func(c *client.Client, n int) time.Duration {
		call(c) // the connection
		t0 := time.Now()
		for range n {
			call(c)
		}
		return time.Since(t0)
	}
	fresh := func(mk func() *client.Client, n int) time.Duration {
		var d time.Duration
		for range n {
			c := mk()
			t0 := time.Now()
			call(c)
			d += time.Since(t0)
		}
		return d
	}
	var tlsKept, plainKept, tlsNew, tlsConn, plainNew time.Duration
	n := 0
	for b.Loop() {
		for range rounds {
			tlsKept += kept(pinned(), calls)
			plainKept += kept(plain(), calls)
			tlsNew += fresh(pinned, calls/10)
			tlsConn += fresh(newConn, calls/10)
			plainNew += fresh(plain, calls/10)
			n++
		}
	}
	per := func(d time.Duration, k int) float64 { return float64(d.Microseconds()) / float64(n*k) }
	sandboxtest.Report(b, "pin/round-trip", []sandboxtest.Figure{
		{Name: "tls", Value: per(tlsKept, calls), Unit: "µs"},
		{Name: "plain", Value: per(plainKept, calls), Unit: "µs"},
		{Name: "tls/plain", Value: float64(tlsKept) / float64(plainKept), Unit: "×"},
		{Name: "tls-new", Value: per(tlsNew, calls/10), Unit: "µs"},
		{Name: "tls-conn", Value: per(tlsConn, calls/10), Unit: "µs"},
		{Name: "plain-new", Value: per(plainNew, calls/10), Unit: "µs"},
		{Name: "tls-new/plain-new", Value: float64(tlsNew) / float64(plainNew), Unit: "×"},
		{Name: "tls-conn/plain-new", Value: float64(tlsConn) / float64(plainNew), Unit: "×"},
	}, sandboxtest.Target{Name: "tls-new/plain-new", Max: 1.5})
}

// buildSandboxd builds sandboxd (cgo) into a temporary folder.
func buildSandboxd(b *testing.B) string {
	b.Helper()
	bin := filepath.Join(b.TempDir(), "sandboxd")
	cmd := exec.Command("go", "build", "-buildvcs=false", "-o", bin, "github.com/agentsfleet/agentsfleet/sandboximage/sandboxd")
	if out, err := cmd.CombinedOutput(); err != nil {
		b.Fatalf("build sandboxd (it needs cgo): %v\n%s", err, out)
	}
	return bin
}

func newToken() string {
	raw := make([]byte, 32)
	rand.Read(raw)
	return hex.EncodeToString(raw)
}

// serve starts `sandboxd serve` on a loopback port over work, with extra
// flags, and returns the address it listens on; it stops with the bench.
func serve(b *testing.B, bin, work, tok string, extra ...string) string {
	b.Helper()
	args := append([]string{"serve", "--listen", "127.0.0.1:0", "--print-addr", "--workdir", work}, extra...)
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), wire.TokenEnv+"="+tok)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		cmd.Wait()
		b.Fatalf("sandboxd %v did not print its address: %v\n%s", args, err, stderr.String())
	}
	return strings.TrimSpace(line)
}
