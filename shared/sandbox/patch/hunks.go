package patch

import (
	"fmt"
	"sort"
	"strings"
)

// line is a line of a file without its ending; crlf says it ended "\r\n".
type line struct {
	text string
	crlf bool
}

// splitLines splits data into lines. A final newline does not make an
// empty last line. It also reports whether the file's lines mostly end
// "\r\n": new lines get that ending, and so does a last line that had none.
func splitLines(data []byte) (lines []line, crlf bool) {
	if len(data) == 0 {
		return nil, false
	}
	parts := strings.Split(string(data), "\n")
	terminated := len(parts) - 1 // lines followed by "\n"
	if parts[len(parts)-1] == "" {
		parts = parts[:len(parts)-1]
	}
	nCRLF := 0
	lines = make([]line, len(parts))
	for i, p := range parts {
		if i < terminated {
			if t, ok := strings.CutSuffix(p, "\r"); ok {
				lines[i] = line{text: t, crlf: true}
				nCRLF++
				continue
			}
		}
		lines[i] = line{text: p}
	}
	crlf = nCRLF*2 > terminated
	if len(parts) > terminated { // the last line had no ending
		lines[len(lines)-1].crlf = crlf
	}
	return lines, crlf
}

func joinLines(lines []line) []byte {
	var b strings.Builder
	for _, l := range lines {
		b.WriteString(l.text)
		if l.crlf {
			b.WriteString("\r\n")
		} else {
			b.WriteString("\n")
		}
	}
	return []byte(b.String())
}

// replacement replaces old lines [start, start+n) with repl.
type replacement struct {
	start, n int
	repl     []line
}

// applyChunks returns data with the chunks applied, in the way Codex
// computes replacements: each chunk's @@ contexts and old lines are sought
// in order, each search starting after the previous match. Context lines
// keep the file's text (a fuzzy match does not rewrite them) and every
// line the patch does not add keeps its ending; added lines take the
// file's usual ending ("\r\n" for a CRLF file). Like Codex, the result
// ends with a newline. The error names the file (as shown) and the lines
// that did not match.
func applyChunks(data []byte, chunks []Chunk, shown string) ([]byte, error) {
	lines, crlf := splitLines(data)
	texts := make([]string, len(lines))
	for i, l := range lines {
		texts[i] = l.text
	}
	var repls []replacement
	at := 0
	for _, c := range chunks {
		for _, ctx := range c.Context {
			i := seek(texts, []string{ctx}, at, false)
			if i < 0 {
				return nil, failf("Failed to find context '%s' in %s%s", ctx, shown, from(at))
			}
			at = i + 1
		}
		old := c.Old()
		i := -1
		if len(old) > 0 {
			i = seek(texts, old, at, c.EOF)
		}
		if i < 0 && len(old) > 0 && old[len(old)-1] == "" {
			// A trailing empty line often stands for the file's final
			// newline: retry without it.
			old = old[:len(old)-1]
			if len(old) > 0 {
				i = seek(texts, old, at, c.EOF)
			}
		}
		if len(old) == 0 {
			// Pure addition: after the @@ context when there is one (Codex
			// always appends at the end), else at the end of the file.
			pos := len(texts)
			if len(c.Context) > 0 && !c.EOF {
				pos = at
			}
			repls = append(repls, replacement{start: pos, repl: added(c.Lines, nil, crlf)})
			continue
		}
		if i < 0 {
			return nil, mismatch(texts, c.Old(), at, c.EOF, shown)
		}
		repls = append(repls, replacement{start: i, n: len(old), repl: added(c.Lines, lines[i:i+len(old)], crlf)})
		at = i + len(old)
	}
	sort.SliceStable(repls, func(a, b int) bool { return repls[a].start < repls[b].start })
	for k := 1; k < len(repls); k++ {
		if prev := repls[k-1]; repls[k].start < prev.start+prev.n {
			return nil, failf("two hunks of %s change the same lines (near line %d)", shown, repls[k].start+1)
		}
	}
	for k := len(repls) - 1; k >= 0; k-- {
		r := repls[k]
		tail := append(append([]line(nil), r.repl...), lines[r.start+r.n:]...)
		lines = append(lines[:r.start:r.start], tail...)
	}
	// Every line ends with a newline, the last one included (as in Codex).
	return joinLines(lines), nil
}

// added returns the lines that replace matched (the file's lines the
// chunk's old lines matched): context lines are taken from the file, added
// lines from the patch. Diff lines beyond matched (a dropped trailing empty
// line) are left out.
func added(diff []DiffLine, matched []line, crlf bool) []line {
	var out []line
	k := 0
	for _, d := range diff {
		switch d.Op {
		case '+':
			out = append(out, line{text: d.Text, crlf: crlf})
		case ' ':
			if k < len(matched) {
				out = append(out, matched[k])
			}
			k++
		default:
			k++
		}
	}
	return out
}

func from(at int) string {
	if at == 0 {
		return ""
	}
	return fmt.Sprintf(" (searching from line %d, after the previous match)", at+1)
}

// mismatch explains which expected lines were not found: Codex's message,
// plus where the longest matching start of the hunk is and the first line
// that differs there.
func mismatch(texts, old []string, at int, eof bool, shown string) error {
	msg := fmt.Sprintf("Failed to find expected lines in %s%s:\n%s", shown, from(at), strings.Join(old, "\n"))
	if eof {
		msg += "\n(The hunk is marked *** End of File, so these lines must be the last lines of the file.)"
		return failf("%s", msg)
	}
	if len(old) > 200 {
		return failf("%s", msg)
	}
	for k := len(old) - 1; k >= 1; k-- {
		j := seek(texts, old[:k], at, false)
		if j < 0 {
			continue
		}
		if j+k < len(texts) {
			msg += fmt.Sprintf("\nThe first %d of these lines match at line %d, but line %d of the file is %q where the patch expects %q.",
				k, j+1, j+k+1, texts[j+k], old[k])
		} else {
			msg += fmt.Sprintf("\nThe first %d of these lines match at line %d, but the file ends there.", k, j+1)
		}
		return failf("%s", msg)
	}
	msg += fmt.Sprintf("\nNot even the first line, %q, is in the file%s.", old[0], map[bool]string{true: " after that point", false: ""}[at > 0])
	return failf("%s", msg)
}
