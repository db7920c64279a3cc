package session

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/agentsfleet/agentsfleet/shared/sandbox"
)

// response is what exec_command and write_stdin return, in Codex's format:
//
//	Chunk ID: 1a2b3c
//	Wall time: 0.5012 seconds
//	Process exited with code 0          (or: Process running with session ID 12345)
//	Original token count: 42
//	Output:
//	…
type response struct {
	wall      time.Duration
	exited    bool
	code      int
	id        int
	output    []byte
	total     int64 // bytes of output before any cut, dropped bytes included
	maxTokens int
}

func (r response) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "Chunk ID: %s\n", chunkID())
	fmt.Fprintf(&b, "Wall time: %.4f seconds\n", r.wall.Seconds())
	if r.exited {
		fmt.Fprintf(&b, "Process exited with code %d\n", r.code)
	} else {
		fmt.Fprintf(&b, "Process running with session ID %d\n", r.id)
	}
	fmt.Fprintf(&b, "Original token count: %d\n", (r.total+sandbox.BytesPerToken-1)/sandbox.BytesPerToken)
	b.WriteString("Output:\n")
	b.WriteString(truncateMiddle(r.output, r.maxTokens))
	return b.String()
}

func chunkID() string {
	var b [3]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// truncateMiddle returns out as valid UTF-8, cut in the middle when it is
// over maxTokens tokens: the start and the end are kept around Codex's
// marker "…N tokens truncated…".
func truncateMiddle(out []byte, maxTokens int) string {
	budget := maxTokens * sandbox.BytesPerToken
	if len(out) <= budget {
		return strings.ToValidUTF8(string(out), "\uFFFD")
	}
	head := budget / 2
	for head > 0 && !utf8.RuneStart(out[head]) {
		head--
	}
	tail := len(out) - (budget - budget/2)
	for tail < len(out) && !utf8.RuneStart(out[tail]) {
		tail++
	}
	removed := tail - head
	marker := fmt.Sprintf("…%d tokens truncated…", (removed+sandbox.BytesPerToken-1)/sandbox.BytesPerToken)
	return strings.ToValidUTF8(string(out[:head])+marker+string(out[tail:]), "\uFFFD")
}
