package session

import (
	"fmt"
	"sync"
	"unicode/utf8"
)

// outputBuffer holds a session's output between calls, at most max bytes:
// the first half of the budget keeps the start of the output and the rest
// the latest bytes, so a flood loses its middle, never its start or end (as
// Codex's HeadTailBuffer). It is safe for concurrent use.
type outputBuffer struct {
	mu      sync.Mutex
	max     int
	head    []byte
	tail    []byte // live bytes are tail[start:]
	start   int
	dropped int64
	eof     bool
	signal  chan struct{} // closed and replaced at every change
}

func newOutputBuffer(max int) *outputBuffer {
	return &outputBuffer{max: max, signal: make(chan struct{})}
}

// Write appends p. It never fails.
func (b *outputBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	n := len(p)
	if room := b.max/2 - len(b.head); room > 0 && len(b.tail) == b.start {
		k := min(room, len(p))
		b.head = append(b.head, p[:k]...)
		p = p[k:]
	}
	if len(p) > 0 {
		b.tail = append(b.tail, p...)
		budget := b.max - b.max/2
		if live := len(b.tail) - b.start; live > budget {
			b.start += live - budget
			b.dropped += int64(live - budget)
		}
		if b.start > budget { // reclaim the dropped prefix
			b.tail = append(b.tail[:0], b.tail[b.start:]...)
			b.start = 0
		}
	}
	b.notify()
	return n, nil
}

// closeWrite records the end of the output.
func (b *outputBuffer) closeWrite() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.eof = true
	b.notify()
}

func (b *outputBuffer) notify() {
	close(b.signal)
	b.signal = make(chan struct{})
}

// state returns whether output is waiting, whether the output has ended,
// and a channel closed at the next change.
func (b *outputBuffer) state() (pending, eof bool, changed <-chan struct{}) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.head)+len(b.tail)-b.start > 0, b.eof, b.signal
}

// drain takes the buffered output. When bytes were dropped, a marker says
// how many, where they were. Unless the output has ended, an incomplete
// UTF-8 sequence at the end stays for the next drain, so a character split
// across two reads is not garbled. total counts dropped bytes too.
func (b *outputBuffer) drain() (out []byte, total int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	tail := b.tail[b.start:]
	out = append(out, b.head...)
	if b.dropped > 0 {
		out = fmt.Appendf(out, "\n[… %d bytes dropped here: more output arrived between calls than the session keeps (%d bytes) …]\n", b.dropped, b.max)
	}
	out = append(out, tail...)
	total = int64(len(b.head)+len(tail)) + b.dropped
	b.head, b.tail, b.start, b.dropped = reuse(b.head), reuse(b.tail), 0, 0
	if !b.eof {
		if n := incompleteSuffix(out); n > 0 {
			b.tail = append(b.tail, out[len(out)-n:]...)
			out = out[:len(out)-n]
			total -= int64(n)
		}
	}
	return out, total
}

// reuse empties p, keeping its memory only when small, so an idle session
// does not hold a flood's worth of buffer.
func reuse(p []byte) []byte {
	if cap(p) > 64<<10 {
		return nil
	}
	return p[:0]
}

// incompleteSuffix returns the length of an incomplete UTF-8 sequence at
// the end of p, or 0.
func incompleteSuffix(p []byte) int {
	for i := 1; i <= utf8.UTFMax-1 && i <= len(p); i++ {
		c := p[len(p)-i]
		if !utf8.RuneStart(c) {
			continue
		}
		var need int
		switch {
		case c < 0x80:
			return 0
		case c&0xE0 == 0xC0:
			need = 2
		case c&0xF0 == 0xE0:
			need = 3
		case c&0xF8 == 0xF0:
			need = 4
		default:
			return 0
		}
		if i < need {
			return i
		}
		return 0
	}
	return 0
}
