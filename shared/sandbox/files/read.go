package files

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"unicode/utf8"

	"github.com/agentsfleet/agentsfleet/shared/sandbox"
	"github.com/agentsfleet/agentsfleet/shared/tool"
)

// The buffer of read, beyond the limits of its contract (sandbox.Read).
const (
	// ReadBinaryProbe is how much of the start of a file is searched for a
	// NUL byte, the sign of a binary file.
	ReadBinaryProbe = 8 << 10
	// readBuffer is the size of the one buffer a read streams the file
	// through, whatever the file's size or line length. Skipping to a deep
	// offset counts newlines a buffer at a time: 128 KiB reads are as fast
	// as the kernel copies (1 MiB ones, which spill out of the core's
	// cache, took 15% longer here), and the buffer holds more than
	// sandbox.ReadMaxLineChars characters, so a long line is always cut
	// within its first buffer.
	readBuffer = 128 << 10
)

// fileReader is the buffer of one read call and the file it reads.
// They are kept between calls (readers): a buffer allocated for each call
// was most of the server's garbage.
type fileReader struct {
	br  *bufio.Reader
	src onceEOF
}

var readers = sync.Pool{New: func() any {
	r := &fileReader{}
	r.br = bufio.NewReaderSize(&r.src, readBuffer)
	return r
}}

// onceEOF reads f up to its first end of file and no further. A
// bufio.Reader asks the file again after each end it reports, a system
// call each time: a short file's read took four where two do.
type onceEOF struct {
	f   *os.File
	eof bool
}

func (r *onceEOF) Read(p []byte) (int, error) {
	if r.eof {
		return 0, io.EOF
	}
	n, err := r.f.Read(p)
	if errors.Is(err, io.EOF) {
		r.eof = true
	}
	return n, err
}

// Read is the read tool. It streams the file through one fixed buffer:
// memory does not grow with the file's size or the length of its lines.
// Safe for concurrent use.
type Read struct {
	*tool.Def[sandbox.ReadArgs]
	roots *sandbox.Roots
}

var _ tool.Tool = (*Read)(nil)

// NewRead returns the read tool over roots.
func NewRead(roots *sandbox.Roots) *Read { return &Read{Def: sandbox.Read, roots: roots} }

// Run reads the lines the arguments ask for. Paths outside the roots,
// directories, binary files and offsets past the end are error results.
func (t *Read) Run(ctx context.Context, raw json.RawMessage) (tool.Result, error) {
	args, res, ok := t.Decode(raw)
	if !ok {
		return res, nil
	}
	offset, limit := args.Offset, args.Limit
	rv, res, err := resolve(t.roots, "read", args.Path)
	if rv == nil {
		return res, err
	}
	defer rv.Close()
	// O_NONBLOCK: opening a FIFO must not hang the tool; it is refused
	// below as not a regular file.
	f, err := rv.FS.OpenFile(rv.Rel, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		if res, ok := fsResult("read", args.Path, err); ok {
			return res, nil
		}
		return tool.Result{}, fmt.Errorf("read %s: %w", rv.Real(), err)
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return tool.Result{}, fmt.Errorf("read: stat %s: %w", rv.Real(), err)
	}
	if info.IsDir() {
		return tool.Errorf("read: %s is a directory; use list to see what it holds", args.Path), nil
	}
	if !info.Mode().IsRegular() {
		return tool.Errorf("read: %s is not a regular file", args.Path), nil
	}
	fr := readers.Get().(*fileReader)
	fr.src = onceEOF{f: f}
	fr.br.Reset(&fr.src)
	defer func() {
		fr.src = onceEOF{}
		readers.Put(fr)
	}()
	out, res, err := readLines(ctx, fr.br, args.Path, offset, limit)
	if err != nil {
		if res, ok := fsResult("read", args.Path, err); ok {
			return res, nil
		}
		return tool.Result{}, fmt.Errorf("read %s: %w", rv.Real(), err)
	}
	if res.IsError {
		return res, nil
	}
	return tool.Text(out), nil
}

// readLines streams r and returns lines offset..offset+limit-1 formatted as
// N<TAB>text. A non-error Result with empty output means "use out".
func readLines(ctx context.Context, br *bufio.Reader, shown string, offset, limit int) (string, tool.Result, error) {
	head, err := br.Peek(ReadBinaryProbe)
	if err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, bufio.ErrBufferFull) {
		return "", tool.Result{}, err
	}
	if bytes.IndexByte(head, 0) >= 0 {
		return "", tool.Errorf("read: %s looks like a binary file (it has a NUL byte in its first %d KiB); read shows text files only", shown, ReadBinaryProbe>>10), nil
	}
	if len(head) == 0 {
		if offset == 1 {
			return fmt.Sprintf("[%s is empty]", shown), tool.Result{}, nil
		}
		return "", tool.Errorf("read: offset %d is past the end of %s, which is empty", offset, shown), nil
	}

	// Skip the lines before offset.
	skipped, err := skipLines(ctx, br, offset-1)
	if err != nil {
		if ctx.Err() != nil {
			return "", tool.Errorf("read: stopped before reaching line %d: %v", offset, context.Cause(ctx)), nil
		}
		return "", tool.Result{}, err
	}
	if skipped < offset-1 {
		return "", tool.Errorf("read: offset %d is past the end of %s, which has %d %s", offset, shown, skipped, plural(skipped, "line", "lines")), nil
	}
	line := offset

	var b strings.Builder
	text := make([]byte, 0, sandbox.ReadMaxLineChars*utf8.UTFMax)
	for n := 0; n < limit; n++ {
		var truncated, found bool
		text, truncated, found, err = nextLine(br, text[:0])
		if err != nil {
			return "", tool.Result{}, err
		}
		if !found {
			if n == 0 {
				lines := line - 1
				return "", tool.Errorf("read: offset %d is past the end of %s, which has %d %s", offset, shown, lines, plural(lines, "line", "lines")), nil
			}
			break
		}
		if n > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(strconv.Itoa(line))
		b.WriteByte('\t')
		b.Write(text)
		if truncated {
			b.WriteString(" [line truncated]")
		}
		line++
	}
	if _, err := br.Peek(1); err == nil {
		fmt.Fprintf(&b, "\n[more lines follow: continue with offset %d]", line)
	} else if !errors.Is(err, io.EOF) {
		return "", tool.Result{}, err
	}
	return b.String(), tool.Result{}, nil
}

// skipLines discards the first n lines of br and returns how many it
// skipped: fewer than n when the file ends first, a last line without a
// newline counting as a line. It counts newlines a buffer at a time, so
// skipping costs about what reading the bytes does. It checks ctx between
// buffers.
func skipLines(ctx context.Context, br *bufio.Reader, n int) (int, error) {
	skipped, pending := 0, false // pending: bytes read since the last newline
	for skipped < n {
		if err := ctx.Err(); err != nil {
			return skipped, err
		}
		if br.Buffered() == 0 {
			if _, err := br.Peek(1); errors.Is(err, io.EOF) {
				if pending {
					skipped++
				}
				return skipped, nil
			} else if err != nil {
				return skipped, err
			}
		}
		buf, _ := br.Peek(br.Buffered())
		need := n - skipped
		if c := bytes.Count(buf, []byte{'\n'}); c < need {
			skipped += c
			pending = buf[len(buf)-1] != '\n'
			_, _ = br.Discard(len(buf))
			continue
		}
		end := 0
		for range need {
			end += bytes.IndexByte(buf[end:], '\n') + 1
		}
		_, _ = br.Discard(end)
		skipped += need
	}
	return skipped, nil
}

// nextLine reads one line from br, without its newline. It appends at most
// sandbox.ReadMaxLineChars characters of it to keep and discards the rest,
// reporting that with truncated. found is false at the
// end of the file. Memory use is br's buffer plus what it keeps.
func nextLine(br *bufio.Reader, keep []byte) (text []byte, truncated, found bool, err error) {
	chars := 0
	for {
		chunk, err := br.ReadSlice('\n')
		if len(chunk) > 0 {
			found = true
		}
		if err == nil {
			chunk = chunk[:len(chunk)-1]
		}
		if !truncated {
			keep, chars, truncated = appendChars(keep, chunk, chars)
		}
		switch {
		case err == nil:
			return keep, truncated, true, nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case errors.Is(err, io.EOF):
			return keep, truncated, found, nil
		default:
			return keep, truncated, found, err
		}
	}
}

// appendChars appends chunk to keep until keep holds sandbox.ReadMaxLineChars
// characters; truncated reports that chunk did not fit.
func appendChars(keep, chunk []byte, chars int) ([]byte, int, bool) {
	room := sandbox.ReadMaxLineChars - chars
	if utf8.RuneCount(chunk) <= room {
		return append(keep, chunk...), chars + utf8.RuneCount(chunk), false
	}
	i := 0
	for range room {
		_, size := utf8.DecodeRune(chunk[i:])
		i += size
	}
	return append(keep, chunk[:i]...), sandbox.ReadMaxLineChars, true
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
