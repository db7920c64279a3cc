package server

import (
	"container/list"
	"crypto/sha256"
	"encoding/binary"
	"sync"
	"time"

	"github.com/agentsfleet/agentsfleet/shared/tool"
)

// IdempotencyLimits bound the cache of results kept for Idempotency-Key
// replays. Zero fields take the defaults.
type IdempotencyLimits struct {
	TTL        time.Duration // how long a finished result is kept; default 1 hour
	MaxEntries int           // default 1024
	MaxBytes   int           // outputs kept in all; default 64 MiB
}

func (l IdempotencyLimits) withDefaults() IdempotencyLimits {
	if l.TTL <= 0 {
		l.TTL = time.Hour
	}
	if l.MaxEntries <= 0 {
		l.MaxEntries = 1024
	}
	if l.MaxBytes <= 0 {
		l.MaxBytes = 64 << 20
	}
	return l
}

// idemCache remembers calls by Idempotency-Key. A call still running is
// never evicted, so a retry always finds it and waits for it; finished calls
// are evicted oldest first once they expire or the cache is over its
// limits. Safe for concurrent use.
type idemCache struct {
	mu      sync.Mutex
	limits  IdempotencyLimits
	entries map[string]*idemEntry
	order   *list.List // keys, oldest claim first
	bytes   int
	now     func() time.Time
}

type idemEntry struct {
	key     string
	fp      [sha256.Size]byte // the call the key was first used for
	done    chan struct{}     // closed when the call has finished
	res     tool.Result       // valid after done, when failed is false
	failed  bool              // the tool returned a Go error: not kept
	expires time.Time         // zero while running
	elem    *list.Element
}

func newIdemCache(l IdempotencyLimits) *idemCache {
	return &idemCache{limits: l.withDefaults(), entries: map[string]*idemEntry{}, order: list.New(), now: time.Now}
}

// fingerprint identifies a call: the tool, the tool timeout it asked for
// (wire.ToolTimeoutHeader; 0 for none), which can change its result, and
// its exact arguments.
func fingerprint(tool string, timeout time.Duration, body []byte) [sha256.Size]byte {
	h := sha256.New()
	h.Write([]byte(tool))
	h.Write([]byte{0})
	h.Write(binary.BigEndian.AppendUint64(nil, uint64(timeout)))
	h.Write(body)
	var fp [sha256.Size]byte
	h.Sum(fp[:0])
	return fp
}

// claim finds or creates the entry for key. When first is true the caller
// runs the call and must call finish; otherwise it waits on e.done. conflict
// reports that key was already used for a different call.
func (c *idemCache) claim(key string, fp [sha256.Size]byte) (e *idemEntry, first, conflict bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.evict()
	if e, ok := c.entries[key]; ok {
		return e, false, e.fp != fp
	}
	e = &idemEntry{key: key, fp: fp, done: make(chan struct{})}
	e.elem = c.order.PushBack(e)
	c.entries[key] = e
	return e, true, false
}

// finish records the call's outcome and wakes its waiters. A call that
// failed with a Go error is forgotten, so a later retry runs it again.
func (c *idemCache) finish(e *idemEntry, res tool.Result, failed bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e.res, e.failed = res, failed
	e.expires = c.now().Add(c.limits.TTL)
	if failed {
		c.remove(e)
	} else {
		c.bytes += len(res.Output)
	}
	close(e.done)
	c.evict()
}

// evict drops expired finished entries, then the oldest finished ones while
// the cache is over its limits. c.mu is held.
func (c *idemCache) evict() {
	now := c.now()
	over := func() bool { return c.order.Len() > c.limits.MaxEntries || c.bytes > c.limits.MaxBytes }
	for el := c.order.Front(); el != nil; {
		next := el.Next()
		e := el.Value.(*idemEntry)
		if !e.expires.IsZero() && (over() || !now.Before(e.expires)) {
			c.remove(e)
		}
		el = next
	}
}

func (c *idemCache) remove(e *idemEntry) {
	if e.elem == nil {
		return
	}
	c.order.Remove(e.elem)
	e.elem = nil
	if c.entries[e.key] == e {
		delete(c.entries, e.key)
	}
	if !e.failed {
		c.bytes -= len(e.res.Output)
	}
}

// len is the number of entries kept, for tests.
func (c *idemCache) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.order.Len()
}
