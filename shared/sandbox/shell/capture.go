package shell

import (
	"fmt"
	"sync"
	"unicode/utf8"
)

// capture keeps the first head and the last tail bytes written to it and
// counts the rest, so a command printing a gigabyte costs head+tail bytes of
// memory. Safe for concurrent use.
type capture struct {
	mu    sync.Mutex
	head  []byte // up to cap(head) bytes, the start of the output
	tail  []byte // ring buffer of the last len(tail) bytes once full
	next  int    // where the ring writes next
	full  bool   // the ring has wrapped
	total int64
}

func newCapture(head, tail int) *capture {
	return &capture{head: make([]byte, 0, head), tail: make([]byte, 0, tail)}
}

func (c *capture) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := len(p)
	c.total += int64(n)
	if room := cap(c.head) - len(c.head); room > 0 {
		k := min(room, len(p))
		c.head = append(c.head, p[:k]...)
		p = p[k:]
	}
	if len(p) == 0 || cap(c.tail) == 0 {
		return n, nil
	}
	if len(p) >= cap(c.tail) {
		c.tail = append(c.tail[:0], p[len(p)-cap(c.tail):]...)
		c.next, c.full = 0, true
		return n, nil
	}
	for len(p) > 0 {
		if !c.full && len(c.tail) < cap(c.tail) {
			k := min(cap(c.tail)-len(c.tail), len(p))
			c.tail = append(c.tail, p[:k]...)
			p = p[k:]
			if len(c.tail) == cap(c.tail) {
				c.full, c.next = true, 0
			}
			continue
		}
		k := copy(c.tail[c.next:], p)
		p = p[k:]
		c.next = (c.next + k) % len(c.tail)
	}
	return n, nil
}

// String returns the output, or its head and tail around a line saying how
// many bytes were cut from the middle. Neither part ends or starts inside a
// UTF-8 character.
func (c *capture) String() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	tail := c.tail
	if c.full {
		tail = append(append([]byte{}, c.tail[c.next:]...), c.tail[:c.next]...)
	}
	if c.total == int64(len(c.head)+len(tail)) {
		return string(c.head) + string(tail)
	}
	head := trimPartialRune(c.head)
	for k := 0; k < utf8.UTFMax && len(tail) > 0 && !utf8.RuneStart(tail[0]); k++ {
		tail = tail[1:]
	}
	cut := c.total - int64(len(head)) - int64(len(tail))
	return fmt.Sprintf("%s\n[... %d bytes of output cut from the middle ...]\n%s", head, cut, tail)
}

// Len is how many bytes were written in all.
func (c *capture) Len() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.total
}

// trimPartialRune drops an incomplete UTF-8 character from the end of b.
func trimPartialRune(b []byte) []byte {
	for i := len(b) - 1; i >= 0 && i >= len(b)-utf8.UTFMax; i-- {
		if utf8.RuneStart(b[i]) {
			if !utf8.FullRune(b[i:]) {
				return b[:i]
			}
			return b
		}
	}
	return b
}
