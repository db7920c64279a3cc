package fleet

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"sort"
	"strings"

	"github.com/pelletier/go-toml/v2"
	"github.com/pelletier/go-toml/v2/unstable"
)

// Format is a Definition document's syntax.
type Format int

// The formats Parse reads.
const (
	TOML Format = iota + 1 // the form people write
	JSON                   // the form the HTTP API sends and revisions are stored in
)

func (f Format) String() string {
	switch f {
	case TOML:
		return "TOML"
	case JSON:
		return "JSON"
	}
	return fmt.Sprintf("Format(%d)", int(f))
}

// FormatOf returns the format a file name's extension implies: ".toml" is
// TOML, ".json" is JSON (case-insensitive); false for anything else.
func FormatOf(name string) (Format, bool) {
	switch strings.ToLower(filepath.Ext(name)) {
	case ".toml":
		return TOML, true
	case ".json":
		return JSON, true
	}
	return 0, false
}

// ParseTOML is Parse(data, TOML).
func ParseTOML(data []byte) (*Definition, error) { return Parse(data, TOML) }

// ParseJSON is Parse(data, JSON).
func ParseJSON(data []byte) (*Definition, error) { return Parse(data, JSON) }

// Parse reads, checks and normalises a Definition document (see the package
// documentation for its keys and rules). It returns a valid Definition in
// normal form, or a nil Definition and an *Error listing every problem
// found: a syntax error alone (with its line and column), or each unknown
// key, wrongly typed value and invalid value, with the line of the key where
// it is known. The error wraps fault.DefinitionInvalid. data is not retained.
// Parse is safe for concurrent use.
func Parse(data []byte, format Format) (*Definition, error) {
	return parse(data, format, true)
}

// parse is Parse; lines says whether to locate problems in data, which is
// misleading when data was generated (Normalize).
func parse(data []byte, format Format, lines bool) (*Definition, error) {
	data = bytes.TrimPrefix(data, []byte("\xef\xbb\xbf")) // An editor's byte-order mark.
	d := &decoder{format: format}
	if len(data) > MaxSize {
		d.probs.add(nil, "the document is %d bytes long; at most %d are allowed", len(data), MaxSize)
		return nil, d.probs.err(nil)
	}
	var (
		root   map[string]any
		lineOf func(string) int
		ok     bool
	)
	switch format {
	case TOML:
		root, ok = d.tomlTree(data)
		var tomlIdx map[string]int // Built only when a problem needs a line.
		lineOf = func(p string) int {
			if tomlIdx == nil {
				tomlIdx = tomlIndex(data)
			}
			return tomlIdx[p]
		}
	case JSON:
		var idx map[string]int
		root, idx, ok = d.jsonTree(data)
		lineOf = func(p string) int { return idx[p] }
	default:
		d.probs.add(nil, "unknown format %v; want TOML or JSON", format)
		return nil, d.probs.err(nil)
	}
	if !ok {
		return nil, d.probs.err(nil)
	}
	def := d.definition(root)
	if d.probs.any() {
		if !lines {
			lineOf = nil
		}
		return nil, d.probs.err(lineOf)
	}
	return def, nil
}

// tomlTree decodes data into a generic tree. A syntax error (including a
// key defined twice) is recorded with its position, and ok is false.
func (d *decoder) tomlTree(data []byte) (root map[string]any, ok bool) {
	if err := toml.Unmarshal(data, &root); err != nil {
		var de *toml.DecodeError
		if errors.As(err, &de) {
			line, col := de.Position()
			msg := strings.TrimPrefix(de.Error(), "toml: ")
			var at keyPath
			for _, k := range de.Key() {
				at = at.key(k)
			}
			d.probs.push(problem{path: at, line: line, column: col, msg: "TOML syntax: " + msg})
			return nil, false
		}
		d.probs.add(nil, "TOML syntax: %s", strings.TrimPrefix(err.Error(), "toml: "))
		return nil, false
	}
	if root == nil {
		root = map[string]any{}
	}
	return root, true
}

// tomlIndex maps the path of every key, and of every array element, in a
// syntactically valid TOML document to its line. A key defined by a table
// header maps to the header's line.
func tomlIndex(data []byte) map[string]int {
	idx := map[string]int{}
	nl := newlines(data)
	lineAt := func(n *unstable.Node) int { return lineOfOffset(nl, int(n.Raw.Offset)) }
	record := func(p keyPath, line int) {
		if s := p.String(); idx[s] == 0 {
			idx[s] = line
		}
	}
	var value func(at keyPath, v *unstable.Node, line int)
	value = func(at keyPath, v *unstable.Node, line int) {
		switch v.Kind {
		case unstable.Array:
			i := 0
			for it := v.Children(); it.Next(); {
				e := it.Node()
				if e.Kind == unstable.Comment {
					continue
				}
				eline := line
				if e.Raw.Length > 0 {
					eline = lineAt(e)
				}
				record(at.index(i), eline)
				value(at.index(i), e, eline)
				i++
			}
		case unstable.InlineTable:
			for it := v.Children(); it.Next(); {
				if kv := it.Node(); kv.Kind == unstable.KeyValue {
					keyValue(at, kv, record, lineAt, value)
				}
			}
		}
	}
	var p unstable.Parser
	p.Reset(data)
	var table keyPath
	arrays := map[string]int{} // the elements of each array of tables so far
	for p.NextExpression() {
		e := p.Expression()
		switch e.Kind {
		case unstable.Table, unstable.ArrayTable:
			table = nil
			var keys []*unstable.Node
			for it := e.Key(); it.Next(); {
				keys = append(keys, it.Node())
			}
			for i, k := range keys {
				table = table.key(string(k.Data))
				record(table, lineAt(k))
				// [[a.b]] starts an element of a.b; [a.b.c] and [[a.b.c]]
				// below it go into a.b's last element.
				switch n := arrays[table.String()]; {
				case e.Kind == unstable.ArrayTable && i == len(keys)-1:
					arrays[table.String()] = n + 1
					table = table.index(n)
					record(table, lineAt(k))
				case n > 0:
					table = table.index(n - 1)
				}
			}
		case unstable.KeyValue:
			keyValue(table, e, record, lineAt, value)
		}
	}
	return idx
}

// keyValue indexes one (possibly dotted) key-value under the table at.
func keyValue(at keyPath, kv *unstable.Node, record func(keyPath, int), lineAt func(*unstable.Node) int,
	value func(keyPath, *unstable.Node, int)) {
	line := 0
	for it := kv.Key(); it.Next(); {
		k := it.Node()
		at = at.key(string(k.Data))
		if line == 0 {
			line = lineAt(k)
		}
		record(at, line)
	}
	value(at, kv.Value(), line)
}

// maxJSONDepth bounds nesting in a JSON document; the schema needs 4.
const maxJSONDepth = 64

// jsonTree decodes data, which must hold one JSON object, into a generic
// tree (numbers as json.Number), and maps each key path to its line. A key
// given twice in one object is a problem. A syntax error is recorded with
// its position, and ok is false.
func (d *decoder) jsonTree(data []byte) (root map[string]any, lines map[string]int, ok bool) {
	nl := newlines(data)
	w := &jsonWalker{dec: json.NewDecoder(bytes.NewReader(data)), lines: map[string]int{}, nl: nl, probs: &d.probs}
	w.dec.UseNumber()
	v, err := w.value(nil, 0)
	trailing := 0
	if err == nil {
		trailing = int(w.dec.InputOffset())
		for trailing < len(data) && strings.IndexByte(" \t\r\n", data[trailing]) >= 0 {
			trailing++
		}
		if _, terr := w.dec.Token(); terr != io.EOF {
			err = errTrailing
		}
	}
	if err != nil {
		var se *json.SyntaxError
		switch {
		case errors.As(err, &se):
			// With Decoder.Token, Offset is where the bad byte starts.
			line, col := position(data, nl, int(se.Offset))
			d.probs.addAt(line, col, "JSON syntax: %s", se.Error())
		case err == io.EOF && len(bytes.TrimSpace(data)) == 0:
			d.probs.add(nil, "the document is empty; want a JSON object")
		case err == io.EOF || err == io.ErrUnexpectedEOF:
			line, col := position(data, nl, len(data)-1)
			d.probs.addAt(line, col, "JSON syntax: unexpected end of the document")
		case err == errTrailing:
			line, col := position(data, nl, trailing)
			d.probs.addAt(line, col, "JSON syntax: %s", err.Error())
		default:
			line, col := position(data, nl, int(w.dec.InputOffset()))
			d.probs.addAt(line, col, "JSON syntax: %s", err.Error())
		}
		return nil, nil, false
	}
	m, isObject := v.(map[string]any)
	if !isObject {
		d.probs.add(nil, "a Definition is a JSON object, not %s", d.typeName(v))
		return nil, nil, false
	}
	return m, w.lines, true
}

var (
	errTrailing = errors.New("unexpected data after the Definition's closing }")
	errDepth    = fmt.Errorf("objects and arrays nest more than %d deep", maxJSONDepth)
)

// jsonWalker reads a JSON value token by token, to see duplicate keys and
// where each key is, which json.Unmarshal hides.
type jsonWalker struct {
	dec   *json.Decoder
	lines map[string]int
	nl    []int
	probs *problems
}

func (w *jsonWalker) lineNow() int { return lineOfOffset(w.nl, int(w.dec.InputOffset())) }

func (w *jsonWalker) value(at keyPath, depth int) (any, error) {
	tok, err := w.dec.Token()
	if err != nil {
		return nil, err
	}
	delim, isDelim := tok.(json.Delim)
	if !isDelim {
		return tok, nil // string, json.Number, bool or nil
	}
	if depth >= maxJSONDepth {
		return nil, errDepth
	}
	switch delim {
	case '{':
		m := map[string]any{}
		for w.dec.More() {
			kt, err := w.dec.Token()
			if err != nil {
				return nil, err
			}
			k, _ := kt.(string) // Token yields only strings as keys.
			kat := at.key(k)
			line := w.lineNow()
			_, dup := m[k]
			if dup {
				w.probs.push(problem{path: kat, line: line, msg: fmt.Sprintf("key %q is given twice", clip(k))})
			} else {
				w.lines[kat.String()] = line
			}
			v, err := w.value(kat, depth+1)
			if err != nil {
				return nil, err
			}
			if !dup {
				m[k] = v
			}
		}
		if _, err := w.dec.Token(); err != nil {
			return nil, err
		}
		return m, nil
	default: // '['
		a := []any{}
		for i := 0; w.dec.More(); i++ {
			v, err := w.value(at.index(i), depth+1)
			if err != nil {
				return nil, err
			}
			w.lines[at.index(i).String()] = w.lineNow()
			a = append(a, v)
		}
		if _, err := w.dec.Token(); err != nil {
			return nil, err
		}
		return a, nil
	}
}

// newlines returns the offsets of data's newlines.
func newlines(data []byte) []int {
	var nl []int
	for i, c := range data {
		if c == '\n' {
			nl = append(nl, i)
		}
	}
	return nl
}

// lineOfOffset returns the 1-based line holding the byte at offset.
func lineOfOffset(nl []int, offset int) int {
	return sort.SearchInts(nl, offset) + 1
}

// position returns the 1-based line and column of the byte at offset.
func position(data []byte, nl []int, offset int) (line, col int) {
	offset = max(0, min(offset, len(data)))
	line = lineOfOffset(nl, offset)
	start := 0
	if line > 1 {
		start = nl[line-2] + 1
	}
	return line, offset - start + 1
}
