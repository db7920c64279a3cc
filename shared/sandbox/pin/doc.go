// Package pin is the TLS between the runner and sandboxd whose key the
// runner pins: a key pair derived from the sandbox's per-task bearer token,
// so that the runner knows which key the sandbox must hold before it
// connects, and no certificate authority, file or second secret is needed.
// sandboxd serves with Certificate (ServerTLS) of its token (`sandboxd
// serve --tls-from-token`); the runner connects through Transport (or
// ClientTLS) of the same token. It is cgo-free and imports only the
// standard library and package wire, so that a CGO_ENABLED=0 Lambda (the
// runner) can use it.
//
// # The derivation
//
// The key is Ed25519 with the seed HKDF-SHA256(secret: the token, salt:
// none, info: Info = "agentsfleet sandboxd tls v1", 32 bytes). The
// certificate is self-signed by that key, with fixed contents (serial 1,
// subject and issuer CN=sandboxd, valid from 2025-01-01 to
// 9999-12-31T23:59:59Z, which RFC 5280 reserves for "no expiry", digital
// signature and server auth, no host names); Ed25519 signatures are
// deterministic, so one token always gives one certificate, byte for byte.
// A change to the derivation must change Info, since the runner and
// sandboxd of different builds must agree on it.
//
// # Security boundary
//
// What the pin stops: the client accepts a TLS 1.3 connection only when
// the peer's leaf certificate holds the public key derived from the token,
// and the handshake has proved that the peer holds its private key. So no
// other host can pose as the sandbox (not a task that later got the
// sandbox's address, not a host with a certificate a trusted CA signed for
// that address); nobody who watches the network reads the token (it
// travels in the HTTP request, which goes out only over a verified
// connection, and TLS 1.3's ephemeral key exchange keeps recorded traffic
// sealed even from someone who learns the token later); and a proxy or a
// neighbour in the VPC cannot sit in the middle, since it holds no such key.
//
// Sessions resume: sandboxd seals its TLS 1.3 session tickets with a key
// derived from the token as well (HKDF, info TicketInfo), and the runner's
// configs of one token share a session cache (Shared also shares the kept
// connections). A resumed handshake carries no certificate; it proves
// instead that the peer opened the ticket, which takes the ticket key, so
// the token, and VerifyConnection checks the certificate of the session's
// first handshake again. A ticket is only ever offered under the pin of
// the token it came with: another sandbox at the same address cannot open
// it, the handshake is then a full one, and the pin refuses that sandbox.
// The key exchange of a resumed handshake is still an ephemeral one, so
// recorded traffic stays sealed as before.
//
// What it does not stop: anyone who knows the token can derive the key and
// pose as the sandbox. The token is the secret, as it already is for the
// API. The certificate, and so the public key, is not secret (any client
// that connects gets it), so the public key lets anyone test guesses of the
// token offline: the token must be random, at least 128 bits (as the
// launchers make it), never a word a person chose. The pin authenticates
// the sandbox to the runner only; the runner authenticates to sandboxd with
// the bearer token. Nor does it hide which address the runner talks to,
// when, or how much.
package pin
