// Package client calls sandboxd's HTTP API (package wire) for the runner:
// Call runs one sandbox tool, Health asks whether the sandbox is up. It is
// cgo-free, so that a CGO_ENABLED=0 Lambda can import it; a test fails if a
// dependency starts to need cgo.
//
// Every failure is a *Error that names the sandbox, the operation and the
// tool, matched with errors.Is against the sentinels: ErrUnauthorized (401),
// ErrUnknownTool (404), ErrTooLarge (413), ErrKeyReused (422),
// ErrBadRequest (400), ErrToolFailed (500) and ErrUnavailable (the sandbox
// did not answer, or not as sandboxd does). A tool's own error that the
// model can act on is not a Go error: it is a tool.Result with IsError set.
//
// Security boundary: the bearer token goes in the Authorization header of
// every call and nowhere else; it is never part of an error's text, and a
// plain-http URL is refused unless its host is a loopback address (or
// Config.PlainHTTP says the network is trusted), so that the token does
// not cross a network in clear text. The client trusts what the transport
// trusts: with Config.Transport nil, an https sandbox must present a
// certificate the system roots verify. In AWS the runner pins the
// sandbox's key instead: Pinned (Config.Transport = pin.Transport(token))
// accepts only a sandboxd serving with the key derived from the token
// (sandboxd serve --tls-from-token), and refuses any other certificate
// during the handshake, before the request with the token goes out;
// package pin says what that stops and what it does not.
package client
