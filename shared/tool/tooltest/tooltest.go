// Package tooltest checks that a tool.Spec keeps its contract: a valid JSON
// Schema (draft 2020-12) that says exactly what the tool's own argument
// check accepts. Every registry of tools runs Conform over each of its
// tools in its tests.
package tooltest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/agentsfleet/agentsfleet/shared/tool"
)

// Conform checks spec: its schema compiles against the JSON Schema
// meta-schema, is an object that allows no other property, names as
// properties exactly the json fields of the tool's argument struct (when the
// spec says which, as tool.Def does), and agrees with spec.Check on
// examples built from the schema itself: the required arguments alone, every
// argument, each required one left out, each given a value of the wrong
// type, and an unknown one.
func Conform(t testing.TB, spec tool.Spec) {
	t.Helper()
	name := spec.Name()
	if strings.TrimSpace(spec.Description()) == "" {
		t.Errorf("%s: empty description", name)
	}
	if strings.Contains(spec.Description(), "{{") {
		t.Errorf("%s: the description holds an unexecuted template: %q", name, spec.Description())
	}
	raw := spec.Schema()
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		t.Fatalf("%s: schema is not JSON: %v\n%s", name, err, raw)
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	if err := c.AddResource("mem://"+name+".json", doc); err != nil {
		t.Fatalf("%s: schema: %v", name, err)
	}
	compiled, err := c.Compile("mem://" + name + ".json")
	if err != nil {
		t.Fatalf("%s: not a valid JSON Schema: %v\n%s", name, err, raw)
	}
	var s node
	if err := json.Unmarshal(raw, &s); err != nil {
		t.Fatalf("%s: schema: %v", name, err)
	}
	if s.Type != "object" || string(s.AdditionalProperties) != "false" || s.Properties == nil {
		t.Fatalf("%s: schema is not an object with properties and additionalProperties false: %s", name, raw)
	}
	if at, ok := spec.(interface{ ArgsType() reflect.Type }); ok {
		if got, want := sortedKeys(s.Properties), jsonFields(at.ArgsType()); !slices.Equal(got, want) {
			t.Errorf("%s: schema properties %v, want the argument struct's fields %v", name, got, want)
		}
	}
	for _, r := range s.Required {
		if _, ok := s.Properties[r]; !ok {
			t.Errorf("%s: required %q is not a property", name, r)
		}
	}

	agree := func(label string, args map[string]any, wantOK bool, wantText string) {
		t.Helper()
		b, _ := json.Marshal(args)
		res, ok := spec.Check(b)
		schemaErr := compiled.Validate(mustAny(b))
		switch {
		case ok != wantOK:
			t.Errorf("%s: %s: Check(%s) ok = %v (%q), want %v", name, label, b, ok, res.Output, wantOK)
		case !ok && !res.IsError:
			t.Errorf("%s: %s: Check(%s) refused without an error result", name, label, b)
		case !ok && !strings.HasPrefix(res.Output, name+": "+wantText):
			t.Errorf("%s: %s: Check(%s) = %q, want it to start %q", name, label, b, res.Output, name+": "+wantText)
		}
		if (schemaErr == nil) != wantOK {
			t.Errorf("%s: %s: the schema says valid = %v for %s (%v), want %v", name, label, schemaErr == nil, b, schemaErr, wantOK)
		}
	}
	minimal := map[string]any{}
	for _, r := range s.Required {
		minimal[r] = s.Properties[r].example()
	}
	agree("the required arguments", minimal, true, "")
	full := map[string]any{}
	for k, p := range s.Properties {
		full[k] = p.example()
	}
	agree("every argument", full, true, "")
	for _, r := range s.Required {
		args := clone(minimal)
		delete(args, r)
		agree("without "+r, args, false, fmt.Sprintf("argument %q is required", r))
	}
	for _, k := range sortedKeys(s.Properties) {
		if s.Properties[k].Type == "" {
			continue // any value
		}
		args := clone(minimal)
		args[k] = s.Properties[k].wrong()
		agree("a wrong type for "+k, args, false, fmt.Sprintf("argument %q must be", k))
	}
	args := clone(minimal)
	args["zz_not_an_argument"] = 1
	agree("an unknown argument", args, false, `unknown argument "zz_not_an_argument"`)
}

// node is the part of a schema Conform reads.
type node struct {
	Type                 string           `json:"type"`
	Enum                 []string         `json:"enum"`
	Minimum              *float64         `json:"minimum"`
	MinLength            int              `json:"minLength"`
	Items                *node            `json:"items"`
	MinItems             int              `json:"minItems"`
	Properties           map[string]*node `json:"properties"`
	Required             []string         `json:"required"`
	AdditionalProperties json.RawMessage  `json:"additionalProperties"`
}

// example is a value the schema accepts.
func (n *node) example() any {
	switch n.Type {
	case "string":
		if len(n.Enum) > 0 {
			return n.Enum[0]
		}
		return "x"
	case "integer", "number":
		if n.Minimum != nil {
			return *n.Minimum
		}
		return 1
	case "boolean":
		return true
	case "array":
		items := make([]any, max(n.MinItems, 1))
		for i := range items {
			items[i] = n.Items.example()
		}
		return items
	case "object":
		obj := map[string]any{}
		for k, p := range n.Properties {
			obj[k] = p.example()
		}
		return obj
	}
	return "any"
}

// wrong is a value of another JSON type than the schema's.
func (n *node) wrong() any {
	if n.Type == "string" {
		return 12
	}
	return "twelve"
}

func jsonFields(t reflect.Type) []string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	var out []string
	for _, f := range reflect.VisibleFields(t) {
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if f.IsExported() && !f.Anonymous && name != "-" && name != "" {
			out = append(out, name)
		}
	}
	sort.Strings(out)
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func clone(m map[string]any) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

func mustAny(b []byte) any {
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
	if err != nil {
		panic(err)
	}
	return v
}
