package token_test

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/agentsfleet/agentsfleet/shared/sandbox/pin"
	"github.com/agentsfleet/agentsfleet/shared/sandbox/token"
	"github.com/agentsfleet/agentsfleet/shared/sandbox/wire"
)

const nonce = "0123456789abcdef0123456789abcdef"

func key(t testing.TB, s string) token.Key {
	t.Helper()
	k, err := token.NewKey(s)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// TestKnownAnswer: the derivation is HMAC-SHA256(key, Info 0x00 nonce),
// as computed by another implementation (Python's hmac module).
func TestKnownAnswer(t *testing.T) {
	t.Parallel()
	got, err := key(t, strings.Repeat("k", 32)).Token(nonce)
	if want := "2885e5f8dfffe5f492ef922cfc1b8547e26262594f3c13abd2cef1397c8c76f0"; got != want || err != nil {
		t.Errorf("Token = %q, %v; want %q", got, err, want)
	}
}

// TestTokens: one token for a key and a nonce, another for any other
// nonce or key; each a valid sandbox token and a valid pin seed.
func TestTokens(t *testing.T) {
	t.Parallel()
	a, b := key(t, strings.Repeat("a", 32)), key(t, strings.Repeat("a", 31)+"b")
	seen := map[string]string{}
	for _, k := range []struct {
		name string
		key  token.Key
	}{{"a", a}, {"b", b}} {
		for _, n := range []string{nonce, nonce + "0", "1" + nonce[1:], strings.ToUpper(nonce)} {
			tok, err := k.key.Token(n)
			if err != nil {
				t.Fatalf("Token(%q) = %v", n, err)
			}
			if again, _ := k.key.Token(n); again != tok {
				t.Errorf("key %s, nonce %q: %q then %q; want the same token", k.name, n, tok, again)
			}
			if len(tok) != 64 || wire.CheckToken(tok) != nil {
				t.Errorf("Token = %q; want 64 hex characters sandboxd accepts", tok)
			}
			if _, err := pin.PublicKey(tok); err != nil {
				t.Errorf("pin.PublicKey(%q) = %v", tok, err)
			}
			if other, dup := seen[tok]; dup {
				t.Errorf("key %s, nonce %q gives the token of %s", k.name, n, other)
			}
			seen[tok] = k.name + " " + n
		}
	}
}

// TestRefused: a short key, the zero Key and a missing or short nonce make
// no token, and the key's error does not hold it.
func TestRefused(t *testing.T) {
	t.Parallel()
	secret := "too-short-a-secret-value"
	if _, err := token.NewKey(secret); err == nil || strings.Contains(err.Error(), secret) {
		t.Errorf("NewKey(%d bytes) = %v; want an error without the secret", len(secret), err)
	}
	if tok, err := (token.Key{}).Token(nonce); err == nil || tok != "" {
		t.Errorf("the zero Key's Token = %q, %v; want an error", tok, err)
	}
	k := key(t, strings.Repeat("k", 32))
	for _, n := range []string{"", "x", nonce[:token.MinNonceLength-1]} {
		if tok, err := k.Token(n); !errors.Is(err, token.ErrNoNonce) || tok != "" {
			t.Errorf("Token(%q) = %q, %v; want ErrNoNonce", n, tok, err)
		}
	}
	r1, err1 := token.RandomKey()
	r2, err2 := token.RandomKey()
	t1, _ := r1.Token(nonce)
	t2, _ := r2.Token(nonce)
	if err1 != nil || err2 != nil || t1 == t2 {
		t.Errorf("two RandomKeys gave %q and %q (%v, %v); want two tokens", t1, t2, err1, err2)
	}
}

func TestNewNonce(t *testing.T) {
	t.Parallel()
	a, errA := token.NewNonce()
	b, errB := token.NewNonce()
	if errA != nil || errB != nil || a == b || len(a) != 32 {
		t.Errorf("NewNonce = %q, %q (%v, %v); want two 32-character nonces", a, b, errA, errB)
	}
}

// BenchmarkDerive measures what deriving a sandbox's token costs a launch,
// against what the launch paid before for its token (32 bytes of
// crypto/rand in hex) and against the pin's key and certificate that every
// launch and connect makes from the token anyway, in one run:
//
//	ns/derive   Key.Token (and a nonce: NewNonce)
//	ns/random   32 random bytes in hex, the token before
//	ns/pin      pin.Certificate of the token
//	derive/random, derive/pin   the ratios
func BenchmarkDerive(b *testing.B) {
	k := key(b, strings.Repeat("k", 64))
	const n = 2000
	var sink string
	measure := func(f func()) float64 {
		start := time.Now()
		for range n {
			f()
		}
		return float64(time.Since(start).Nanoseconds()) / n
	}
	var derive, random, cert float64
	for b.Loop() {
		derive += measure(func() {
			nc, _ := token.NewNonce()
			sink, _ = k.Token(nc)
		})
		random += measure(func() {
			raw := make([]byte, 32)
			rand.Read(raw)
			sink = hex.EncodeToString(raw)
		})
		cert += measure(func() { pin.Certificate(sink) })
	}
	rounds := float64(b.N)
	b.ReportMetric(derive/rounds, "ns/derive")
	b.ReportMetric(random/rounds, "ns/random")
	b.ReportMetric(cert/rounds, "ns/pin")
	b.ReportMetric(derive/random, "derive/random")
	b.ReportMetric(derive/cert, "derive/pin")
}
