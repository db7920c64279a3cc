package server_test

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"errors"
	"log/slog"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	sandboxclient "github.com/agentsfleet/agentsfleet/shared/sandbox/client"
	"github.com/agentsfleet/agentsfleet/shared/sandbox/pin"
	"github.com/agentsfleet/agentsfleet/shared/sandbox/server"
	"github.com/agentsfleet/agentsfleet/shared/sandbox/wire"
)

// selfSigned writes a certificate for 127.0.0.1 and its key as PEM files.
func selfSigned(t *testing.T, dir string) (certFile, keyFile string, pool *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: "sandboxd"},
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1)},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), 0o600); err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	pool = x509.NewCertPool()
	pool.AddCert(cert)
	return certFile, keyFile, pool
}

func TestServeTLS(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	certFile, keyFile, pool := selfSigned(t, t.TempDir())
	srv, err := server.New(server.Options{Token: testToken, Tools: server.Tools(server.Config{Roots: f.roots}), Logger: quietLog()})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	tlsConfig, err := server.LoadTLS(certFile, keyFile)
	if err != nil {
		t.Fatal(err)
	}
	go func() { done <- srv.Serve(ctx, ln, tlsConfig) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve = %v", err)
		}
	}()
	c := &client{base: "https://" + ln.Addr().String(), token: testToken,
		http: &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}}
	if res := c.result(t, "bash", `{"command":"echo over tls"}`); res.Output != "over tls\n[exit code 0]" {
		t.Fatalf("over TLS: %q", res.Output)
	}
	// Plain HTTP to the TLS port gets no answer from the tools.
	if resp, err := http.Post("http://"+ln.Addr().String()+wire.ToolsPath+"bash", "application/json", nil); err == nil {
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			t.Fatal("plain HTTP reached a tool on the TLS port")
		}
	}
}

// logBuffer is a server's log, safe to read while the server writes it.
type logBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

// count is how many lines of the log have the message msg.
func (l *logBuffer) count(msg string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Count(l.b.String(), `"msg":"`+msg+`"`)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// serveTLS runs sandboxd's Serve over f's roots in this process, on
// loopback, with tlsConfig, and returns its address and its log.
func serveTLS(t *testing.T, f *fixture, tlsConfig *tls.Config) (addr string, log *logBuffer) {
	t.Helper()
	log = &logBuffer{}
	srv, err := server.New(server.Options{Token: testToken, Tools: server.Tools(server.Config{Roots: f.roots, Timeout: time.Minute}),
		Logger: slog.New(slog.NewJSONHandler(log, nil))})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, ln, tlsConfig) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve = %v", err)
		}
	})
	return ln.Addr().String(), log
}

// TestServeTLSFromToken: sandboxd's Serve with pin.ServerTLS of its token
// answers the pinned client (a read and a bash call), and only it: a
// client pinned to another token, or speaking TLS 1.2, is refused during
// the handshake, and no tool runs for it.
func TestServeTLSFromToken(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	if err := os.WriteFile(filepath.Join(f.work, "a.txt"), []byte("pinned\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tlsConfig, err := pin.ServerTLS(testToken)
	if err != nil {
		t.Fatal(err)
	}
	addr, log := serveTLS(t, f, tlsConfig)
	ctx := context.Background()
	c, err := sandboxclient.Pinned(sandboxclient.Config{URL: "https://" + addr, Token: testToken})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Health(ctx); err != nil {
		t.Fatalf("Health = %v", err)
	}
	for _, tt := range []struct{ name, args, want string }{
		{"read", `{"path":"a.txt"}`, "1\tpinned"},
		{"bash", `{"command":"echo over pinned tls"}`, "over pinned tls\n[exit code 0]"},
	} {
		res, err := c.Call(ctx, tt.name, json.RawMessage(tt.args), "")
		if err != nil || res.IsError || res.Output != tt.want {
			t.Errorf("%s %s = %+v, %v; want %q", tt.name, tt.args, res, err, tt.want)
		}
	}
	if got := log.count("tool"); got != 2 {
		t.Fatalf("sandboxd logged %d tool calls, want 2:\n%s", got, log)
	}

	// A runner holding another sandbox's token sees that this is not its
	// sandbox, and sends nothing.
	const otherToken = "other-token-0123456789abcdef"
	other, err := sandboxclient.Pinned(sandboxclient.Config{URL: "https://" + addr, Token: otherToken})
	if err != nil {
		t.Fatal(err)
	}
	_, err = other.Call(ctx, "bash", json.RawMessage(`{"command":"echo reached"}`), "")
	if !errors.Is(err, sandboxclient.ErrUnavailable) || !errors.Is(err, pin.ErrWrongKey) {
		t.Errorf("a client of another token: %v, want ErrUnavailable and pin.ErrWrongKey", err)
	}
	// A TLS 1.2 client is refused by sandboxd itself.
	tls12 := &tls.Config{InsecureSkipVerify: true, MaxVersion: tls.VersionTLS12} //nolint:gosec // sandboxd's side is under test
	if _, err := tls.Dial("tcp", addr, tls12); err == nil || !strings.Contains(err.Error(), "protocol version") {
		t.Errorf("a TLS 1.2 client: %v, want a protocol version alert", err)
	}
	// Plain HTTP to the TLS port gets no answer from the tools.
	if resp, err := http.Post("http://"+addr+wire.ToolPath("bash"), wire.ContentType, strings.NewReader(`{"command":"echo reached"}`)); err == nil {
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			t.Error("plain HTTP reached a tool on the TLS port")
		}
	}
	if got := log.count("tool"); got != 2 {
		t.Errorf("sandboxd logged %d tool calls, want still 2:\n%s", got, log)
	}
}

// TestPinRefusesACATrustedSandboxd: a sandboxd serving a certificate for
// its very address, signed by a CA the client trusts (here the
// certificate itself, in RootCAs), is still refused by the pinned client,
// which a client trusting the CA takes (TestServeTLS).
func TestPinRefusesACATrustedSandboxd(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	certFile, keyFile, pool := selfSigned(t, t.TempDir())
	tlsConfig, err := server.LoadTLS(certFile, keyFile)
	if err != nil {
		t.Fatal(err)
	}
	addr, log := serveTLS(t, f, tlsConfig)
	tr := pin.Transport(testToken)
	tr.TLSClientConfig.RootCAs = pool
	c, err := sandboxclient.New(sandboxclient.Config{URL: "https://" + addr, Token: testToken, Transport: tr})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Call(context.Background(), "bash", json.RawMessage(`{"command":"echo reached"}`), ""); !errors.Is(err, pin.ErrWrongKey) {
		t.Errorf("the pinned client against a CA-trusted sandboxd: %v, want pin.ErrWrongKey", err)
	}
	if got := log.count("tool"); got != 0 {
		t.Errorf("sandboxd logged %d tool calls, want 0:\n%s", got, log)
	}
	// The control: trusting the CA, unpinned, the same call goes through.
	plain := &client{base: "https://" + addr, token: testToken,
		http: &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}}
	if res := plain.result(t, "bash", `{"command":"echo reached"}`); res.Output != "reached\n[exit code 0]" {
		t.Fatalf("the control: %q", res.Output)
	}
}
