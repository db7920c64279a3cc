package shell

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
)

// TestCaptureKeepsHeadAndTail writes random amounts in random pieces and
// compares with the output cut by hand.
func TestCaptureKeepsHeadAndTail(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(1, 2))
	for trial := range 200 {
		head, tail := rng.IntN(50), rng.IntN(50)
		var all strings.Builder
		c := newCapture(head, tail)
		for range rng.IntN(20) {
			n := rng.IntN(120)
			p := make([]byte, n)
			for i := range p {
				p[i] = byte('a' + rng.IntN(26))
			}
			all.Write(p)
			if k, err := c.Write(p); k != n || err != nil {
				t.Fatalf("Write = %d, %v", k, err)
			}
		}
		s := all.String()
		want := s
		if len(s) > head+tail {
			want = fmt.Sprintf("%s\n[... %d bytes of output cut from the middle ...]\n%s", s[:head], len(s)-head-tail, s[len(s)-tail:])
		}
		if got := c.String(); got != want {
			t.Fatalf("trial %d (head %d, tail %d, %d bytes):\ngot  %q\nwant %q", trial, head, tail, len(s), got, want)
		}
		if c.Len() != int64(len(s)) {
			t.Fatalf("Len = %d, want %d", c.Len(), len(s))
		}
	}
}
