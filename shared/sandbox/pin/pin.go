package pin

import (
	"crypto/ed25519"
	"crypto/hkdf"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"time"

	"github.com/agentsfleet/agentsfleet/shared/sandbox/wire"
)

// Info is the HKDF info string of the derivation: it names what the key is
// for and the version of the derivation. Changing anything in how the key
// or the certificate is made means a new version here.
const Info = "agentsfleet sandboxd tls v1"

// The fixed contents of the certificate. No client checks them (the pin is
// the key), but they are fixed, so that the certificate is the same for a
// token wherever it is made.
var (
	serial    = big.NewInt(1)
	subject   = pkix.Name{CommonName: "sandboxd"}
	notBefore = time.Date(2025, time.January, 1, 0, 0, 0, 0, time.UTC)
	notAfter  = time.Date(9999, time.December, 31, 23, 59, 59, 0, time.UTC) // RFC 5280 §4.1.2.5: no expiry
)

// ErrWrongKey is the error of a handshake with a server whose certificate
// does not hold the key derived from the token: it is not the sandbox.
// A client's error matches it (errors.Is).
var ErrWrongKey = errors.New("the server's certificate does not hold the sandbox's key")

// ErrBadToken is the error of every handshake of ClientTLS made with a
// token that wire.CheckToken refuses: such a config accepts no server.
var ErrBadToken = errors.New("no sandbox key: the token is not a valid sandbox token")

// privateKey derives the key pair from token (see the package comment).
func privateKey(token string) (ed25519.PrivateKey, error) {
	if err := wire.CheckToken(token); err != nil {
		return nil, fmt.Errorf("sandbox TLS key: %w", err)
	}
	seed, err := hkdf.Key(sha256.New, []byte(token), nil, Info, ed25519.SeedSize)
	if err != nil {
		return nil, fmt.Errorf("sandbox TLS key: %w", err)
	}
	return ed25519.NewKeyFromSeed(seed), nil
}

// PublicKey returns the public key derived from token: the key the client
// pins. Its error, for a token wire.CheckToken refuses, never contains the
// token.
func PublicKey(token string) (ed25519.PublicKey, error) {
	priv, err := privateKey(token)
	if err != nil {
		return nil, err
	}
	return priv.Public().(ed25519.PublicKey), nil
}

// Certificate returns sandboxd's certificate for token: the key pair
// derived from it and a self-signed certificate of fixed contents, the
// same for the same token every time (Leaf is set). Its error, for a token
// wire.CheckToken refuses, never contains the token.
func Certificate(token string) (tls.Certificate, error) {
	priv, err := privateKey(token)
	if err != nil {
		return tls.Certificate{}, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               subject,
		NotBefore:             notBefore,
		NotAfter:              notAfter,
		KeyUsage:              x509.KeyUsageDigitalSignature,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		// No host names: the task's address is known only once it runs,
		// and the client checks the key, not a name.
	}
	// With a fixed serial nothing needs randomness (Ed25519 signs
	// deterministically): noRandom makes any change that would fail
	// instead of quietly making the certificate differ each time.
	der, err := x509.CreateCertificate(noRandom{}, tmpl, tmpl, priv.Public(), priv)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("sandbox TLS certificate: %w", err)
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("sandbox TLS certificate: %w", err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: priv, Leaf: leaf}, nil
}

type noRandom struct{}

func (noRandom) Read([]byte) (int, error) {
	return 0, errors.New("the sandbox certificate must not depend on randomness")
}

// TicketInfo is the HKDF info string of the session ticket key, versioned
// as Info is.
const TicketInfo = "agentsfleet sandboxd tls tickets v1"

// ticketKey derives the key sandboxd seals its session tickets with from
// token: only a holder of the token can open a ticket, so only one can
// resume a session (see the package comment).
func ticketKey(token string) ([32]byte, error) {
	var key [32]byte
	if err := wire.CheckToken(token); err != nil {
		return key, fmt.Errorf("sandbox TLS ticket key: %w", err)
	}
	k, err := hkdf.Key(sha256.New, []byte(token), nil, TicketInfo, len(key))
	if err != nil {
		return key, fmt.Errorf("sandbox TLS ticket key: %w", err)
	}
	copy(key[:], k)
	return key, nil
}

// ServerTLS is sandboxd's TLS for token: Certificate(token), TLS 1.3 only
// (the client accepts nothing older), and session tickets sealed with the
// key derived from token, so that a runner that connected once resumes
// without a certificate and signature on its next connection.
func ServerTLS(token string) (*tls.Config, error) {
	cert, err := Certificate(token)
	if err != nil {
		return nil, err
	}
	key, err := ticketKey(token)
	if err != nil {
		return nil, err
	}
	cfg := &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS13}
	cfg.SetSessionTicketKeys([][32]byte{key})
	return cfg, nil
}

// ClientTLS is the runner's TLS for the sandbox whose token is token: TLS
// 1.3 only, and it accepts a server only when the leaf certificate it
// presents holds PublicKey(token); every other certificate is refused
// (ErrWrongKey), whoever signed it and whatever names it holds. A handshake
// refused fails before a byte of HTTP is sent, so the request, with the
// token in its Authorization header, never reaches a server that is not
// the sandbox. With a token wire.CheckToken refuses, every handshake fails
// (ErrBadToken).
//
// Sessions are resumed from tickets the sandbox issued: the configs of one
// token share a session cache (sessionsFor), so that a new client for the
// same sandbox, in a later invocation of a warm runner, resumes instead of
// making a full handshake. A resumed handshake proves the peer opened the
// ticket, whose key is derived from the token, and VerifyConnection checks
// the certificate of the session's first handshake again.
//
// Each call returns a new config, which the caller may change (a
// ServerName, say), but InsecureSkipVerify, VerifyConnection and
// MinVersion are the pin: changed, it is gone.
func ClientTLS(token string) *tls.Config {
	var cache tls.ClientSessionCache
	if wire.CheckToken(token) == nil {
		cache = sessionsFor(token)
	}
	return clientTLS(token, cache)
}

// clientTLS is ClientTLS with the session cache given.
func clientTLS(token string, cache tls.ClientSessionCache) *tls.Config {
	want, err := PublicKey(token)
	return &tls.Config{
		MinVersion:         tls.VersionTLS13,
		ClientSessionCache: cache,
		// The chain is not verified, on purpose: the pin replaces it.
		// sandboxd's certificate is self-signed and names no host, so
		// chain verification would refuse it; and what a CA vouches for is
		// not wanted either, since a certificate a trusted CA signed for
		// the sandbox's address must be refused too. VerifyConnection
		// runs on every handshake (resumed ones included) in its place.
		InsecureSkipVerify: true, //nolint:gosec // the pin in VerifyConnection replaces the chain
		VerifyConnection: func(cs tls.ConnectionState) error {
			if err != nil {
				return ErrBadToken
			}
			return check(cs, want)
		},
	}
}

// check accepts a TLS 1.3 connection whose peer's leaf certificate holds
// want. The handshake has already checked the peer's signature over it
// (CertificateVerify) with that certificate's key, so the peer holds the
// private key of the key compared here: the certificate's other contents,
// its self-signature and any certificates after it carry no trust.
func check(cs tls.ConnectionState, want ed25519.PublicKey) error {
	if cs.Version != tls.VersionTLS13 {
		return fmt.Errorf("sandbox TLS: the server negotiated %s, want TLS 1.3", tls.VersionName(cs.Version))
	}
	if len(cs.PeerCertificates) == 0 {
		return fmt.Errorf("%w: it presented none", ErrWrongKey)
	}
	got, ok := cs.PeerCertificates[0].PublicKey.(ed25519.PublicKey)
	if !ok {
		return fmt.Errorf("%w: its key is %s, not Ed25519", ErrWrongKey, cs.PeerCertificates[0].PublicKeyAlgorithm)
	}
	if !got.Equal(want) {
		return fmt.Errorf("%w: it holds another Ed25519 key", ErrWrongKey)
	}
	return nil
}

// Transport is an *http.Transport for the sandbox whose token is token:
// TLS through ClientTLS(token), no proxy (the sandbox is reached directly;
// the environment's HTTPS_PROXY has no business between them), and the
// timeouts of http.DefaultTransport. Give it to client.Config.Transport,
// or use client.Pinned (which uses Shared). One Transport serves one
// sandbox; it is safe for concurrent use.
func Transport(token string) *http.Transport { return newTransport(ClientTLS(token)) }

func newTransport(tlsConfig *tls.Config) *http.Transport {
	return &http.Transport{
		Proxy: nil,
		DialContext: (&net.Dialer{
			Timeout:   30 * time.Second,
			KeepAlive: 30 * time.Second,
		}).DialContext,
		TLSClientConfig:       tlsConfig,
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          100,
		MaxIdleConnsPerHost:   16, // a run and its children call one sandbox at once
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   10 * time.Second,
		ExpectContinueTimeout: 1 * time.Second,
	}
}
