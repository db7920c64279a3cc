package patch

import (
	"fmt"
	"regexp"
	"strings"
)

// The markers of the grammar, as Codex spells them.
const (
	beginMarker  = "*** Begin Patch"
	endMarker    = "*** End Patch"
	addMarker    = "*** Add File:"
	deleteMarker = "*** Delete File:"
	updateMarker = "*** Update File:"
	moveMarker   = "*** Move to:"
	eofMarker    = "*** End of File"
)

// Kind is what an Op does to its file.
type Kind int

// The three file operations of the grammar.
const (
	Add Kind = iota + 1
	Delete
	Update
)

// Patch is a parsed patch: its file operations in order.
type Patch struct {
	Ops []Op
}

// Op is one file operation.
type Op struct {
	Kind   Kind
	Path   string   // as written in the patch, surrounding spaces removed
	MoveTo string   // Update only: the new path, or ""
	Lines  []string // Add only: the new file's lines, without their "+"
	Chunks []Chunk  // Update only; empty for a pure rename
	Line   int      // line of the op's header in the input, from 1
}

// Chunk is one hunk of an Update: optional @@ context lines that narrow
// where it applies, then diff lines.
type Chunk struct {
	Context []string   // the text of each "@@ text" header, in order
	Lines   []DiffLine // the ' ', '-' and '+' lines
	EOF     bool       // "*** End of File": the old lines end the file
	Line    int        // line of the chunk's first line in the input
}

// DiffLine is one line of a chunk: Op is ' ' (context), '-' or '+'.
type DiffLine struct {
	Op   byte
	Text string
}

// Old returns the lines the chunk expects in the file.
func (c Chunk) Old() []string {
	var out []string
	for _, l := range c.Lines {
		if l.Op != '+' {
			out = append(out, l.Text)
		}
	}
	return out
}

// New returns the lines that replace Old.
func (c Chunk) New() []string {
	var out []string
	for _, l := range c.Lines {
		if l.Op != '-' {
			out = append(out, l.Text)
		}
	}
	return out
}

// ParseError is a patch that does not follow the grammar. Line is the line
// of the input at fault (from 1), or 0 for the patch as a whole.
type ParseError struct {
	Line int
	Msg  string
}

// Error reads as Codex's messages do.
func (e *ParseError) Error() string {
	if e.Line == 0 {
		return "Invalid patch: " + e.Msg
	}
	return fmt.Sprintf("Invalid patch hunk on line %d: %s", e.Line, e.Msg)
}

// heredocStart matches the first line of a heredoc wrapper:
// `<<'EOF'`, `<<EOF`, `<<"PATCH"`, optionally after `apply_patch `.
var heredocStart = regexp.MustCompile(`^(?:(?:apply_patch|applypatch)\s*)?<<-?\s*(['"]?)([A-Za-z_][A-Za-z0-9_]*)(['"]?)\s*$`)

// unifiedHeader matches a unified-diff hunk header (`@@ -1,3 +1,4 @@ func
// f()`), which models sometimes write after `@@`; only its trailing text is
// kept as context.
var unifiedHeader = regexp.MustCompile(`^@@ -\d+(?:,\d+)? \+\d+(?:,\d+)? @@(?: (.*))?$`)

// Parse reads a patch in the Codex apply_patch grammar:
//
//	*** Begin Patch
//	*** Add File: path        then "+" lines
//	*** Delete File: path
//	*** Update File: path     then optional "*** Move to: path", then chunks:
//	@@ [context]              zero or more, then " ", "-", "+" lines,
//	*** End of File           optionally, when the lines end the file
//	*** End Patch
//
// Like Codex it tolerates whitespace around the patch and around markers,
// a heredoc wrapper (`apply_patch <<'EOF'` … `EOF`), and a first chunk
// without "@@". It also accepts a Markdown code fence around the patch,
// several "@@ context" lines in a row (each narrows the search in turn),
// unified-diff "@@ -1,3 +1,4 @@" headers, and an Update with a Move to and
// no chunks (a pure rename). The error is a *ParseError.
func Parse(input string) (*Patch, error) {
	lines, first, err := patchLines(input)
	if err != nil {
		return nil, err
	}
	p := &Patch{}
	body := lines[1 : len(lines)-1]
	lineNo := func(i int) int { return first + 1 + i + 1 } // body[i] is input line first+1+i, from 1
	for i := 0; i < len(body); {
		if strings.TrimSpace(body[i]) == "" { // blank lines between operations
			i++
			continue
		}
		op, n, err := parseOp(body[i:], i, lineNo)
		if err != nil {
			return nil, err
		}
		p.Ops = append(p.Ops, op)
		i += n
	}
	return p, nil
}

// patchLines splits the input into lines, finds the Begin and End markers
// (unwrapping a heredoc or a code fence) and returns the lines from Begin to
// End inclusive, with the index in the input of the Begin line.
func patchLines(input string) ([]string, int, error) {
	all := strings.Split(input, "\n")
	for i, l := range all {
		all[i] = strings.TrimRight(l, "\r")
	}
	// Trim blank lines at both ends, remembering the offset.
	lo, hi := 0, len(all)
	for lo < hi && strings.TrimSpace(all[lo]) == "" {
		lo++
	}
	for hi > lo && strings.TrimSpace(all[hi-1]) == "" {
		hi--
	}
	lines := all[lo:hi]
	err := checkBoundaries(lines)
	if err == nil {
		return lines, lo, nil
	}
	if len(lines) >= 4 && wrapped(lines[0], lines[len(lines)-1]) {
		inner := lines[1 : len(lines)-1]
		if checkBoundaries(inner) == nil {
			return inner, lo + 1, nil
		}
	}
	return nil, 0, err
}

// wrapped reports whether first and last are the ends of a heredoc
// (`apply_patch <<'EOF'` … `EOF`) or of a Markdown code fence.
func wrapped(first, last string) bool {
	first, last = strings.TrimSpace(first), strings.TrimSpace(last)
	if m := heredocStart.FindStringSubmatch(first); m != nil {
		return m[1] == m[3] && last == m[2]
	}
	return strings.HasPrefix(first, "```") && last == "```"
}

func checkBoundaries(lines []string) error {
	if len(lines) == 0 || strings.TrimSpace(lines[0]) != beginMarker {
		return &ParseError{Msg: "The first line of the patch must be '" + beginMarker + "'"}
	}
	if len(lines) < 2 || strings.TrimSpace(lines[len(lines)-1]) != endMarker {
		return &ParseError{Msg: "The last line of the patch must be '" + endMarker + "'"}
	}
	return nil
}

// parseOp parses one file operation at the start of lines (body[at:]) and
// returns it with the number of lines it used.
func parseOp(lines []string, at int, lineNo func(int) int) (Op, int, error) {
	header := strings.TrimSpace(lines[0])
	line := lineNo(at)
	if rest, ok := strings.CutPrefix(header, addMarker); ok {
		op := Op{Kind: Add, Path: strings.TrimSpace(rest), Line: line}
		if op.Path == "" {
			return Op{}, 0, &ParseError{Line: line, Msg: "Add File needs a path"}
		}
		n := 1
		for ; n < len(lines); n++ {
			text, ok := strings.CutPrefix(lines[n], "+")
			if !ok {
				break
			}
			op.Lines = append(op.Lines, text)
		}
		return op, n, nil
	}
	if rest, ok := strings.CutPrefix(header, deleteMarker); ok {
		op := Op{Kind: Delete, Path: strings.TrimSpace(rest), Line: line}
		if op.Path == "" {
			return Op{}, 0, &ParseError{Line: line, Msg: "Delete File needs a path"}
		}
		return op, 1, nil
	}
	if rest, ok := strings.CutPrefix(header, updateMarker); ok {
		op := Op{Kind: Update, Path: strings.TrimSpace(rest), Line: line}
		if op.Path == "" {
			return Op{}, 0, &ParseError{Line: line, Msg: "Update File needs a path"}
		}
		n := 1
		if n < len(lines) {
			if dest, ok := strings.CutPrefix(strings.TrimSpace(lines[n]), moveMarker); ok {
				op.MoveTo = strings.TrimSpace(dest)
				if op.MoveTo == "" {
					return Op{}, 0, &ParseError{Line: lineNo(at + n), Msg: "Move to needs a path"}
				}
				n++
			}
		}
		for n < len(lines) {
			// Blank lines may separate chunks.
			if strings.TrimSpace(lines[n]) == "" {
				n++
				continue
			}
			if strings.HasPrefix(lines[n], "*") {
				break
			}
			chunk, used, err := parseChunk(lines[n:], at+n, lineNo, len(op.Chunks) == 0)
			if err != nil {
				return Op{}, 0, err
			}
			op.Chunks = append(op.Chunks, chunk)
			n += used
		}
		if len(op.Chunks) == 0 && op.MoveTo == "" {
			return Op{}, 0, &ParseError{Line: line, Msg: fmt.Sprintf("Update file hunk for path '%s' is empty", op.Path)}
		}
		return op, n, nil
	}
	return Op{}, 0, &ParseError{Line: line, Msg: fmt.Sprintf(
		"'%s' is not a valid hunk header. Valid hunk headers: '*** Add File: {path}', '*** Delete File: {path}', '*** Update File: {path}'", header)}
}

// contextHeader reports whether line is an "@@" header and returns its
// context text ("" for none).
func contextHeader(line string) (string, bool) {
	line = strings.TrimRight(line, " \t")
	if line == "@@" {
		return "", true
	}
	if m := unifiedHeader.FindStringSubmatch(line); m != nil {
		return strings.TrimSpace(m[1]), true
	}
	if rest, ok := strings.CutPrefix(line, "@@ "); ok {
		return rest, true
	}
	return "", false
}

func isEOFMarker(line string) bool { return strings.TrimRight(line, " \t") == eofMarker }

// parseChunk parses one chunk at the start of lines. Only the first chunk
// of an Update may start without "@@".
func parseChunk(lines []string, at int, lineNo func(int) int, first bool) (Chunk, int, error) {
	c := Chunk{Line: lineNo(at)}
	n := 0
	for n < len(lines) {
		ctx, ok := contextHeader(lines[n])
		if !ok {
			break
		}
		if strings.TrimSpace(ctx) != "" {
			c.Context = append(c.Context, ctx)
		}
		n++
	}
	if n == 0 && !first {
		return Chunk{}, 0, &ParseError{Line: lineNo(at), Msg: fmt.Sprintf(
			"Expected update hunk to start with a @@ context marker, got: '%s'", lines[0])}
	}
	if n >= len(lines) {
		return Chunk{}, 0, &ParseError{Line: lineNo(at + n - 1), Msg: "Update hunk does not contain any lines"}
	}
	for n < len(lines) {
		l := lines[n]
		if isEOFMarker(l) {
			if len(c.Lines) == 0 {
				return Chunk{}, 0, &ParseError{Line: lineNo(at + n), Msg: "Update hunk does not contain any lines"}
			}
			c.EOF = true
			n++
			break
		}
		if l == "" {
			// An empty line is an empty context line.
			c.Lines = append(c.Lines, DiffLine{Op: ' '})
			n++
			continue
		}
		switch l[0] {
		case ' ', '-', '+':
			c.Lines = append(c.Lines, DiffLine{Op: l[0], Text: l[1:]})
			n++
			continue
		}
		if len(c.Lines) == 0 {
			return Chunk{}, 0, &ParseError{Line: lineNo(at + n), Msg: fmt.Sprintf(
				"Unexpected line found in update hunk: '%s'. Every line should start with ' ' (context line), '+' (added line), or '-' (removed line)", l)}
		}
		break // the start of the next chunk or file operation
	}
	return c, n, nil
}

// String renders the patch in the canonical form of the grammar; Parse
// reads it back to an equal Patch (line numbers aside).
func (p *Patch) String() string {
	var b strings.Builder
	b.WriteString(beginMarker + "\n")
	for _, op := range p.Ops {
		switch op.Kind {
		case Add:
			b.WriteString(addMarker + " " + op.Path + "\n")
			for _, l := range op.Lines {
				b.WriteString("+" + l + "\n")
			}
		case Delete:
			b.WriteString(deleteMarker + " " + op.Path + "\n")
		case Update:
			b.WriteString(updateMarker + " " + op.Path + "\n")
			if op.MoveTo != "" {
				b.WriteString(moveMarker + " " + op.MoveTo + "\n")
			}
			for _, c := range op.Chunks {
				if len(c.Context) == 0 {
					b.WriteString("@@\n")
				}
				for _, ctx := range c.Context {
					h := "@@ " + ctx
					if got, ok := contextHeader(h); !ok || got != ctx {
						// Text that would read as a unified-diff header or
						// lose trailing blanks: wrap it in one, which
						// Parse strips once.
						h = "@@ -0,0 +0,0 @@ " + ctx
					}
					b.WriteString(h + "\n")
				}
				for _, l := range c.Lines {
					b.WriteString(string(l.Op) + l.Text + "\n")
				}
				if c.EOF {
					b.WriteString(eofMarker + "\n")
				}
			}
		}
	}
	b.WriteString(endMarker + "\n")
	return b.String()
}
