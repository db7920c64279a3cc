// Package diff compares texts line by line (Myers' O(ND) algorithm) and
// writes the difference in the unified format of diff -u, with three lines
// of context: what an improvement chat's proposal and a fleet's revision
// history show a person before anything changes. It holds no state and is
// safe for concurrent use.
package diff

import (
	"fmt"
	"strings"
)

// Context is how many unchanged lines surround each change in Unified.
const Context = 3

// Op is what an Edit does to a line.
type Op byte

// The edits of a line.
const (
	Keep   Op = ' '
	Delete Op = '-'
	Insert Op = '+'
)

// Edit is one line of a script turning a into b: kept, deleted from a, or
// inserted from b. A and B are its 0-based line numbers in each text (the
// line it stands before, for the text it is not in).
type Edit struct {
	Op   Op
	Line string
	A, B int
}

// Lines splits s into lines without their newlines; a last line without a
// newline is a line too, and "" has none.
func Lines(s string) []string {
	if s == "" {
		return nil
	}
	lines := strings.SplitAfter(s, "\n")
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	for i, l := range lines {
		lines[i] = strings.TrimSuffix(l, "\n")
	}
	return lines
}

// Script returns a shortest edit script turning a into b: every line of a
// and of b once, in order, deletions before insertions within a change.
func Script(a, b []string) []Edit {
	trace := forward(a, b)
	return backtrack(trace, a, b)
}

// forward runs Myers' greedy search and keeps, for every number of edits
// d, the furthest x reached on each diagonal k (v[k+offset]).
func forward(a, b []string) [][]int {
	n, m := len(a), len(b)
	most := n + m
	offset := most + 1
	v := make([]int, 2*most+3)
	var trace [][]int
	for d := 0; d <= most; d++ {
		for k := -d; k <= d; k += 2 {
			var x int
			if k == -d || (k != d && v[k-1+offset] < v[k+1+offset]) {
				x = v[k+1+offset] // down: an insertion
			} else {
				x = v[k-1+offset] + 1 // right: a deletion
			}
			y := x - k
			for x < n && y < m && a[x] == b[y] {
				x, y = x+1, y+1
			}
			v[k+offset] = x
			if x >= n && y >= m {
				trace = append(trace, append([]int(nil), v...))
				return trace
			}
		}
		trace = append(trace, append([]int(nil), v...))
	}
	return trace
}

// backtrack walks trace from the end back to the start and returns the
// edits in order.
func backtrack(trace [][]int, a, b []string) []Edit {
	offset := len(a) + len(b) + 1
	x, y := len(a), len(b)
	var rev []Edit
	for d := len(trace) - 1; d >= 0; d-- {
		k := x - y
		var prevK int
		if d > 0 {
			prev := trace[d-1]
			if k == -d || (k != d && prev[k-1+offset] < prev[k+1+offset]) {
				prevK = k + 1
			} else {
				prevK = k - 1
			}
			prevX := prev[prevK+offset]
			prevY := prevX - prevK
			for x > prevX && y > prevY {
				x, y = x-1, y-1
				rev = append(rev, Edit{Op: Keep, Line: a[x], A: x, B: y})
			}
			if x == prevX {
				y--
				rev = append(rev, Edit{Op: Insert, Line: b[y], A: x, B: y})
			} else {
				x--
				rev = append(rev, Edit{Op: Delete, Line: a[x], A: x, B: y})
			}
		} else {
			for x > 0 && y > 0 {
				x, y = x-1, y-1
				rev = append(rev, Edit{Op: Keep, Line: a[x], A: x, B: y})
			}
		}
	}
	out := make([]Edit, len(rev))
	for i, e := range rev {
		out[len(rev)-1-i] = e
	}
	return out
}

// Unified returns the difference from a to b in the unified format, its
// files named aName and bName: "" when the texts are equal.
func Unified(aName, bName, a, b string) string {
	edits := Script(Lines(a), Lines(b))
	hunks := group(edits)
	if len(hunks) == 0 {
		return ""
	}
	var sb strings.Builder
	fmt.Fprintf(&sb, "--- %s\n+++ %s\n", aName, bName)
	for _, h := range hunks {
		writeHunk(&sb, edits[h[0]:h[1]])
	}
	return sb.String()
}

// group returns the hunks of edits as [start, end) ranges: each change with
// up to Context kept lines either side, changes closer than 2×Context
// apart in one hunk.
func group(edits []Edit) [][2]int {
	var hunks [][2]int
	for i := 0; i < len(edits); i++ {
		if edits[i].Op == Keep {
			continue
		}
		start := max(i-Context, 0)
		end := i
		for j := i; j < len(edits); j++ {
			if edits[j].Op != Keep {
				end = j + 1
				continue
			}
			if j-end >= 2*Context {
				break
			}
		}
		end = min(end+Context, len(edits))
		if n := len(hunks); n > 0 && hunks[n-1][1] >= start {
			hunks[n-1][1] = end
		} else {
			hunks = append(hunks, [2]int{start, end})
		}
		i = end - 1
	}
	return hunks
}

// writeHunk writes one hunk: its @@ header and its lines.
func writeHunk(sb *strings.Builder, h []Edit) {
	aStart, bStart, aLen, bLen := h[0].A, h[0].B, 0, 0
	for _, e := range h {
		if e.Op != Insert {
			aLen++
		}
		if e.Op != Delete {
			bLen++
		}
	}
	fmt.Fprintf(sb, "@@ -%s +%s @@\n", span(aStart, aLen), span(bStart, bLen))
	for _, e := range h {
		sb.WriteByte(byte(e.Op))
		sb.WriteString(e.Line)
		sb.WriteByte('\n')
	}
}

// span is a hunk's range as diff -u writes it: "start,len" with start
// 1-based, or the line before for an empty range.
func span(start, n int) string {
	if n == 0 {
		return fmt.Sprintf("%d,0", start)
	}
	if n == 1 {
		return fmt.Sprintf("%d", start+1)
	}
	return fmt.Sprintf("%d,%d", start+1, n)
}
