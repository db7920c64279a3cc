package tool

import (
	"bytes"
	"encoding/json"
	"reflect"
)

// schema is a JSON Schema (draft 2020-12) of the few keywords tool
// arguments need, written in a fixed order so that a tool's schema is the
// same bytes every time.
type schema struct {
	Type                 string      `json:"type,omitempty"`
	Description          string      `json:"description,omitempty"`
	Enum                 []string    `json:"enum,omitempty"`
	Default              any         `json:"default,omitempty"`
	Minimum              any         `json:"minimum,omitempty"`
	Maximum              any         `json:"maximum,omitempty"`
	MinLength            int         `json:"minLength,omitempty"`
	MaxLength            int         `json:"maxLength,omitempty"`
	Pattern              string      `json:"pattern,omitempty"`
	Items                *schema     `json:"items,omitempty"`
	MinItems             int         `json:"minItems,omitempty"`
	MaxItems             int         `json:"maxItems,omitempty"`
	Properties           *properties `json:"properties,omitempty"`
	Required             []string    `json:"required,omitempty"`
	AdditionalProperties any         `json:"additionalProperties,omitempty"`
}

// properties keeps the arguments in the order of the Go struct's fields.
type properties []property

type property struct {
	name   string
	schema *schema
}

func (ps properties) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, p := range ps {
		if i > 0 {
			b.WriteByte(',')
		}
		name, _ := json.Marshal(p.name)
		b.Write(name)
		b.WriteByte(':')
		v, err := json.Marshal(p.schema)
		if err != nil {
			return nil, err
		}
		b.Write(v)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// schema returns n's schema.
func (n *node) schema() *schema {
	s := &schema{}
	switch n.kind {
	case kindString:
		s.Type = "string"
	case kindInteger:
		s.Type = "integer"
	case kindNumber:
		s.Type = "number"
	case kindBool:
		s.Type = "boolean"
	case kindArray:
		s.Type = "array"
		s.Items = n.elem.schema()
		if n.typ.Kind() == reflect.Array {
			s.MinItems, s.MaxItems = n.typ.Len(), n.typ.Len()
		}
	case kindMap:
		s.Type = "object"
		s.AdditionalProperties = n.elem.schema()
	case kindObject:
		s.Type = "object"
		s.Properties = &properties{}
		for _, f := range n.fields {
			*s.Properties = append(*s.Properties, property{f.name, f.schema()})
			if f.required {
				s.Required = append(s.Required, f.name)
			}
		}
		s.AdditionalProperties = false
	}
	return s
}

// schema returns the schema of f: its type's, with its description and rule.
func (f *field) schema() *schema {
	s := f.node.schema()
	s.Description = f.desc
	r := f.rule
	s.Enum = r.enum
	s.Default = r.def
	if r.min != nil {
		s.Minimum = number(*r.min)
	}
	if r.max != nil {
		s.Maximum = number(*r.max)
	}
	if f.required && f.node.kind == kindString {
		s.MinLength = 1
	}
	s.MaxLength = r.maxLen
	if r.notBlank {
		s.Pattern = `\S`
	}
	return s
}
