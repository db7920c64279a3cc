package pin

import (
	"container/list"
	"crypto/sha256"
	"crypto/tls"
	"net/http"
	"sync"

	"github.com/agentsfleet/agentsfleet/shared/sandbox/wire"
)

// What this process keeps of the sandboxes it talks to, one entry per
// token: the TLS session cache (tickets to resume with) and the shared
// transport (kept connections). The least recently used is forgotten past
// maxSandboxes: a warm runner calls a few sandboxes at a time, and a
// forgotten one only costs its next call a new connection.
const (
	maxSandboxes = 64
	// sessionsPerSandbox is how many tickets are kept for one sandbox:
	// Go's client keeps one per server address, and a sandbox has one.
	sessionsPerSandbox = 4
)

var sessions = struct {
	sync.Mutex
	byToken map[[32]byte]*list.Element // of sandboxSessions
	order   list.List                  // most recently used first
}{byToken: map[[32]byte]*list.Element{}}

type sandboxSessions struct {
	id        [32]byte
	cache     tls.ClientSessionCache
	transport *http.Transport // made by Shared, on first use
}

// sessionsFor is the session cache of the sandbox whose token is token.
// A cache is never shared between tokens: a ticket one sandbox issued is
// offered only to that sandbox's address under that sandbox's pin. The map
// is keyed by a hash, so that the process keeps no tokens of sandboxes it
// no longer uses.
func sessionsFor(token string) tls.ClientSessionCache {
	sessions.Lock()
	defer sessions.Unlock()
	return entry(token).cache
}

// Shared is the one Transport (see Transport) of this process for the
// sandbox whose token is token: every client of that sandbox made with it
// shares its kept connections, so that a client made anew for the sandbox
// (by a later invocation of a warm runner) calls over the connection the
// last one left open instead of making a new one. Callers must not change
// it. A call over a kept connection that the sandbox closed meanwhile is
// sent again on a new one when it has an Idempotency-Key (net/http retries
// such requests), as every tool call of the runner does.
func Shared(token string) *http.Transport {
	sessions.Lock()
	defer sessions.Unlock()
	e := entry(token)
	if e.transport == nil {
		var cache tls.ClientSessionCache
		if wire.CheckToken(token) == nil {
			cache = e.cache
		}
		e.transport = newTransport(clientTLS(token, cache))
	}
	return e.transport
}

// entry is token's entry, made and moved to the front; sessions is locked.
func entry(token string) *sandboxSessions {
	id := sha256.Sum256([]byte(token))
	if e, ok := sessions.byToken[id]; ok {
		sessions.order.MoveToFront(e)
		return e.Value.(*sandboxSessions)
	}
	s := &sandboxSessions{id: id, cache: tls.NewLRUClientSessionCache(sessionsPerSandbox)}
	sessions.byToken[id] = sessions.order.PushFront(s)
	for sessions.order.Len() > maxSandboxes {
		last := sessions.order.Back()
		sessions.order.Remove(last)
		gone := last.Value.(*sandboxSessions)
		delete(sessions.byToken, gone.id)
		if gone.transport != nil {
			gone.transport.CloseIdleConnections()
		}
	}
	return s
}
