package pin_test

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"errors"
	"io"
	"math/big"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentsfleet/agentsfleet/shared/sandbox/pin"
	"github.com/agentsfleet/agentsfleet/shared/sandbox/wire"
)

const (
	token      = "pin-test-token-0123456789abcdef"
	otherToken = "pin-test-token-0123456789abcdeg" // one character apart
)

// The derivation is a contract between builds: a runner and a sandboxd
// built apart must derive the same key. The public key was checked with
// OpenSSL, independently of this package:
//
//	openssl kdf -keylen 32 -kdfopt digest:SHA256 -kdfopt key:$TOKEN \
//	  -kdfopt "info:agentsfleet sandboxd tls v1" HKDF      # the seed
//	# PKCS#8 302e020100300506032b657004220420 || seed, then
//	openssl pkey -inform DER -pubout -outform DER | tail -c 32
const (
	wantPublicKey = "4819e27b71f5646a5ab60cfa121d666aaf0b0314705b448343627399b6780afb"
	wantCertHash  = "831534a0d936be707065bb3212ddf7288332e5f2e93cfde64ea14e204a925165" // SHA-256 of the DER
)

func TestDerivationIsFixed(t *testing.T) {
	t.Parallel()
	if pin.Info != "agentsfleet sandboxd tls v1" {
		t.Errorf("Info = %q: a new derivation needs a new version, and new golden values here", pin.Info)
	}
	pub, err := pin.PublicKey(token)
	if err != nil {
		t.Fatal(err)
	}
	if got := hex.EncodeToString(pub); got != wantPublicKey {
		t.Errorf("PublicKey(%q) = %s, want %s", token, got, wantPublicKey)
	}
	cert, err := pin.Certificate(token)
	if err != nil {
		t.Fatal(err)
	}
	if sum := sha256.Sum256(cert.Certificate[0]); hex.EncodeToString(sum[:]) != wantCertHash {
		t.Errorf("SHA-256 of Certificate(%q) = %x, want %s", token, sum, wantCertHash)
	}
}

func TestSameTokenSameCertificate(t *testing.T) {
	t.Parallel()
	first, err := pin.Certificate(token)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			again, err := pin.Certificate(token)
			if err != nil {
				t.Error(err)
				return
			}
			if len(again.Certificate) != 1 || !bytes.Equal(again.Certificate[0], first.Certificate[0]) {
				t.Error("Certificate of the same token gave another certificate")
			}
			if !again.PrivateKey.(ed25519.PrivateKey).Equal(first.PrivateKey) {
				t.Error("Certificate of the same token gave another private key")
			}
		})
	}
	wg.Wait()
	pub, err := pin.PublicKey(token)
	if err != nil {
		t.Fatal(err)
	}
	if !pub.Equal(first.Leaf.PublicKey) || !pub.Equal(first.PrivateKey.(ed25519.PrivateKey).Public()) {
		t.Error("the certificate's key is not PublicKey(token)")
	}
}

func TestDifferentTokensDifferentKeys(t *testing.T) {
	t.Parallel()
	tokens := []string{token, otherToken, token + "x", "x" + token, strings.ToUpper(token),
		strings.Repeat("a", wire.MinTokenLength), strings.Repeat("a", wire.MinTokenLength+1), strings.Repeat("b", wire.MinTokenLength)}
	seen := map[string]string{}
	for _, tok := range tokens {
		pub, err := pin.PublicKey(tok)
		if err != nil {
			t.Fatal(err)
		}
		if prev, ok := seen[string(pub)]; ok {
			t.Errorf("tokens %q and %q give the same key", prev, tok)
		}
		seen[string(pub)] = tok
	}
}

func TestCertificateContents(t *testing.T) {
	t.Parallel()
	cert, err := pin.Certificate(token)
	if err != nil {
		t.Fatal(err)
	}
	leaf, err := x509.ParseCertificate(cert.Certificate[0])
	if err != nil {
		t.Fatal(err)
	}
	if err := leaf.CheckSignature(leaf.SignatureAlgorithm, leaf.RawTBSCertificate, leaf.Signature); err != nil || !bytes.Equal(leaf.RawIssuer, leaf.RawSubject) {
		t.Errorf("not self-signed: %v", err)
	}
	for _, c := range []struct {
		what      string
		got, want any
	}{
		{"version", leaf.Version, 3},
		{"serial", leaf.SerialNumber.String(), "1"},
		{"subject", leaf.Subject.String(), "CN=sandboxd"},
		{"issuer", leaf.Issuer.String(), "CN=sandboxd"},
		{"not before", leaf.NotBefore, time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)},
		{"not after", leaf.NotAfter, time.Date(9999, 12, 31, 23, 59, 59, 0, time.UTC)},
		{"signature", leaf.SignatureAlgorithm, x509.PureEd25519},
		{"key usage", leaf.KeyUsage, x509.KeyUsageDigitalSignature},
		{"CA", leaf.IsCA, false},
		{"names", len(leaf.DNSNames) + len(leaf.IPAddresses) + len(leaf.URIs) + len(leaf.EmailAddresses), 0},
	} {
		if c.got != c.want {
			t.Errorf("%s = %v, want %v", c.what, c.got, c.want)
		}
	}
	if len(leaf.ExtKeyUsage) != 1 || leaf.ExtKeyUsage[0] != x509.ExtKeyUsageServerAuth {
		t.Errorf("extended key usage = %v, want server auth", leaf.ExtKeyUsage)
	}
}

func TestBadToken(t *testing.T) {
	t.Parallel()
	for _, tok := range []string{"", "short-token", "0123456789 abcdef", "0123456789abcdef\n"} {
		if _, err := pin.PublicKey(tok); err == nil {
			t.Errorf("PublicKey(%q) = nil error", tok)
		}
		_, err := pin.Certificate(tok)
		if err == nil {
			t.Errorf("Certificate(%q) = nil error", tok)
		} else if tok != "" && strings.Contains(err.Error(), tok) {
			t.Errorf("Certificate's error shows the token: %v", err)
		}
		if _, err := pin.ServerTLS(tok); err == nil {
			t.Errorf("ServerTLS(%q) = nil error", tok)
		}
	}
	// A client of a bad token accepts no server at all.
	srv := newServer(t, serverTLS(t, token))
	err := srv.get(t, pin.Transport("short-token"), "short-token")
	if !errors.Is(err, pin.ErrBadToken) {
		t.Errorf("a client of a short token: %v, want ErrBadToken", err)
	}
	srv.wantUntouched(t)
}

func TestTransport(t *testing.T) {
	t.Parallel()
	tr := pin.Transport(token)
	if tr.Proxy != nil {
		t.Error("the transport uses a proxy")
	}
	if c := tr.TLSClientConfig; c == nil || c.MinVersion != tls.VersionTLS13 || c.VerifyConnection == nil {
		t.Errorf("the transport's TLS is not the pin: %+v", c)
	}
	if a, b := pin.ClientTLS(token), pin.ClientTLS(token); a == b {
		t.Error("ClientTLS returns one config for two calls")
	}
}

// server is a TLS server on loopback that records what reaches it: HTTP
// requests, those with an Authorization header, and every byte of
// application data (a handshake the client refuses delivers none).
type server struct {
	url      string
	requests atomic.Int64
	auth     atomic.Int64
	appBytes atomic.Int64
}

func newServer(t *testing.T, cfg *tls.Config) *server {
	t.Helper()
	inner, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &server{url: "https://" + inner.Addr().String()}
	hs := &http.Server{
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			s.requests.Add(1)
			if r.Header.Get(wire.AuthorizationHeader) != "" {
				s.auth.Add(1)
			}
			io.WriteString(w, "ok")
		}),
	}
	go hs.Serve(&countingListener{Listener: tls.NewListener(inner, cfg), s: s})
	t.Cleanup(func() { hs.Close() })
	return s
}

// get sends what the sandbox client sends (a request with the token in
// its Authorization header) through rt.
func (s *server) get(t *testing.T, rt http.RoundTripper, tok string) error {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, s.url+wire.ToolPath("read"), strings.NewReader(`{"path":"x"}`))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set(wire.AuthorizationHeader, wire.Bearer(tok))
	resp, err := (&http.Client{Transport: rt, Timeout: 10 * time.Second}).Do(req)
	if err != nil {
		if strings.Contains(err.Error(), tok) {
			t.Errorf("the error shows the token: %v", err)
		}
		return err
	}
	defer resp.Body.Close()
	if b, _ := io.ReadAll(resp.Body); string(b) != "ok" {
		t.Fatalf("answer %q", b)
	}
	return nil
}

// wantUntouched: nothing of HTTP reached the server.
func (s *server) wantUntouched(t *testing.T) {
	t.Helper()
	if n, a, b := s.requests.Load(), s.auth.Load(), s.appBytes.Load(); n != 0 || a != 0 || b != 0 {
		t.Errorf("the server saw %d requests, %d with an Authorization header, %d bytes of application data; want 0, 0, 0", n, a, b)
	}
}

// countingListener counts the application data read from its connections
// (a *tls.Conn's Read gives only that, after the handshake).
type countingListener struct {
	net.Listener
	s *server
}

func (l *countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &countingConn{Conn: c, s: l.s}, nil
}

type countingConn struct {
	net.Conn
	s *server
}

func (c *countingConn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	c.s.appBytes.Add(int64(n))
	return n, err
}

func serverTLS(t *testing.T, tok string) *tls.Config {
	t.Helper()
	cfg, err := pin.ServerTLS(tok)
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// ca is a certificate authority the test's client may be told to trust.
type ca struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pool *x509.CertPool
}

func newCA(t *testing.T) *ca {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(7), Subject: pkix.Name{CommonName: "a trusted CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageCertSign, BasicConstraintsValid: true, IsCA: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	return &ca{cert: cert, key: key, pool: pool}
}

// issue signs a certificate for 127.0.0.1 and "sandbox" with pub.
func (c *ca) issue(t *testing.T, pub any) []byte {
	t.Helper()
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(8), Subject: pkix.Name{CommonName: "sandbox"},
		DNSNames: []string{"sandbox"}, IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, c.cert, pub, c.key)
	if err != nil {
		t.Fatal(err)
	}
	return der
}

func mustCert(t *testing.T, tok string) tls.Certificate {
	t.Helper()
	c, err := pin.Certificate(tok)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func oneCert(c tls.Certificate) *tls.Config {
	return &tls.Config{Certificates: []tls.Certificate{c}}
}

// TestRefusesEveryOtherServer: servers that try to pass for the sandbox.
// The pinned client must refuse each during the handshake, so that not a
// byte of the request, which holds the token, reaches it.
func TestRefusesEveryOtherServer(t *testing.T) {
	t.Parallel()
	authority := newCA(t)
	right := mustCert(t, token)
	other := mustCert(t, otherToken)
	ecKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	_, edKey, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	caSignedEC := tls.Certificate{Certificate: [][]byte{authority.issue(t, &ecKey.PublicKey)}, PrivateKey: ecKey}
	caSignedEd := tls.Certificate{Certificate: [][]byte{authority.issue(t, edKey.Public())}, PrivateKey: edKey}

	// The right certificate's DER with one byte of its public key changed.
	pub := right.PrivateKey.(ed25519.PrivateKey).Public().(ed25519.PublicKey)
	at := bytes.Index(right.Certificate[0], pub)
	if at < 0 {
		t.Fatal("the public key is not in the certificate")
	}
	tamperedKey := bytes.Clone(right.Certificate[0])
	tamperedKey[at+5] ^= 0x01

	for _, tt := range []struct {
		name  string
		cfg   *tls.Config
		roots *x509.CertPool // for the client, besides the pin
		want  error          // the error matched, or nil
		text  string         // and a part of its text
	}{
		{"the certificate of another token", oneCert(other), nil, pin.ErrWrongKey, "another Ed25519 key"},
		{"a CA-signed certificate (ECDSA) for the same address, the CA trusted", oneCert(caSignedEC), authority.pool, pin.ErrWrongKey, "ECDSA"},
		{"a CA-signed certificate (Ed25519) for the same address, the CA trusted", oneCert(caSignedEd), authority.pool, pin.ErrWrongKey, "another Ed25519 key"},
		{"the right certificate behind another leaf", oneCert(tls.Certificate{
			Certificate: [][]byte{other.Certificate[0], right.Certificate[0]}, PrivateKey: other.PrivateKey}), nil, pin.ErrWrongKey, "another Ed25519 key"},
		// The certificate is public (every client that connects gets
		// it): copied without the private key, it proves nothing. The pin
		// passes; the handshake's signature check refuses.
		{"the right certificate with another private key", oneCert(tls.Certificate{
			Certificate: right.Certificate, PrivateKey: other.PrivateKey}), nil, nil, "invalid signature by the server certificate"},
		{"the right certificate, its key tampered", oneCert(tls.Certificate{
			Certificate: [][]byte{tamperedKey}, PrivateKey: right.PrivateKey}), nil, pin.ErrWrongKey, "another Ed25519 key"},
		{"the right certificate truncated", oneCert(tls.Certificate{
			Certificate: [][]byte{right.Certificate[0][:len(right.Certificate[0])-40]}, PrivateKey: right.PrivateKey}), nil, nil, "malformed certificate"},
		{"the right certificate over TLS 1.2", &tls.Config{Certificates: []tls.Certificate{right}, MaxVersion: tls.VersionTLS12}, nil, nil, "protocol version"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			srv := newServer(t, tt.cfg)
			tr := pin.Transport(token)
			tr.TLSClientConfig.RootCAs = tt.roots
			err := srv.get(t, tr, token)
			if err == nil {
				t.Fatal("the pinned client accepted the server")
			}
			if (tt.want != nil && !errors.Is(err, tt.want)) || !strings.Contains(err.Error(), tt.text) {
				t.Errorf("got %v, want %v saying %q", err, tt.want, tt.text)
			}
			t.Log(err)
			srv.wantUntouched(t)
			if tt.roots != nil {
				// The control: a client trusting the CA, unpinned, takes it.
				ok := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: tt.roots}}
				defer ok.CloseIdleConnections()
				if err := srv.get(t, ok, "not-the-token-0123456789"); err != nil {
					t.Fatalf("the control, a client trusting the CA: %v", err)
				}
			}
		})
	}
}

// TestAcceptsTheSandbox: the server of the token's certificate is taken,
// through Transport and through ClientTLS, and the request arrives.
func TestAcceptsTheSandbox(t *testing.T) {
	t.Parallel()
	srv := newServer(t, serverTLS(t, token))
	if err := srv.get(t, pin.Transport(token), token); err != nil {
		t.Fatal(err)
	}
	if err := srv.get(t, &http.Transport{TLSClientConfig: pin.ClientTLS(token)}, token); err != nil {
		t.Fatal(err)
	}
	if n, a := srv.requests.Load(), srv.auth.Load(); n != 2 || a != 2 {
		t.Errorf("the sandbox saw %d requests, %d with the token; want 2, 2", n, a)
	}
	// A client of another token refuses this very sandbox.
	before := srv.appBytes.Load()
	if err := srv.get(t, pin.Transport(otherToken), otherToken); !errors.Is(err, pin.ErrWrongKey) {
		t.Errorf("a client of another token: %v, want ErrWrongKey", err)
	}
	if srv.appBytes.Load() != before || srv.requests.Load() != 2 {
		t.Error("the refused client's request reached the sandbox")
	}
}

// TestRightKeyBrokenSelfSignature: the pin is the key, and the handshake
// proves that the server holds it; the certificate's self-signature adds
// nothing (whoever holds the key can sign anything), so a broken one is
// accepted. Only the token's holder can be on the other side.
func TestRightKeyBrokenSelfSignature(t *testing.T) {
	t.Parallel()
	right := mustCert(t, token)
	der := bytes.Clone(right.Certificate[0])
	der[len(der)-1] ^= 0x01 // the last byte of the signature
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	if leaf.CheckSignature(leaf.SignatureAlgorithm, leaf.RawTBSCertificate, leaf.Signature) == nil {
		t.Fatal("the tampered signature still verifies")
	}
	srv := newServer(t, oneCert(tls.Certificate{Certificate: [][]byte{der}, PrivateKey: right.PrivateKey}))
	if err := srv.get(t, pin.Transport(token), token); err != nil {
		t.Fatalf("the token's key with a broken self-signature: %v", err)
	}
}

// TestServerRefusesTLS12: sandboxd's side takes TLS 1.3 only.
func TestServerRefusesTLS12(t *testing.T) {
	t.Parallel()
	srv := newServer(t, serverTLS(t, token))
	// A client that takes any certificate, so that only the server's
	// refusal stands in the way.
	tls12 := &tls.Config{InsecureSkipVerify: true, MaxVersion: tls.VersionTLS12} //nolint:gosec // the server is under test
	err := srv.get(t, &http.Transport{TLSClientConfig: tls12}, token)
	if err == nil || !strings.Contains(err.Error(), "protocol version") {
		t.Fatalf("a TLS 1.2 client: %v, want a protocol version alert", err)
	}
	srv.wantUntouched(t)
	tls13 := &tls.Config{InsecureSkipVerify: true, MinVersion: tls.VersionTLS13} //nolint:gosec // the control
	if err := srv.get(t, &http.Transport{TLSClientConfig: tls13}, token); err != nil {
		t.Fatalf("the control, the same client on TLS 1.3: %v", err)
	}
}
