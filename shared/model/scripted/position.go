package scripted

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"

	"github.com/pelletier/go-toml/v2/unstable"
)

// span is where a value is written in the script: from its key (or, for an
// array element, the element itself) to the end of its value, in bytes.
type span struct{ start, end int }

// spans maps the path of every value in a script, as "turn[1].tool_call[0]
// .name" (indexes from 0), to where it is written. The decoders give values
// without positions; spans is how an error about a value finds its line.
type spans map[string]span

// find returns the span of path, or of its nearest parent that has one.
func (s spans) find(path string) (span, bool) {
	for path != "" {
		if sp, ok := s[path]; ok {
			return sp, true
		}
		i := strings.LastIndexAny(path, ".[")
		if i < 0 {
			break
		}
		path = path[:i]
	}
	return span{}, false
}

func joinKey(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

func indexPath(path string, i int) string {
	return path + "[" + strconv.Itoa(i) + "]"
}

// lineAt is the 1-based line of the byte at offset.
func lineAt(data []byte, offset int) int {
	offset = min(max(offset, 0), len(data))
	return 1 + bytes.Count(data[:offset], []byte{'\n'})
}

// tomlSpans walks a TOML document that decoded without error.
func tomlSpans(data []byte) spans {
	s := spans{}
	var p unstable.Parser
	p.Reset(data)
	// arrays counts the tables of each array of tables seen so far, so that
	// a header such as [[turn.tool_call]] resolves to the last turn.
	arrays := map[string]int{}
	table := ""
	for p.NextExpression() {
		e := p.Expression()
		switch e.Kind {
		case unstable.Table, unstable.ArrayTable:
			path := ""
			var first *unstable.Node
			it := e.Key()
			for it.Next() {
				k := it.Node()
				if first == nil {
					first = k
				}
				path = joinKey(path, string(k.Data))
				if it.IsLast() && e.Kind == unstable.ArrayTable {
					n := arrays[path]
					arrays[path] = n + 1
					path = indexPath(path, n)
				} else if n, ok := arrays[path]; ok {
					path = indexPath(path, n-1)
				}
			}
			table = path
			if first != nil {
				s[path] = rangeSpan(first.Raw)
			}
		case unstable.KeyValue:
			path := table
			it := e.Key()
			for it.Next() {
				path = joinKey(path, string(it.Node().Data))
			}
			s[path] = rangeSpan(e.Raw)
			tomlValueSpans(s, path, e.Value())
		}
	}
	return s
}

// tomlValueSpans records the spans inside an inline table or an array.
func tomlValueSpans(s spans, path string, v *unstable.Node) {
	switch v.Kind {
	case unstable.InlineTable:
		it := v.Children()
		for it.Next() {
			kv := it.Node()
			if kv.Kind != unstable.KeyValue {
				continue
			}
			p := path
			k := kv.Key()
			for k.Next() {
				p = joinKey(p, string(k.Node().Data))
			}
			s[p] = rangeSpan(kv.Raw)
			tomlValueSpans(s, p, kv.Value())
		}
	case unstable.Array:
		i := 0
		it := v.Children()
		for it.Next() {
			el := it.Node()
			if el.Kind == unstable.Comment {
				continue
			}
			p := indexPath(path, i)
			i++
			if el.Raw.Length > 0 {
				s[p] = rangeSpan(el.Raw)
			}
			tomlValueSpans(s, p, el)
		}
	}
}

func rangeSpan(r unstable.Range) span {
	return span{int(r.Offset), int(r.Offset + r.Length)}
}

// jsonSpans walks a JSON document that decoded without error.
func jsonSpans(data []byte) spans {
	s := spans{}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	_ = jsonValueSpans(dec, data, s, "", -1)
	return s
}

// jsonValueSpans reads one value at path; start is where its key began, or
// -1 for an array element or the document.
func jsonValueSpans(dec *json.Decoder, data []byte, s spans, path string, start int) error {
	before := skipSeparators(data, int(dec.InputOffset()))
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	if start < 0 {
		start = before
	}
	switch tok {
	case json.Delim('{'):
		for dec.More() {
			keyStart := skipSeparators(data, int(dec.InputOffset()))
			k, err := dec.Token()
			if err != nil {
				return err
			}
			key, _ := k.(string)
			if err := jsonValueSpans(dec, data, s, joinKey(path, key), keyStart); err != nil {
				return err
			}
		}
		if _, err := dec.Token(); err != nil {
			return err
		}
	case json.Delim('['):
		for i := 0; dec.More(); i++ {
			if err := jsonValueSpans(dec, data, s, indexPath(path, i), -1); err != nil {
				return err
			}
		}
		if _, err := dec.Token(); err != nil {
			return err
		}
	}
	if path != "" {
		s[path] = span{start, int(dec.InputOffset())}
	}
	return nil
}

// skipSeparators skips the white space, commas and colons the decoder has
// not consumed yet before a token.
func skipSeparators(data []byte, i int) int {
	for i < len(data) && strings.IndexByte(" \t\r\n,:", data[i]) >= 0 {
		i++
	}
	return i
}
