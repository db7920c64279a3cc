package fleet

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/agentsfleet/agentsfleet/shared/sandbox"
	"github.com/agentsfleet/agentsfleet/shared/tool"
	"github.com/agentsfleet/agentsfleet/shared/toolbox"
)

// DeclaredTool is a tool the Definition's author wrote ([[tools.declared]]):
// a shell command that runs in the sandbox, confined exactly as bash, with
// the model's arguments as JSON on standard input and in the environment.
// Declaring it allows it: it need not be listed in the tool allowlist too
// (where its name is accepted and held once, by the declaration). A
// Definition that declares one needs ScopeExecute, as bash does.
type DeclaredTool struct {
	// Name is how the model calls it: 1 to MaxDeclaredNameLen lowercase
	// letters, digits and underscores, starting with a letter; never a
	// catalog tool's name nor under the reserved prefix "mcp__".
	Name string
	// Description is what the model is told: not blank, at most
	// MaxDeclaredDescriptionBytes.
	Description string
	// Parameters is the JSON Schema of the arguments object, compact JSON
	// with keys sorted: {"type": "object", …}, checked to compile (draft
	// 2020-12, referring to no other document). Each property's name is a
	// valid part of an environment variable's name.
	Parameters json.RawMessage
	// Command is the shell command line, run as bash runs one (/bin/sh -c
	// in the workdir): not blank, no NUL, at most MaxDeclaredCommandBytes.
	Command string
}

// The bounds of declared tools.
const (
	// MaxDeclared is the most tools a Definition may declare.
	MaxDeclared = 32
	// MaxDeclaredNameLen is the longest declared tool name.
	MaxDeclaredNameLen = 64
	// MaxDeclaredDescriptionBytes is the longest description.
	MaxDeclaredDescriptionBytes = 8 << 10
	// MaxDeclaredCommandBytes is the longest command.
	MaxDeclaredCommandBytes = 16 << 10
	// ReservedToolPrefix starts the names of MCP servers' tools
	// (mcp__SERVER__TOOL), which a declared tool may not take.
	ReservedToolPrefix = "mcp__"
)

// Declared returns the declared tool called name.
func (d *Definition) Declared(name string) (DeclaredTool, bool) {
	i := slices.IndexFunc(d.DeclaredTools, func(t DeclaredTool) bool { return t.Name == name })
	if i < 0 {
		return DeclaredTool{}, false
	}
	return d.DeclaredTools[i], true
}

// AllowedTools returns every tool d allows, sorted: the allowlist and the
// declared tools.
func (d *Definition) AllowedTools() []string {
	out := slices.Clone(d.Tools)
	for _, t := range d.DeclaredTools {
		out = append(out, t.Name)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// wireDeclared is a declared tool in the canonical form.
type wireDeclared struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Parameters  json.RawMessage `json:"parameters"`
	Command     string          `json:"command"`
}

// wireTools is the top-level tools table in the canonical form: the
// declared tools (the allowlist is kept under x-agentsfleet).
type wireTools struct {
	Declared []wireDeclared `json:"declared,omitempty"`
}

func (d *Definition) toolsWire() *wireTools {
	if len(d.DeclaredTools) == 0 {
		return nil
	}
	w := &wireTools{Declared: make([]wireDeclared, len(d.DeclaredTools))}
	for i, t := range d.DeclaredTools {
		w.Declared[i] = wireDeclared(t)
	}
	return w
}

// declaredEntry is one [[tools.declared]] table as decoded, with its path.
type declaredEntry struct {
	tool DeclaredTool
	at   keyPath
	ok   bool
}

// declaredList decodes the array of tables tools.declared.
func (d *decoder) declaredList(at keyPath, v any) []declaredEntry {
	a, ok := d.boundedArray(at, v, "an array of tables ([[tools.declared]])", MaxDeclared, "declared tools")
	if !ok {
		return nil
	}
	out := make([]declaredEntry, 0, len(a))
	for i, e := range a {
		eat := at.index(i)
		var (
			t                        DeclaredTool
			nameSet, descSet, cmdSet bool
			params                   any
			paramsSet                bool
		)
		str := func(dst *string, set *bool) field {
			return func(at keyPath, v any) {
				if s, ok := d.str(at, v); ok {
					*dst, *set = s, true
				}
			}
		}
		before := len(d.probs.list) + d.probs.more
		if _, isTable := e.(map[string]any); !isTable {
			d.typeProblem(eat, "want %s (a declared tool: name, description, parameters, command), got %s", d.typeName(map[string]any{}), d.typeName(e))
			continue
		}
		d.table(eat, e, map[string]field{
			"name":        str(&t.Name, &nameSet),
			"description": str(&t.Description, &descSet),
			"command":     str(&t.Command, &cmdSet),
			"parameters":  func(_ keyPath, v any) { params, paramsSet = v, true },
		})
		check := func(key string, set bool, msg string) {
			if !set {
				msg = "required"
			}
			if msg != "" && !d.mistyped[eat.key(key).String()] {
				d.probs.add(eat.key(key), "%s", msg)
			}
		}
		check("name", nameSet, checkDeclaredName(t.Name))
		check("description", descSet, checkDeclaredDescription(t.Description))
		check("command", cmdSet, checkDeclaredCommand(t.Command))
		if !paramsSet {
			d.probs.add(eat.key("parameters"), "required: the JSON Schema of the arguments, such as {type = \"object\", properties = {path = {type = \"string\"}}, required = [\"path\"]}")
		} else {
			t.Parameters = d.declaredSchema(eat.key("parameters"), t.Name, params)
		}
		out = append(out, declaredEntry{tool: t, at: eat, ok: len(d.probs.list)+d.probs.more == before})
	}
	return out
}

// declared checks the declared tools against each other and the catalog,
// and returns the good ones sorted by name, or nil if there are none.
func (d *decoder) declared(entries []declaredEntry) []DeclaredTool {
	var out []DeclaredTool
	seen := map[string]bool{}
	for _, e := range entries {
		if !e.ok {
			continue
		}
		if seen[e.tool.Name] {
			d.probs.add(e.at.key("name"), "tool %q is declared twice; give each declared tool its own name", e.tool.Name)
			continue
		}
		seen[e.tool.Name] = true
		out = append(out, e.tool)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// checkDeclaredName accepts the names the catalog's own tools obey, less
// theirs and the reserved prefix.
func checkDeclaredName(s string) string {
	const rule = "a declared tool's name is 1 to 64 lowercase letters, digits and underscores, starting with a letter, such as \"run_tests\""
	if s == "" || len(s) > MaxDeclaredNameLen {
		return fmt.Sprintf("%q is not a valid tool name; %s", clip(s), rule)
	}
	for i, r := range s {
		if !(r >= 'a' && r <= 'z' || i > 0 && (r >= '0' && r <= '9' || r == '_')) {
			return fmt.Sprintf("%q is not a valid tool name; %s", clip(s), rule)
		}
	}
	if strings.HasPrefix(s, ReservedToolPrefix) {
		return fmt.Sprintf("%q starts with %q, which is reserved for the tools of MCP servers", s, ReservedToolPrefix)
	}
	if e, ok := toolbox.Lookup(s); ok {
		return fmt.Sprintf("%q is the name of agentsfleet's own %s tool; a declared tool may not shadow it: choose another name", s, e.RunsIn)
	}
	return ""
}

func checkDeclaredDescription(s string) string {
	switch {
	case strings.TrimSpace(s) == "":
		return "required: tell the model what the tool does and when to use it"
	case len(s) > MaxDeclaredDescriptionBytes:
		return fmt.Sprintf("%d bytes long; at most %d are allowed", len(s), MaxDeclaredDescriptionBytes)
	case !utf8.ValidString(s):
		return "not valid UTF-8 text"
	}
	return ""
}

func checkDeclaredCommand(s string) string {
	switch {
	case strings.TrimSpace(s) == "":
		return "required: the shell command line to run (/bin/sh -c COMMAND, as bash runs it)"
	case len(s) > MaxDeclaredCommandBytes:
		return fmt.Sprintf("%d bytes long; at most %d are allowed", len(s), MaxDeclaredCommandBytes)
	case strings.ContainsRune(s, 0):
		return "contains a NUL character, which no shell command can hold"
	case !utf8.ValidString(s):
		return "not valid UTF-8 text"
	}
	return ""
}

// declaredSchema checks the parameters value v of the declared tool name
// and returns it as compact JSON with sorted keys, or nil after recording
// the problems found.
func (d *decoder) declaredSchema(at keyPath, name string, v any) json.RawMessage {
	m, ok := v.(map[string]any)
	if !ok {
		d.typeProblem(at, "want a JSON Schema object (%s), got %s", d.typeName(map[string]any{}), d.typeName(v))
		return nil
	}
	tree, msg := jsonValue(m, "")
	if msg != "" {
		d.probs.add(at, "%s", msg)
		return nil
	}
	if typ, _ := m["type"].(string); typ != "object" {
		d.probs.add(at.key("type"), "the arguments are one JSON object: want type = \"object\", got %s", d.describeValue(m["type"]))
		return nil
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(tree); err != nil {
		d.probs.add(at, "cannot be written as JSON: %v", err)
		return nil
	}
	raw := json.RawMessage(bytes.TrimSuffix(b.Bytes(), []byte("\n")))
	if _, err := CompileSchema(name, raw); err != nil {
		d.probs.add(at, "%v", err)
		return nil
	}
	if props, ok := m["properties"].(map[string]any); ok {
		folded := map[string]string{}
		for _, p := range sortedKeys(props) {
			if msg := sandbox.ArgProblem(p); msg != "" {
				d.probs.add(at.key("properties").key(p), "%s", msg)
				continue
			}
			up := strings.ToUpper(p)
			if other, dup := folded[up]; dup {
				d.probs.add(at.key("properties").key(p), "parameters %q and %q differ only in case, so both would be the variable %s%s", other, p, sandbox.DeclaredArgEnvPrefix, up)
				continue
			}
			folded[up] = p
		}
	}
	return raw
}

// describeValue names a value for a message: a string quoted, else its type.
func (d *decoder) describeValue(v any) string {
	if v == nil {
		return "none"
	}
	if s, ok := v.(string); ok {
		return strconv.Quote(clip(s))
	}
	return d.typeName(v)
}

// jsonValue turns a decoded TOML or JSON tree into values encoding/json
// writes as the same JSON: TOML's dates and times and JSON's null have no
// place in a schema that both forms can hold. at names the place for the
// message.
func jsonValue(v any, at string) (any, string) {
	where := func() string {
		if at == "" {
			return ""
		}
		return " at " + at
	}
	switch x := v.(type) {
	case string, bool, int64:
		return x, ""
	case json.Number:
		// As TOML would hold it, so that both forms give the same bytes.
		if i, err := strconv.ParseInt(string(x), 10, 64); err == nil {
			return i, ""
		}
		f, err := strconv.ParseFloat(string(x), 64)
		if err != nil {
			return nil, "the number " + clip(string(x)) + where() + " is out of range"
		}
		return jsonValue(f, at)
	case float64:
		if math.IsInf(x, 0) || math.IsNaN(x) {
			return nil, "a number" + where() + " is infinite or not a number, which JSON cannot hold"
		}
		return x, ""
	case nil:
		return nil, "null" + where() + " has no TOML form; leave the key out"
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			var msg string
			if out[i], msg = jsonValue(e, at+"["+strconv.Itoa(i)+"]"); msg != "" {
				return nil, msg
			}
		}
		return out, ""
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			var msg string
			if out[k], msg = jsonValue(e, strings.TrimPrefix(at+"."+keySegment(k), ".")); msg != "" {
				return nil, msg
			}
		}
		return out, ""
	}
	return nil, "a date or time" + where() + " is not a JSON value; write it as a string"
}

// Schema is a compiled JSON Schema of a declared tool's arguments. It is
// safe for concurrent use.
type Schema struct{ s *jsonschema.Schema }

// CompileSchema compiles raw, the parameters of the declared tool name, as
// a JSON Schema (draft 2020-12 unless it says another with $schema). It
// refers to no other document: a $ref to anything but itself is refused,
// and so nothing is read from a file or the network.
func CompileSchema(name string, raw json.RawMessage) (*Schema, error) {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return nil, fmt.Errorf("not JSON: %v", err)
	}
	url := "urn:agentsfleet:declared:" + name
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.UseLoader(noDocuments{})
	if err := c.AddResource(url, doc); err != nil {
		return nil, fmt.Errorf("not a JSON Schema: %v", err)
	}
	s, err := c.Compile(url)
	if err != nil {
		var le *jsonschema.LoadURLError
		if errors.As(err, &le) {
			return nil, fmt.Errorf("not a JSON Schema of its own: it refers to %s, and a declared tool's schema may refer to nothing but itself", clip(le.URL))
		}
		return nil, fmt.Errorf("not a valid JSON Schema: %s", schemaMessage(err.Error(), url))
	}
	return &Schema{s}, nil
}

// schemaMessage shortens a compile error of the validator: one line, the
// internal URL left out.
func schemaMessage(msg, url string) string {
	msg = strings.ReplaceAll(msg, "'"+url+"#", "'#")
	msg = strings.ReplaceAll(msg, url, "the schema")
	return strings.Join(strings.Fields(msg), " ")
}

// noDocuments is the schema loader: it loads nothing (the validator's
// default would read files).
type noDocuments struct{}

func (noDocuments) Load(url string) (any, error) {
	return nil, fmt.Errorf("%s: a declared tool's schema refers to no other document", url)
}

// Check validates args, a JSON object, against s. It returns "" when they
// conform, else what is wrong, each failing place as a JSON pointer into
// the arguments, such as
//
//	at /count: got string, want integer; at (the arguments): missing property 'path'
func (s *Schema) Check(args json.RawMessage) string {
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(args))
	if err != nil {
		return "the arguments are not JSON: " + err.Error()
	}
	err = s.s.Validate(v)
	if err == nil {
		return ""
	}
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return err.Error()
	}
	var parts []string
	for _, u := range ve.BasicOutput().Errors {
		if u.Error == nil {
			continue
		}
		where := u.InstanceLocation
		if where == "" {
			where = "(the arguments)"
		}
		part := "at " + where + ": " + u.Error.String()
		if !slices.Contains(parts, part) {
			parts = append(parts, part)
		}
	}
	if len(parts) == 0 {
		return strings.Join(strings.Fields(ve.Error()), " ")
	}
	return strings.Join(parts, "; ")
}

// toolScopes maps every tool d allows to the scope it needs: a catalog
// tool's own (Parse refuses unknown names, so none is left out here but
// such a name in a Definition built in Go), ScopeExecute for a declared
// tool, which runs a command as bash does.
func (d *Definition) toolScopes() map[string]string {
	out := make(map[string]string, len(d.Tools)+len(d.DeclaredTools))
	for _, name := range d.Tools {
		if t, ok := LookupTool(name); ok {
			out[name] = t.Scope
		}
	}
	for _, t := range d.DeclaredTools {
		out[t.Name] = ScopeExecute
	}
	return out
}

// declaredTOML writes the declared tools as [[tools.declared]] tables, the
// parameters as one inline table.
func (d *Definition) declaredTOML(b *bytes.Buffer) {
	for _, t := range d.DeclaredTools {
		b.WriteString("\n[[tools.declared]]\n")
		fmt.Fprintf(b, "name = %s\n", tomlString(t.Name))
		fmt.Fprintf(b, "description = %s\n", tomlMultiline(t.Description))
		fmt.Fprintf(b, "command = %s\n", tomlMultiline(t.Command))
		var v any
		dec := json.NewDecoder(bytes.NewReader(t.Parameters))
		dec.UseNumber()
		if err := dec.Decode(&v); err != nil {
			v = map[string]any{} // Only a Definition built in Go has bad parameters; Normalize refuses it.
		}
		b.WriteString("parameters = ")
		writeTOMLValue(b, v)
		b.WriteByte('\n')
	}
}

// writeTOMLValue writes a JSON value (numbers as json.Number) as an inline
// TOML value.
func writeTOMLValue(b *bytes.Buffer, v any) {
	switch x := v.(type) {
	case string:
		b.WriteString(tomlString(x))
	case bool:
		b.WriteString(strconv.FormatBool(x))
	case json.Number:
		b.WriteString(tomlNumber(x))
	case []any:
		b.WriteByte('[')
		for i, e := range x {
			if i > 0 {
				b.WriteString(", ")
			}
			writeTOMLValue(b, e)
		}
		b.WriteByte(']')
	case map[string]any:
		b.WriteByte('{')
		for i, k := range sortedKeys(x) {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteByte(' ')
			if bareKey(k) {
				b.WriteString(k)
			} else {
				b.WriteString(tomlString(k))
			}
			b.WriteString(" = ")
			writeTOMLValue(b, x[k])
		}
		if len(x) > 0 {
			b.WriteByte(' ')
		}
		b.WriteByte('}')
	default: // null: Parse never keeps one.
		b.WriteString(`""`)
	}
}

// tomlNumber writes a JSON number as TOML reads back the same number: an
// integer as it is, anything with a fraction or exponent as a float (TOML
// wants digits on both sides of the point, which JSON's numbers have).
func tomlNumber(n json.Number) string {
	if _, err := strconv.ParseInt(string(n), 10, 64); err == nil {
		return string(n)
	}
	if f, err := strconv.ParseFloat(string(n), 64); err == nil {
		s := strconv.FormatFloat(f, 'g', -1, 64)
		if !strings.ContainsAny(s, ".eE") {
			s += ".0"
		}
		return s
	}
	return string(n)
}

// bareKey reports whether k may be written as a bare TOML key.
func bareKey(k string) bool {
	if k == "" {
		return false
	}
	for _, r := range k {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-') {
			return false
		}
	}
	return true
}

// Spec returns the contract the model is offered for t: its name,
// description and parameters, and a Check that validates arguments against
// the parameters (CompileSchema), refusing what does not conform with an
// error result naming the tool and each failing place. It runs in the
// sandbox and needs ScopeExecute. The error is CompileSchema's, which a
// DeclaredTool from Parse never gives.
func (t DeclaredTool) Spec() (tool.Spec, error) {
	s, err := CompileSchema(t.Name, t.Parameters)
	if err != nil {
		return nil, fmt.Errorf("declared tool %s: parameters: %w", t.Name, err)
	}
	summary, _, _ := strings.Cut(strings.TrimSpace(t.Description), "\n")
	return declaredSpec{t: t, schema: s, info: tool.Info{Name: t.Name, RunsIn: InSandbox, Scope: ScopeExecute, Summary: summary}}, nil
}

// declaredSpec is a declared tool's tool.Spec.
type declaredSpec struct {
	t      DeclaredTool
	schema *Schema
	info   tool.Info
}

func (s declaredSpec) Name() string            { return s.t.Name }
func (s declaredSpec) Description() string     { return s.t.Description }
func (s declaredSpec) Schema() json.RawMessage { return s.t.Parameters }
func (s declaredSpec) Info() tool.Info         { return s.info }

// Check validates args against the parameters; empty args are {}.
func (s declaredSpec) Check(args json.RawMessage) (tool.Result, bool) {
	if len(bytes.TrimSpace(args)) == 0 {
		args = json.RawMessage("{}")
	}
	if t := bytes.TrimSpace(args); t[0] != '{' || !json.Valid(t) {
		return tool.Errorf("%s: the arguments must be one JSON object", s.t.Name), false
	}
	if msg := s.schema.Check(args); msg != "" {
		return tool.Errorf("%s: the arguments do not match the tool's parameters: %s", s.t.Name, msg), false
	}
	return tool.Result{}, true
}
