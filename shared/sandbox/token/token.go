package token

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
)

// Info names what the HMAC makes and the version of the derivation. A
// change to the derivation means a new version here: runners of two builds
// must agree on a sandbox's token.
const Info = "agentsfleet sandbox token v1"

// MinKeyLength is the shortest key NewKey accepts, in bytes.
const MinKeyLength = 32

// MinNonceLength is the shortest nonce Token accepts, in characters: a
// nonce of NewNonce has 32.
const MinNonceLength = 16

// ErrNoNonce is the error of Token for a nonce shorter than
// MinNonceLength (the empty nonce of a record made before nonces, say).
var ErrNoNonce = errors.New("the sandbox has no nonce to derive its token from")

// Key is the key sandbox tokens are derived from. The zero Key makes no
// token. A Key is immutable and safe for concurrent use.
type Key struct {
	k []byte
}

// NewKey is the Key of secret, which must be at least MinKeyLength bytes
// (a generated string, such as the stack's secret of 64 characters). Its
// error never holds the secret.
func NewKey(secret string) (Key, error) {
	if len(secret) < MinKeyLength {
		return Key{}, fmt.Errorf("the sandbox token key must be at least %d bytes, it has %d", MinKeyLength, len(secret))
	}
	return Key{k: []byte(secret)}, nil
}

// RandomKey is a Key of 32 random bytes, for a launcher whose sandboxes
// live and die with this process.
func RandomKey() (Key, error) {
	b := make([]byte, MinKeyLength)
	if _, err := rand.Read(b); err != nil {
		return Key{}, fmt.Errorf("make a sandbox token key: %w", err)
	}
	return Key{k: b}, nil
}

// Token returns the token of the sandbox whose nonce is nonce: 64
// lowercase hex characters, the same for the same key and nonce every
// time. A nonce shorter than MinNonceLength is ErrNoNonce, and the zero
// Key an error: neither makes a token.
func (k Key) Token(nonce string) (string, error) {
	if len(k.k) == 0 {
		return "", errors.New("no sandbox token key")
	}
	if len(nonce) < MinNonceLength {
		return "", ErrNoNonce
	}
	m := hmac.New(sha256.New, k.k)
	m.Write([]byte(Info))
	m.Write([]byte{0})
	m.Write([]byte(nonce))
	return hex.EncodeToString(m.Sum(nil)), nil
}

// NewNonce returns a fresh nonce: 16 bytes from crypto/rand in hex.
func NewNonce() (string, error) {
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("make a sandbox nonce: %w", err)
	}
	return hex.EncodeToString(b), nil
}
