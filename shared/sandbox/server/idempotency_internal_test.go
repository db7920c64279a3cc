package server

import (
	"strings"
	"testing"
	"time"

	"github.com/agentsfleet/agentsfleet/shared/tool"
)

func TestIdemCacheBounds(t *testing.T) {
	t.Parallel()
	now := time.Unix(1000, 0)
	c := newIdemCache(IdempotencyLimits{TTL: time.Minute, MaxEntries: 3, MaxBytes: 100})
	c.now = func() time.Time { return now }
	fp := fingerprint("bash", 0, []byte(`{}`))
	claim := func(key string) *idemEntry {
		t.Helper()
		e, first, conflict := c.claim(key, fp)
		if !first || conflict {
			t.Fatalf("claim(%s): first=%v conflict=%v, want a new entry", key, first, conflict)
		}
		return e
	}
	running := claim("running")
	for _, k := range []string{"a", "b", "c"} {
		c.finish(claim(k), tool.Text(k), false)
	}
	// Four entries, limit three: the oldest finished one (a) went, the
	// running one stayed although it is older.
	if got := c.len(); got != 3 {
		t.Fatalf("len = %d, want 3", got)
	}
	if _, first, _ := c.claim("running", fp); first {
		t.Fatal("the running entry was evicted")
	}
	// Same key, different call.
	if _, _, conflict := c.claim("b", fingerprint("bash", 0, []byte(`{"x":1}`))); !conflict {
		t.Fatal("a different call with key b was not a conflict")
	}
	// Same key and arguments, another tool timeout: another call too.
	if _, _, conflict := c.claim("b", fingerprint("bash", time.Second, []byte(`{}`))); !conflict {
		t.Fatal("a call with another tool timeout with key b was not a conflict")
	}
	a := claim("a") // evicted above, so new: b, now the oldest finished, goes
	c.finish(a, tool.Text("a2"), false)
	if e, first, _ := c.claim("c", fp); first || e.res.Output != "c" {
		t.Fatal("c was evicted before b")
	}
	// A failed call is forgotten, so a retry runs it again.
	c.finish(running, tool.Result{}, true)
	c.finish(claim("running"), tool.Text("r"), false)
	// Expiry.
	now = now.Add(2 * time.Minute)
	if _, first, _ := c.claim("c", fp); !first {
		t.Fatal("c outlived its TTL")
	}
	// Byte bound: one 80-byte output and one 30-byte output exceed 100.
	c2 := newIdemCache(IdempotencyLimits{MaxBytes: 100})
	e1, _, _ := c2.claim("big", fp)
	c2.finish(e1, tool.Text(strings.Repeat("x", 80)), false)
	e2, _, _ := c2.claim("small", fp)
	c2.finish(e2, tool.Text(strings.Repeat("y", 30)), false)
	if _, first, _ := c2.claim("big", fp); !first {
		t.Fatal("the byte bound did not evict the oldest output")
	}
}
