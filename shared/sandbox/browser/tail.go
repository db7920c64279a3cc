package browser

import (
	"io"
	"sync"
)

// tail keeps the last bytes written to it: the end of Chromium's output,
// which says why a start failed.
type tail struct {
	mu  sync.Mutex
	buf []byte
	max int
}

func newTail(max int) *tail { return &tail{max: max} }

// Write keeps the last max bytes of everything written. It never fails.
func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if over := len(t.buf) - t.max; over > 0 {
		t.buf = append(t.buf[:0], t.buf[over:]...)
	}
	return len(p), nil
}

// String is what is kept.
func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.buf)
}

// drain copies r into t until r ends, and closes r.
func (t *tail) drain(r io.ReadCloser) {
	defer r.Close()
	_, _ = io.Copy(t, r)
}
