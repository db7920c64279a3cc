package tool

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"
)

// kind is the JSON kind of an argument.
type kind int

const (
	kindAny kind = iota
	kindString
	kindInteger
	kindNumber
	kindBool
	kindArray
	kindMap
	kindObject
)

// node is the decoder and schema of one Go type.
type node struct {
	kind   kind
	typ    reflect.Type // with pointers removed
	fields []*field     // kindObject
	elem   *node        // kindArray items, kindMap values
}

// field is one argument of an object.
type field struct {
	name     string
	path     string // the rule key: names joined with "."
	index    []int
	required bool
	ptr      bool
	desc     string
	rule     Rule
	node     *node
}

var rawMessage = reflect.TypeFor[json.RawMessage]()

// buildNode makes the node of t, taking rules for the fields below path.
func buildNode(t reflect.Type, rules Rules, path string) (*node, error) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	n := &node{typ: t}
	switch {
	case t == rawMessage, t.Kind() == reflect.Interface:
		n.kind = kindAny
	case t.Kind() == reflect.String:
		n.kind = kindString
	case t.Kind() == reflect.Bool:
		n.kind = kindBool
	case t.Kind() >= reflect.Int && t.Kind() <= reflect.Uint64:
		n.kind = kindInteger
	case t.Kind() == reflect.Float32 || t.Kind() == reflect.Float64:
		n.kind = kindNumber
	case t.Kind() == reflect.Slice || t.Kind() == reflect.Array:
		n.kind = kindArray
		elem, err := buildNode(t.Elem(), rules, path)
		if err != nil {
			return nil, err
		}
		n.elem = elem
	case t.Kind() == reflect.Map:
		if t.Key().Kind() != reflect.String {
			return nil, fmt.Errorf("%s: map keys must be strings", t)
		}
		n.kind = kindMap
		elem, err := buildNode(t.Elem(), rules, path)
		if err != nil {
			return nil, err
		}
		n.elem = elem
	case t.Kind() == reflect.Struct:
		n.kind = kindObject
		for _, sf := range reflect.VisibleFields(t) {
			if !sf.IsExported() || sf.Anonymous {
				continue
			}
			tag, ok := sf.Tag.Lookup("json")
			if !ok {
				return nil, fmt.Errorf("%s.%s has no json tag", t, sf.Name)
			}
			name, opts, _ := strings.Cut(tag, ",")
			if name == "-" {
				continue
			}
			if name == "" {
				return nil, fmt.Errorf("%s.%s has no json name", t, sf.Name)
			}
			optional := strings.Contains(","+opts+",", ",omitempty,") || strings.Contains(","+opts+",", ",omitzero,")
			f := &field{
				name:  name,
				path:  strings.TrimPrefix(path+"."+name, "."),
				index: sf.Index,
				ptr:   sf.Type.Kind() == reflect.Pointer,
				desc:  sf.Tag.Get("description"),
			}
			f.required = !optional && !f.ptr
			f.rule = rules[f.path]
			child, err := buildNode(sf.Type, rules, f.path)
			if err != nil {
				return nil, err
			}
			f.node = child
			if err := f.rule.check(child); err != nil {
				return nil, fmt.Errorf("rule for %q: %w", f.path, err)
			}
			if f.rule.def != nil && f.required {
				return nil, fmt.Errorf("rule for %q: a default for a required argument", f.path)
			}
			n.fields = append(n.fields, f)
		}
	default:
		return nil, fmt.Errorf("%s cannot be a JSON argument", t)
	}
	return n, nil
}

// find returns the field at a dotted rule path, passing through arrays and
// maps, or nil.
func (n *node) find(path string) *field {
	head, rest, more := strings.Cut(path, ".")
	for n.kind == kindArray || n.kind == kindMap {
		n = n.elem
	}
	for _, f := range n.fields {
		if f.name == head {
			if !more {
				return f
			}
			return f.node.find(rest)
		}
	}
	return nil
}

// want says what n accepts: "a string", "an array of strings", ….
func (n *node) want() string {
	switch n.kind {
	case kindString:
		return "a string"
	case kindInteger:
		return "an integer"
	case kindNumber:
		return "a number"
	case kindBool:
		return "true or false"
	case kindArray:
		return "an array of " + plural(n.elem)
	case kindMap:
		return "an object of " + plural(n.elem)
	case kindObject:
		return "an object"
	}
	return "any JSON value"
}

func plural(n *node) string {
	switch n.kind {
	case kindString:
		return "strings"
	case kindInteger:
		return "integers"
	case kindNumber:
		return "numbers"
	case kindBool:
		return "booleans"
	case kindObject:
		return "objects"
	case kindArray:
		return "arrays"
	case kindMap:
		return "objects"
	}
	return "JSON values"
}

// decode decodes raw into v (a value of n.typ), naming the value arg in
// messages ("" for the arguments object itself). It returns what is wrong,
// or "".
func (n *node) decode(raw json.RawMessage, v reflect.Value, arg string) string {
	if arg == "" {
		// The arguments object: one JSON object and nothing else.
		dec := json.NewDecoder(bytes.NewReader(raw))
		var first json.RawMessage
		if err := dec.Decode(&first); err != nil {
			return "the arguments are not valid JSON: " + describeSyntax(err)
		}
		if rest := bytes.TrimSpace(raw[dec.InputOffset():]); len(rest) > 0 {
			return "the arguments must be one JSON object, with nothing after it"
		}
		if k := jsonKind(first); k != '{' {
			return "the arguments must be a JSON object, not " + given(first)
		}
		raw = first
	}
	switch n.kind {
	case kindObject:
		return n.decodeObject(raw, v, arg)
	case kindArray:
		if jsonKind(raw) != '[' {
			return mustBe(arg, n, raw)
		}
		var items []json.RawMessage
		if err := json.Unmarshal(raw, &items); err != nil {
			return mustBe(arg, n, raw)
		}
		if v.Kind() == reflect.Array {
			if len(items) != v.Len() {
				return fmt.Sprintf("argument %q must hold %d items, not %d", arg, v.Len(), len(items))
			}
		} else {
			v.Set(reflect.MakeSlice(v.Type(), len(items), len(items)))
		}
		for i, item := range items {
			if msg := n.elem.decodeValue(item, v.Index(i), fmt.Sprintf("%s[%d]", arg, i)); msg != "" {
				return msg
			}
		}
		return ""
	case kindMap:
		if jsonKind(raw) != '{' {
			return mustBe(arg, n, raw)
		}
		var items map[string]json.RawMessage
		if err := json.Unmarshal(raw, &items); err != nil {
			return mustBe(arg, n, raw)
		}
		v.Set(reflect.MakeMapWithSize(v.Type(), len(items)))
		for _, k := range sortedKeys(items) {
			ev := reflect.New(v.Type().Elem()).Elem()
			if msg := n.elem.decodeValue(items[k], ev, arg+"."+k); msg != "" {
				return msg
			}
			v.SetMapIndex(reflect.ValueOf(k).Convert(v.Type().Key()), ev)
		}
		return ""
	case kindAny:
		if v.Type() == rawMessage {
			v.SetBytes(bytes.Clone(raw))
			return ""
		}
	}
	// Scalars (and custom types such as ids given as numbers or strings).
	if err := json.Unmarshal(raw, v.Addr().Interface()); err != nil {
		return mustBe(arg, n, raw)
	}
	return ""
}

// decodeValue decodes an array item or a map value: null is refused there,
// since it has no absent form to mean.
func (n *node) decodeValue(raw json.RawMessage, v reflect.Value, arg string) string {
	if jsonKind(raw) == 'n' && n.kind != kindAny {
		return mustBe(arg, n, raw)
	}
	if v.Kind() == reflect.Pointer {
		v.Set(reflect.New(v.Type().Elem()))
		v = v.Elem()
	}
	return n.decode(raw, v, arg)
}

func (n *node) decodeObject(raw json.RawMessage, v reflect.Value, arg string) string {
	if jsonKind(raw) != '{' {
		return mustBe(arg, n, raw)
	}
	var members map[string]json.RawMessage
	if err := json.Unmarshal(raw, &members); err != nil {
		return mustBe(arg, n, raw)
	}
	for _, k := range sortedKeys(members) {
		if n.field(k) == nil {
			return n.unknown(k, arg)
		}
	}
	for _, f := range n.fields {
		name := f.name
		if arg != "" {
			name = arg + "." + f.name
		}
		fv := v.FieldByIndex(f.index)
		raw, present := members[f.name]
		if present && f.rule.def != nil && f.node.kind == kindString && isBlankString(raw) {
			present = false // "" for an optional string with a default: models send it to mean "the default"
		}
		if !present || jsonKind(raw) == 'n' {
			switch {
			case f.required:
				return fmt.Sprintf("argument %q is required", name)
			case f.rule.def != nil:
				if fv.Kind() == reflect.Pointer {
					fv.Set(reflect.New(fv.Type().Elem()))
					fv = fv.Elem()
				}
				fv.Set(reflect.ValueOf(f.rule.def).Convert(fv.Type()))
			}
			continue
		}
		if fv.Kind() == reflect.Pointer {
			fv.Set(reflect.New(fv.Type().Elem()))
			fv = fv.Elem()
		}
		if msg := f.node.decode(raw, fv, name); msg != "" {
			return msg
		}
		if f.required && f.node.kind == kindString && fv.String() == "" {
			return fmt.Sprintf("argument %q must not be empty", name)
		}
		if msg := f.rule.apply(f.node, fv, name); msg != "" {
			return msg
		}
	}
	return ""
}

func (n *node) field(name string) *field {
	for _, f := range n.fields {
		if f.name == name {
			return f
		}
	}
	return nil
}

// unknown says that name is not an argument of the object arg, and which are.
func (n *node) unknown(name, arg string) string {
	names := make([]string, len(n.fields))
	for i, f := range n.fields {
		names[i] = f.name
	}
	if arg == "" {
		if len(names) == 0 {
			return fmt.Sprintf("unknown argument %s: this tool takes no arguments", clipJSON(name))
		}
		return fmt.Sprintf("unknown argument %s; the arguments are %s", clipJSON(name), andList(names))
	}
	return fmt.Sprintf("argument %q has no field %s; its fields are %s", arg, clipJSON(name), andList(names))
}

// mustBe says that the value raw of arg is not what n accepts.
func mustBe(arg string, n *node, raw json.RawMessage) string {
	return fmt.Sprintf("argument %q must be %s, not %s", arg, n.want(), given(raw))
}

// given names a JSON value in a message: the value itself when it is a
// short number or boolean, else its kind.
func given(raw json.RawMessage) string {
	raw = bytes.TrimSpace(raw)
	switch jsonKind(raw) {
	case '"':
		return "a string"
	case '{':
		return "an object"
	case '[':
		return "an array"
	case 'n':
		return "null"
	case 't', 'f':
		return string(raw)
	}
	if len(raw) <= 24 {
		return string(raw)
	}
	return "a number"
}

// jsonKind is the first byte of a JSON value, with 0-9 and - read as '0'.
func jsonKind(raw json.RawMessage) byte {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return 0
	}
	switch c := raw[0]; {
	case c == '-' || (c >= '0' && c <= '9'):
		return '0'
	default:
		return c
	}
}

// describeSyntax words a JSON syntax error for the model.
func describeSyntax(err error) string {
	var se *json.SyntaxError
	switch {
	case errors.As(err, &se):
		return fmt.Sprintf("%s (at byte %d)", strings.TrimPrefix(se.Error(), "json: "), se.Offset)
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return "the JSON ends too early"
	}
	return strings.TrimPrefix(err.Error(), "json: ")
}

// clipJSON quotes s for a message, cut to 60 characters.
func clipJSON(s string) string {
	if utf8.RuneCountInString(s) > 60 {
		s = string([]rune(s)[:60]) + "…"
	}
	return strconv.Quote(s)
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// isBlankString reports whether raw is a JSON string of only white space.
func isBlankString(raw json.RawMessage) bool {
	var s string
	return jsonKind(raw) == '"' && json.Unmarshal(raw, &s) == nil && strings.TrimSpace(s) == ""
}
