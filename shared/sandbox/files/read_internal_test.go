package files

import (
	"bufio"
	"context"
	"io"
	"runtime"
	"strings"
	"testing"

	"github.com/agentsfleet/agentsfleet/shared/sandbox"
)

// ys is a reader of n 'y' bytes followed by tail, made without memory.
type ys struct {
	n    int64
	tail *strings.Reader
}

func (r *ys) Read(p []byte) (int, error) {
	if r.n == 0 {
		return r.tail.Read(p)
	}
	k := copy(p[:min(int64(len(p)), r.n)], yBlock)
	r.n -= int64(k)
	return k, nil
}

var yBlock = []byte(strings.Repeat("y", readBuffer))

// TestReadLinesStreamsAGigabyteLine: a 1 GiB line costs read no more memory
// than its buffer. Not parallel: it measures the process's allocations.
func TestReadLinesStreamsAGigabyteLine(t *testing.T) {
	for _, offset := range []int{1, 2} {
		src := &ys{n: 1 << 30, tail: strings.NewReader("\nend\n")}
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		out, res, err := readLines(context.Background(), bufio.NewReaderSize(src, readBuffer), "huge", offset, 10)
		runtime.ReadMemStats(&after)
		if err != nil || res.IsError {
			t.Fatalf("readLines: %v %q", err, res.Output)
		}
		want := "1\t" + strings.Repeat("y", sandbox.ReadMaxLineChars) + " [line truncated]\n2\tend"
		if offset == 2 {
			want = "2\tend"
		}
		if out != want {
			t.Fatalf("offset %d: got %.80q…, want %.80q…", offset, out, want)
		}
		if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 4<<20 {
			t.Errorf("offset %d: reading a 1 GiB line allocated %d bytes, want at most 4 MiB", offset, alloc)
		}
		if _, err := src.Read(make([]byte, 1)); err != io.EOF {
			t.Errorf("offset %d: the reader was not read to its end", offset)
		}
	}
}
