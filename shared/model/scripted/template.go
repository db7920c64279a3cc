package scripted

import (
	"strconv"
	"strings"
)

// placeholderList names every placeholder, for error messages.
const placeholderList = `{{input}}, {{last_output}}, {{last_error}}, {{output "TOOL"}}, {{session_id}}, {{child_id}}, {{last_image}} and {{"literal text"}}`

// kind is what a piece of a template stands for.
type kind int

const (
	literal    kind = iota // text as written
	input                  // {{input}}
	lastOutput             // {{last_output}}
	lastError              // {{last_error}}
	output                 // {{output "TOOL"}}
	sessionID              // {{session_id}}
	childID                // {{child_id}}
	lastImage              // {{last_image}}
)

// segment is one piece of a template.
type segment struct {
	kind kind
	// text is the literal text, or the tool name of an output placeholder.
	text string
	// source is the placeholder as written, to find its line in an error.
	source string
}

// template is a string with placeholders, parsed once when the script is
// loaded and filled in from the conversation on every turn.
type template []segment

// templateError is a malformed or unknown placeholder; source is the
// placeholder as written, so that the caller can say on which line it is.
type templateError struct {
	source string
	msg    string
}

func (e *templateError) Error() string { return e.msg }

// parseTemplate parses s. Every "{{" starts a placeholder; a literal "{{"
// is written {{"{{"}}.
func parseTemplate(s string) (template, error) {
	var t template
	for {
		i := strings.Index(s, "{{")
		if i < 0 {
			if s != "" {
				t = append(t, segment{kind: literal, text: s})
			}
			return t, nil
		}
		if i > 0 {
			t = append(t, segment{kind: literal, text: s[:i]})
		}
		seg, n, err := parsePlaceholder(s[i:])
		if err != nil {
			return nil, err
		}
		t = append(t, seg)
		s = s[i+n:]
	}
}

// parsePlaceholder parses the placeholder at the start of s, which starts
// with "{{", and returns it with its length in s.
func parsePlaceholder(s string) (segment, int, error) {
	source := placeholderSource(s)
	malformed := func(why string) error {
		return &templateError{source: source, msg: "malformed placeholder " + source + ": " + why}
	}
	pos := 2
	space := func() {
		for pos < len(s) && (s[pos] == ' ' || s[pos] == '\t') {
			pos++
		}
	}
	quoted := func() (string, error) {
		q, err := strconv.QuotedPrefix(s[pos:])
		if err != nil {
			return "", malformed("the quoted text does not end, or has a bad escape")
		}
		pos += len(q)
		v, err := strconv.Unquote(q)
		if err != nil {
			return "", malformed("the quoted text has a bad escape")
		}
		return v, nil
	}

	space()
	var seg segment
	if pos < len(s) && s[pos] == '"' {
		v, err := quoted()
		if err != nil {
			return segment{}, 0, err
		}
		seg = segment{kind: literal, text: v}
	} else {
		start := pos
		for pos < len(s) && isNameByte(s[pos]) {
			pos++
		}
		switch name := s[start:pos]; name {
		case "input":
			seg.kind = input
		case "last_output":
			seg.kind = lastOutput
		case "last_error":
			seg.kind = lastError
		case "session_id":
			seg.kind = sessionID
		case "child_id":
			seg.kind = childID
		case "last_image":
			seg.kind = lastImage
		case "output":
			space()
			if pos >= len(s) || s[pos] != '"' {
				return segment{}, 0, malformed(`output takes a tool name in double quotes, as in {{output "read"}}`)
			}
			v, err := quoted()
			if err != nil {
				return segment{}, 0, err
			}
			if v == "" {
				return segment{}, 0, malformed(`the tool name is empty`)
			}
			seg = segment{kind: output, text: v}
		default:
			if !strings.Contains(s, "}}") {
				return segment{}, 0, &templateError{source: source, msg: "unclosed placeholder " + source + `: a placeholder ends with }}; write a literal "{{" as {{"{{"}}`}
			}
			return segment{}, 0, &templateError{source: source, msg: "unknown placeholder " + source + ": the placeholders are " + placeholderList}
		}
	}
	space()
	if !strings.HasPrefix(s[pos:], "}}") {
		if !strings.Contains(s[pos:], "}}") {
			return segment{}, 0, &templateError{source: source, msg: "unclosed placeholder " + source + ": a placeholder ends with }}"}
		}
		return segment{}, 0, malformed("want }} after it; the placeholders are " + placeholderList)
	}
	pos += 2
	seg.source = s[:pos]
	return seg, pos, nil
}

// placeholderSource is the placeholder at the start of s as written: up to
// its "}}", or a short prefix when it has none.
func placeholderSource(s string) string {
	if i := strings.Index(s, "}}"); i >= 0 && !strings.Contains(s[:i], "\n") {
		return s[:i+2]
	}
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	if len(s) > 24 {
		s = s[:24]
	}
	return s
}

func isNameByte(c byte) bool {
	return c == '_' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9'
}

// conversation is what placeholders and conditions read from the request.
type conversation struct {
	input      string
	lastOutput string
	lastError  string
	// failed is whether any of the latest tool results is an error.
	failed bool
	// outputs is the latest output of each tool, by tool name.
	outputs map[string]string
	// sessionID is N of the latest "Process running with session ID N".
	sessionID string
	// childID is the latest "child_id" a child-agent tool answered.
	childID string
	// lastImage describes the conversation's last tool result image.
	lastImage string
}

// render fills the template in from c.
func (t template) render(c *conversation) string {
	var b strings.Builder
	for _, s := range t {
		switch s.kind {
		case literal:
			b.WriteString(s.text)
		case input:
			b.WriteString(c.input)
		case lastOutput:
			b.WriteString(c.lastOutput)
		case lastError:
			b.WriteString(c.lastError)
		case output:
			b.WriteString(c.outputs[s.text])
		case sessionID:
			b.WriteString(c.sessionID)
		case childID:
			b.WriteString(c.childID)
		case lastImage:
			b.WriteString(c.lastImage)
		}
	}
	return b.String()
}
