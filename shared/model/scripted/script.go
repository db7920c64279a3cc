package scripted

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/pelletier/go-toml/v2"

	"github.com/agentsfleet/agentsfleet/shared/model"
)

// ParseError is a script that cannot be loaded: File is the name given to
// Parse (the path given to Load), Line the 1-based line of the problem, 0
// when it concerns the whole file.
type ParseError struct {
	File    string
	Line    int
	Message string
}

func (e *ParseError) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("%s:%d: %s", e.File, e.Line, e.Message)
	}
	return fmt.Sprintf("%s: %s", e.File, e.Message)
}

// turn is one step of the script: the answer it gives, unless one of its
// alternatives' conditions holds first.
type turn struct {
	answer
	alternatives []alternative
}

// alternative is an answer given instead of its turn's own when all of its
// conditions hold.
type alternative struct {
	lastError      *bool
	outputContains *string
	answer
}

// answer is one assistant message.
type answer struct {
	text  template // nil when the answer has no text
	calls []call
	// stop overrides the stop reason of an answer without tool calls.
	stop model.StopReason
}

// call is a tool call of an answer.
type call struct {
	name string
	// args is the arguments object: maps, slices, numbers and booleans as
	// decoded, with every string a template.
	args map[string]any
}

// toolName is what every provider accepts as a tool name.
var toolName = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// decoder turns a decoded document into turns, with errors that name the
// line of the value at fault.
type decoder struct {
	file  string
	data  []byte
	spans spans
	// called is the tool names the turns before the current one call;
	// anyCall is whether they call any.
	called  map[string]bool
	anyCall bool
}

// parse decodes data (JSON when name ends in .json, TOML otherwise) into
// the script's turns.
func parse(data []byte, name string) ([]turn, error) {
	d := &decoder{file: name, data: data, called: map[string]bool{}}
	var doc map[string]any
	var err error
	if strings.EqualFold(filepath.Ext(name), ".json") {
		doc, err = d.decodeJSON()
	} else {
		doc, err = d.decodeTOML()
	}
	if err != nil {
		return nil, err
	}
	return d.turns(doc)
}

func (d *decoder) decodeTOML() (map[string]any, error) {
	var doc map[string]any
	if err := toml.Unmarshal(d.data, &doc); err != nil {
		var de *toml.DecodeError
		if errors.As(err, &de) {
			line, _ := de.Position()
			return nil, &ParseError{File: d.file, Line: line, Message: strings.TrimPrefix(de.Error(), "toml: ")}
		}
		return nil, &ParseError{File: d.file, Message: err.Error()}
	}
	d.spans = tomlSpans(d.data)
	return doc, nil
}

func (d *decoder) decodeJSON() (map[string]any, error) {
	dec := json.NewDecoder(bytes.NewReader(d.data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		var se *json.SyntaxError
		switch {
		case errors.As(err, &se):
			return nil, &ParseError{File: d.file, Line: lineAt(d.data, int(se.Offset)-1), Message: strings.TrimPrefix(se.Error(), "json: ")}
		case errors.Is(err, io.EOF):
			return nil, &ParseError{File: d.file, Message: "the script is empty"}
		default:
			return nil, &ParseError{File: d.file, Line: lineAt(d.data, int(dec.InputOffset())), Message: err.Error()}
		}
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, &ParseError{File: d.file, Line: lineAt(d.data, int(dec.InputOffset())), Message: "more after the script's object"}
	}
	doc, ok := v.(map[string]any)
	if !ok {
		return nil, &ParseError{File: d.file, Line: 1, Message: fmt.Sprintf(`a script is an object with a "turn" array, not %s`, typeName(v))}
	}
	d.spans = jsonSpans(d.data)
	return doc, nil
}

// errorf makes a *ParseError on the line of path's value; when snippet is
// set and written within that value, on the line of the snippet.
func (d *decoder) errorf(path, snippet, format string, args ...any) error {
	e := &ParseError{File: d.file, Message: fmt.Sprintf(format, args...)}
	sp, ok := d.spans.find(path)
	if !ok {
		return e
	}
	at := sp.start
	if snippet != "" && sp.end <= len(d.data) && sp.start < sp.end {
		raw := d.data[sp.start:sp.end]
		if i := bytes.Index(raw, []byte(snippet)); i >= 0 {
			at += i
		} else if j := strings.IndexAny(snippet, `"\`); j > 2 {
			// the snippet's quotes may be escaped in the file
			if i := bytes.Index(raw, []byte(snippet[:j])); i >= 0 {
				at += i
			}
		}
	}
	e.Line = lineAt(d.data, at)
	return e
}

// keys refuses any key of m not in allowed.
func (d *decoder) keys(path, where string, m map[string]any, allowed ...string) error {
	var unknown []string
	for k := range m {
		if !slices.Contains(allowed, k) {
			unknown = append(unknown, k)
		}
	}
	if len(unknown) == 0 {
		return nil
	}
	slices.Sort(unknown)
	return d.errorf(joinKey(path, unknown[0]), "", "%s: unknown key %q; the keys are %s", where, unknown[0], strings.Join(allowed, ", "))
}

func (d *decoder) typeError(path, where, key, want string, v any) error {
	return d.errorf(path, "", "%s: %s is %s, want %s", where, key, typeName(v), want)
}

func typeName(v any) string {
	switch v.(type) {
	case string:
		return "a string"
	case bool:
		return "a boolean"
	case map[string]any:
		return "a table"
	case []any:
		return "an array"
	case nil:
		return "null"
	case json.Number, int64, float64:
		return "a number"
	default:
		return "a date or time"
	}
}

func (d *decoder) turns(doc map[string]any) ([]turn, error) {
	if err := d.keys("", "the script", doc, "description", "turn"); err != nil {
		return nil, err
	}
	if v, ok := doc["description"]; ok {
		if _, ok := v.(string); !ok {
			return nil, d.typeError("description", "the script", "description", "a string", v)
		}
	}
	v, ok := doc["turn"]
	if !ok {
		return nil, &ParseError{File: d.file, Message: `the script has no turns: write each one as [[turn]] (in JSON, "turn": [...])`}
	}
	list, ok := v.([]any)
	if !ok {
		return nil, d.typeError("turn", "the script", "turn", "an array of tables ([[turn]])", v)
	}
	if len(list) == 0 {
		return nil, d.errorf("turn", "", "the script has no turns: its turn array is empty")
	}
	turns := make([]turn, 0, len(list))
	for i, el := range list {
		path := indexPath("turn", i)
		where := fmt.Sprintf("turn %d", i+1)
		m, ok := el.(map[string]any)
		if !ok {
			return nil, d.typeError(path, where, "the turn", "a table", el)
		}
		t, err := d.turn(path, where, m)
		if err != nil {
			return nil, err
		}
		// The calls become available to the turns after this one.
		for _, a := range append([]answer{t.answer}, alternativeAnswers(t.alternatives)...) {
			for _, c := range a.calls {
				d.called[c.name] = true
				d.anyCall = true
			}
		}
		turns = append(turns, t)
	}
	return turns, nil
}

func alternativeAnswers(alts []alternative) []answer {
	out := make([]answer, len(alts))
	for i, a := range alts {
		out[i] = a.answer
	}
	return out
}

func (d *decoder) turn(path, where string, m map[string]any) (turn, error) {
	if err := d.keys(path, where, m, "text", "tool_call", "stop", "alternative"); err != nil {
		return turn{}, err
	}
	a, err := d.answer(path, where, m)
	if err != nil {
		return turn{}, err
	}
	t := turn{answer: a}
	v, ok := m["alternative"]
	if !ok {
		return t, nil
	}
	list, ok := v.([]any)
	if !ok {
		return turn{}, d.typeError(joinKey(path, "alternative"), where, "alternative", "an array of tables ([[turn.alternative]])", v)
	}
	for i, el := range list {
		apath := indexPath(joinKey(path, "alternative"), i)
		awhere := fmt.Sprintf("%s, alternative %d", where, i+1)
		am, ok := el.(map[string]any)
		if !ok {
			return turn{}, d.typeError(apath, awhere, "the alternative", "a table", el)
		}
		alt, err := d.alternative(apath, awhere, am)
		if err != nil {
			return turn{}, err
		}
		t.alternatives = append(t.alternatives, alt)
	}
	return t, nil
}

func (d *decoder) alternative(path, where string, m map[string]any) (alternative, error) {
	if err := d.keys(path, where, m, "when_last_error", "when_output_contains", "text", "tool_call", "stop"); err != nil {
		return alternative{}, err
	}
	var alt alternative
	if v, ok := m["when_last_error"]; ok {
		b, ok := v.(bool)
		if !ok {
			return alternative{}, d.typeError(joinKey(path, "when_last_error"), where, "when_last_error", "true or false", v)
		}
		alt.lastError = &b
	}
	if v, ok := m["when_output_contains"]; ok {
		s, ok := v.(string)
		if !ok {
			return alternative{}, d.typeError(joinKey(path, "when_output_contains"), where, "when_output_contains", "a string", v)
		}
		if s == "" {
			return alternative{}, d.errorf(joinKey(path, "when_output_contains"), "", "%s: when_output_contains is empty, which every output contains", where)
		}
		alt.outputContains = &s
	}
	if alt.lastError == nil && alt.outputContains == nil {
		return alternative{}, d.errorf(path, "", "%s: an alternative needs a condition: when_last_error or when_output_contains", where)
	}
	if !d.anyCall {
		return alternative{}, d.errorf(path, "", "%s: its condition reads the last tool result, but no earlier turn calls a tool", where)
	}
	a, err := d.answer(path, where, m)
	if err != nil {
		return alternative{}, err
	}
	alt.answer = a
	return alt, nil
}

func (d *decoder) answer(path, where string, m map[string]any) (answer, error) {
	var a answer
	if v, ok := m["text"]; ok {
		s, ok := v.(string)
		if !ok {
			return answer{}, d.typeError(joinKey(path, "text"), where, "text", "a string", v)
		}
		t, err := d.template(joinKey(path, "text"), where, s)
		if err != nil {
			return answer{}, err
		}
		a.text = t
	}
	if v, ok := m["tool_call"]; ok {
		list, ok := v.([]any)
		if !ok {
			return answer{}, d.typeError(joinKey(path, "tool_call"), where, "tool_call", "an array of tables ([[turn.tool_call]])", v)
		}
		for i, el := range list {
			cpath := indexPath(joinKey(path, "tool_call"), i)
			cwhere := fmt.Sprintf("%s, tool call %d", where, i+1)
			cm, ok := el.(map[string]any)
			if !ok {
				return answer{}, d.typeError(cpath, cwhere, "the tool call", "a table", el)
			}
			c, err := d.call(cpath, cwhere, cm)
			if err != nil {
				return answer{}, err
			}
			a.calls = append(a.calls, c)
		}
	}
	if v, ok := m["stop"]; ok {
		s, ok := v.(string)
		if !ok {
			return answer{}, d.typeError(joinKey(path, "stop"), where, "stop", `"max_tokens" or "other"`, v)
		}
		switch model.StopReason(s) {
		case model.StopMaxTokens, model.StopOther:
		default:
			return answer{}, d.errorf(joinKey(path, "stop"), "", `%s: stop is %q, want "max_tokens" or "other" (end_turn and tool_use follow from the tool calls)`, where, s)
		}
		if len(a.calls) > 0 {
			return answer{}, d.errorf(joinKey(path, "stop"), "", "%s: stop is for an answer without tool calls", where)
		}
		a.stop = model.StopReason(s)
	}
	if len(a.text) == 0 && len(a.calls) == 0 {
		return answer{}, d.errorf(path, "", "%s has neither text nor tool calls: every answer needs one or both", where)
	}
	return a, nil
}

func (d *decoder) call(path, where string, m map[string]any) (call, error) {
	if err := d.keys(path, where, m, "name", "arguments"); err != nil {
		return call{}, err
	}
	v, ok := m["name"]
	if !ok {
		return call{}, d.errorf(path, "", "%s has no name", where)
	}
	name, ok := v.(string)
	if !ok {
		return call{}, d.typeError(joinKey(path, "name"), where, "name", "a string", v)
	}
	if !toolName.MatchString(name) {
		return call{}, d.errorf(joinKey(path, "name"), "", "%s: name %q is not a tool name: 1 to 64 letters, digits, _ or -", where, name)
	}
	where = fmt.Sprintf("%s (%s)", where, name)
	c := call{name: name, args: map[string]any{}}
	apath := joinKey(path, "arguments")
	switch a := m["arguments"].(type) {
	case nil:
	case map[string]any:
		args, err := d.argument(apath, where, a)
		if err != nil {
			return call{}, err
		}
		c.args = args.(map[string]any)
	case string:
		if strings.TrimSpace(a) == "" {
			break
		}
		dec := json.NewDecoder(strings.NewReader(a))
		dec.UseNumber()
		var obj any
		if err := dec.Decode(&obj); err != nil {
			return call{}, d.errorf(apath, "", "%s: arguments are not JSON: %v", where, err)
		}
		if _, err := dec.Token(); !errors.Is(err, io.EOF) {
			return call{}, d.errorf(apath, "", "%s: arguments have more after the JSON object", where)
		}
		om, ok := obj.(map[string]any)
		if !ok {
			return call{}, d.errorf(apath, "", "%s: arguments are %s, want a JSON object", where, typeName(obj))
		}
		args, err := d.argument(apath, where, om)
		if err != nil {
			return call{}, err
		}
		c.args = args.(map[string]any)
	default:
		return call{}, d.typeError(apath, where, "arguments", "a table or a string of a JSON object", a)
	}
	// Fill the placeholders with nothing once, so that arguments that
	// cannot be JSON (a TOML nan) fail now rather than mid-run.
	if _, err := c.arguments(&conversation{}); err != nil {
		return call{}, d.errorf(apath, "", "%s: arguments cannot be JSON: %v", where, err)
	}
	return c, nil
}

// argument converts an arguments value: every string becomes a template.
func (d *decoder) argument(path, where string, v any) (any, error) {
	switch x := v.(type) {
	case string:
		return d.template(path, where, x)
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		out := make(map[string]any, len(x))
		for _, k := range keys {
			e, err := d.argument(joinKey(path, k), where, x[k])
			if err != nil {
				return nil, err
			}
			out[k] = e
		}
		return out, nil
	case []any:
		out := make([]any, len(x))
		for i, el := range x {
			e, err := d.argument(indexPath(path, i), where, el)
			if err != nil {
				return nil, err
			}
			out[i] = e
		}
		return out, nil
	default:
		return x, nil
	}
}

// template parses s and checks that what its placeholders read can exist
// at this point of the script.
func (d *decoder) template(path, where, s string) (template, error) {
	t, err := parseTemplate(s)
	if err != nil {
		var te *templateError
		if errors.As(err, &te) {
			return nil, d.errorf(path, te.source, "%s: %s", where, te.msg)
		}
		return nil, d.errorf(path, "", "%s: %v", where, err)
	}
	for _, seg := range t {
		switch seg.kind {
		case lastOutput, lastError, sessionID, childID, lastImage:
			if !d.anyCall {
				return nil, d.errorf(path, seg.source, "%s: %s reads the last tool result, but no earlier turn calls a tool", where, seg.source)
			}
		case output:
			if !d.called[seg.text] {
				return nil, d.errorf(path, seg.source, "%s: %s reads a result of %s, but no earlier turn calls %s", where, seg.source, seg.text, seg.text)
			}
		}
	}
	return t, nil
}

// arguments renders the call's arguments as one JSON object.
func (c call) arguments(conv *conversation) (json.RawMessage, error) {
	return json.Marshal(renderValue(c.args, conv))
}

func renderValue(v any, conv *conversation) any {
	switch x := v.(type) {
	case template:
		return x.render(conv)
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = renderValue(e, conv)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = renderValue(e, conv)
		}
		return out
	default:
		return x
	}
}
