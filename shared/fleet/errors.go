package fleet

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/agentsfleet/agentsfleet/shared/fault"
)

// Problem is one thing wrong with a Definition, in the user's terms.
type Problem struct {
	// Path is the key the problem is about, dotted as in the TOML form
	// ("x-agentsfleet.limits.tool_timeout_seconds", "x-agentsfleet.tools[2]",
	// a key that needs it quoted: `x-agentsfleet.secrets."a b"`). It is
	// empty for a problem with the document as a whole, such as bad syntax.
	Path string
	// Line and Column locate the problem in the source, counting from 1;
	// 0 when unknown (a Definition built in Go, or no better place than the
	// whole document). Column is set only for syntax errors.
	Line, Column int
	// Msg says what is wrong and, where it helps, what would be right.
	Msg string
}

// String formats p as "line 7: path: message", leaving out what is unknown.
func (p Problem) String() string {
	var b strings.Builder
	if p.Line > 0 {
		fmt.Fprintf(&b, "line %d", p.Line)
		if p.Column > 0 {
			fmt.Fprintf(&b, ", column %d", p.Column)
		}
		b.WriteString(": ")
	}
	if p.Path != "" {
		b.WriteString(p.Path)
		b.WriteString(": ")
	}
	b.WriteString(p.Msg)
	return b.String()
}

// Error is the error Parse, Normalize, ParseHostList and CheckAvailable
// return for a Definition that is not valid. It lists the problems found,
// in document order where lines are known. It wraps fault.DefinitionInvalid, so
// errors.Is(err, fault.DefinitionInvalid) holds and fault.CodeOf finds the code.
type Error struct {
	Problems []Problem // at least one, at most 100
	// More counts the problems found beyond those in Problems.
	More int
}

// maxListed is how many problems Error() spells out; Problems keeps more.
const maxListed = 20

// Error formats the code, the number of problems and the first 20 of them,
// as "UZ-DEF-400: the Definition is not valid (2 problems): line 2: name:
// …; line 7: …".
func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(fault.DefinitionInvalid.ID())
	b.WriteString(": the Definition is not valid")
	total := len(e.Problems) + e.More
	if total > 1 {
		fmt.Fprintf(&b, " (%d problems)", total)
	}
	b.WriteString(": ")
	for i, p := range e.Problems {
		if i == maxListed {
			break
		}
		if i > 0 {
			b.WriteString("; ")
		}
		b.WriteString(p.String())
	}
	if n := total - min(len(e.Problems), maxListed); n > 0 {
		fmt.Fprintf(&b, "; and %d more", n)
	}
	return b.String()
}

// Unwrap returns fault.DefinitionInvalid.
func (e *Error) Unwrap() error { return fault.DefinitionInvalid }

// keyPath is a key path as segments, each already formatted: a key (quoted
// when it is not a bare TOML key) or an index "[3]". Formatting on the way
// in keeps a key spelled "[3]" apart from an index.
type keyPath []string

// key returns p extended by the key k.
func (p keyPath) key(k string) keyPath {
	q := make(keyPath, len(p), len(p)+1)
	copy(q, p)
	return append(q, keySegment(k))
}

// index returns p extended by the array index i.
func (p keyPath) index(i int) keyPath {
	q := make(keyPath, len(p), len(p)+1)
	copy(q, p)
	return append(q, "["+strconv.Itoa(i)+"]")
}

func (p keyPath) String() string {
	var b strings.Builder
	for i, s := range p {
		if i > 0 && !strings.HasPrefix(s, "[") {
			b.WriteByte('.')
		}
		b.WriteString(s)
	}
	return b.String()
}

func keySegment(k string) string {
	if k == "" {
		return `""`
	}
	for _, r := range k {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-') {
			return strconv.Quote(k)
		}
	}
	return k
}

// runtimePath returns the path of a key under x-agentsfleet.
func runtimePath(keys ...string) keyPath {
	p := keyPath{keySegment(runtimeKey)}
	for _, k := range keys {
		p = p.key(k)
	}
	return p
}

// problem is a Problem still holding its structured path, so that a line
// can be found for it or its nearest ancestor.
type problem struct {
	path         keyPath
	line, column int
	msg          string
}

// maxProblems is how many problems one error holds. Beyond it they are only
// counted, so that a small document with thousands of mistakes cannot make
// a huge error.
const maxProblems = 100

// problems collects what is wrong, in the order found.
type problems struct {
	list []problem
	more int // found beyond maxProblems
}

// full reports whether further problems will only be counted; a caller
// with an expensive message checks it first.
func (ps *problems) full() bool { return len(ps.list) >= maxProblems }

func (ps *problems) push(p problem) {
	if ps.full() {
		ps.more++
		return
	}
	ps.list = append(ps.list, p)
}

func (ps *problems) add(p keyPath, format string, args ...any) {
	if ps.full() {
		ps.more++
		return
	}
	ps.push(problem{path: p, msg: fmt.Sprintf(format, args...)})
}

// addAt records a problem at a known position (syntax errors).
func (ps *problems) addAt(line, column int, format string, args ...any) {
	ps.push(problem{line: line, column: column, msg: fmt.Sprintf(format, args...)})
}

// any reports whether a problem was found.
func (ps *problems) any() bool { return len(ps.list) > 0 }

// err returns nil if nothing was found, else an *Error. lines, when not nil,
// gives the line of a formatted path, 0 if unknown; a problem without a
// known line takes its nearest ancestor's.
func (ps *problems) err(lines func(string) int) error {
	if len(ps.list) == 0 {
		return nil
	}
	out := make([]Problem, len(ps.list))
	for i, p := range ps.list {
		out[i] = Problem{Path: p.path.String(), Line: p.line, Column: p.column, Msg: p.msg}
		if out[i].Line == 0 && lines != nil {
			for n := len(p.path); n > 0 && out[i].Line == 0; n-- {
				out[i].Line = lines(p.path[:n].String())
			}
		}
	}
	if lines != nil {
		// Document order; problems on one line keep the order found.
		sort.SliceStable(out, func(i, j int) bool {
			li, lj := out[i].Line, out[j].Line
			if li == 0 || lj == 0 {
				return li != 0 && lj == 0
			}
			return li < lj
		})
	}
	return &Error{Problems: out, More: ps.more}
}
