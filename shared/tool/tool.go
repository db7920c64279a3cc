package tool

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"sync"
)

// Spec is what the model is told about a tool, and the check its arguments
// get. Specs are immutable and safe for concurrent use.
type Spec interface {
	// Name is the tool's name, as a Definition lists it and the model calls it.
	Name() string
	// Description is the model-facing description.
	Description() string
	// Schema is the JSON Schema of the arguments object. The caller must
	// not change it.
	Schema() json.RawMessage
	// Check validates args exactly as Run does before it acts, without
	// acting: ok false comes with the error Result that Run would return.
	Check(args json.RawMessage) (res Result, ok bool)
	// Info is the catalog's record of the tool: where it runs, the scope
	// it needs, its summary for people.
	Info() Info
}

// Tool is one named action. Run validates args (the tool's JSON arguments
// object) before doing anything; bad arguments give an error Result, not an
// error. Run returns a non-nil error only when the environment is broken.
// Tools are safe for concurrent use.
type Tool interface {
	Spec
	Run(ctx context.Context, args json.RawMessage) (Result, error)
}

// About describes a tool to Define.
type About struct {
	// Name is the tool's name.
	Name string
	// RunsIn is where the tool executes, for a tool of the product; the
	// catalog (shared/toolbox) is every contract that says. With it, Scope
	// and Summary are required.
	RunsIn Location
	// Scope is the API-key scope a Definition that allows the tool needs
	// (ScopeFiles, …).
	Scope string
	// Builtin marks the seven tools of the built-in tools page.
	Builtin bool
	// Summary is a one-line description for people, such as `agentsfleet
	// tools` prints; the model is told Description.
	Summary string
	// Description is the model-facing description (usually embedded from
	// the tool's .txt file). Its numbers come from the Rules and Values
	// rather than being typed again: {{default "limit"}}, {{max "limit"}}
	// and {{min "limit"}} give a rule's figures, and {{.Key}} a value of
	// Values. A missing key, or any other {{…}}, is an error.
	Description string
	// Rules constrain arguments beyond their Go types, keyed by the
	// argument's JSON name ("limit"), or a path for a nested one
	// ("plan.status", through arrays).
	Rules Rules
	// Values are further figures the description states.
	Values map[string]any
}

// Def is the Spec of a tool whose arguments decode into T, a struct. Tools
// embed a *Def[T] to get Name, Description, Schema and Check, and call
// Decode in Run. Def is safe for concurrent use.
//
// Its schema, argument checks and description are made on first use, not
// by Define: a function that links a package of contracts for their names
// and scopes alone (the API checking a Definition) does not pay for them at
// every cold start.
type Def[T any] struct {
	info  Info
	about About
	once  sync.Once
	built built
}

// built is what Define's About makes of T.
type built struct {
	description string
	schema      json.RawMessage
	args        *node
}

var _ Spec = (*Def[struct{}])(nil)

// Define returns the Spec of a tool whose arguments are T, a struct whose
// exported fields carry json tags. Each field is an argument: required
// unless its tag has omitempty (or omitzero) or it is a pointer; a required
// string must not be empty. A `description` struct tag becomes the
// property's description in the schema.
//
// Define panics when its place, scope or summary are wrong; the first use
// of the Spec panics when T, the rules or the description template are (a
// rule naming no field, a default out of its own range, an unknown
// template key): programming errors that any test of the package finds,
// since a package's tests read every contract (Specs).
func Define[T any](a About) *Def[T] {
	info := Info{Name: a.Name, Builtin: a.Builtin, RunsIn: a.RunsIn, Scope: a.Scope, Summary: a.Summary}
	if err := info.check(); err != nil {
		panic(fmt.Sprintf("tool.Define %s: %v", a.Name, err))
	}
	return &Def[T]{info: info, about: a}
}

// made returns what About makes of T, making it once.
func (d *Def[T]) made() *built {
	d.once.Do(func() { d.built = build[T](d.about) })
	return &d.built
}

func build[T any](a About) built {
	n, err := buildNode(reflect.TypeFor[T](), a.Rules, "")
	if err != nil {
		panic(fmt.Sprintf("tool.Define %s: %v", a.Name, err))
	}
	if n.kind != kindObject {
		panic(fmt.Sprintf("tool.Define %s: the arguments must be a struct, not %s", a.Name, reflect.TypeFor[T]()))
	}
	if err := a.Rules.unused(n); err != nil {
		panic(fmt.Sprintf("tool.Define %s: %v", a.Name, err))
	}
	desc, err := describe(a, n)
	if err != nil {
		panic(fmt.Sprintf("tool.Define %s: description: %v", a.Name, err))
	}
	schema, err := json.Marshal(n.schema())
	if err != nil {
		panic(fmt.Sprintf("tool.Define %s: schema: %v", a.Name, err))
	}
	return built{description: desc, schema: schema, args: n}
}

// Name is the tool's name.
func (d *Def[T]) Name() string { return d.info.Name }

// Info is the tool's place, scope and summary, as its About gave them.
func (d *Def[T]) Info() Info { return d.info }

// Description is the model-facing description, its template executed.
func (d *Def[T]) Description() string { return d.made().description }

// Schema is the JSON Schema of the arguments object.
func (d *Def[T]) Schema() json.RawMessage { return d.made().schema }

// Check validates args as Decode does.
func (d *Def[T]) Check(args json.RawMessage) (Result, bool) {
	_, res, ok := d.Decode(args)
	return res, ok
}

// Decode decodes args into a T: every rule checked, every absent argument
// with a default given it. Unknown arguments, wrong types, missing required
// ones, values out of range, trailing data and anything but a JSON object
// are refused with an error Result (ok false) whose text names the tool and
// the argument and says what is allowed, for example
//
//	read: argument "limit" must be 1 or more, not 0
//
// An absent or null argument is treated alike, and so is a blank string
// for an optional string argument with a default. Empty args mean {}.
func (d *Def[T]) Decode(args json.RawMessage) (v T, res Result, ok bool) {
	if len(bytes.TrimSpace(args)) == 0 {
		args = json.RawMessage("{}")
	}
	if msg := d.made().args.decode(args, reflect.ValueOf(&v).Elem(), ""); msg != "" {
		return v, Errorf("%s: %s", d.info.Name, msg), false
	}
	return v, Result{}, true
}

// Refuse returns the error Result for an argument the tool refuses after
// decoding, in the wording Decode uses: "NAME: argument "ARG" REASON".
func (d *Def[T]) Refuse(arg, reason string, a ...any) Result {
	return Errorf("%s: argument %q %s", d.info.Name, arg, fmt.Sprintf(reason, a...))
}

// Unbuilt returns a Tool for spec that this version of agentsfleet does not
// run yet: its Run checks the arguments like any tool and then answers with
// an error Result saying so, and why.
func Unbuilt(spec Spec, why string) Tool { return unbuilt{spec, why} }

type unbuilt struct {
	Spec
	why string
}

func (u unbuilt) Run(_ context.Context, args json.RawMessage) (Result, error) {
	if res, ok := u.Check(args); !ok {
		return res, nil
	}
	return Errorf("%s is not available in this version of agentsfleet: %s", u.Name(), u.why), nil
}

// Names returns the names of specs, sorted.
func Names[S Spec](specs []S) []string {
	out := make([]string, len(specs))
	for i, s := range specs {
		out[i] = s.Name()
	}
	slices.Sort(out)
	return out
}

// placeholder is one of the forms a description may hold: {{.Key}}, or
// {{default "path"}}, {{max "path"}}, {{min "path"}}.
var placeholder = regexp.MustCompile(`\{\{\s*(?:\.([A-Za-z][A-Za-z0-9]*)|(default|max|min)\s+"([^"]+)")\s*\}\}`)

// describe fills a.Description's placeholders from n's rules and a.Values.
// It is not text/template on purpose: a binary that links text/template
// keeps every exported method of every type (the template can call any by
// name), which made the runner's binary 106 MB, most of it the AWS SDK's
// operations it never calls.
func describe(a About, n *node) (string, error) {
	var errs []error
	out := placeholder.ReplaceAllStringFunc(a.Description, func(m string) string {
		g := placeholder.FindStringSubmatch(m)
		v, err := fill(a.Values, n, g[1], g[2], g[3])
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", m, err))
			return m
		}
		return fmt.Sprint(v)
	})
	if len(errs) > 0 {
		return "", errors.Join(errs...)
	}
	if i := strings.Index(out, "{{"); i >= 0 {
		return "", fmt.Errorf("description of %s: %.40q is not {{.Key}}, {{default \"arg\"}}, {{max \"arg\"}} or {{min \"arg\"}}", a.Name, out[i:])
	}
	return out, nil
}

// fill is a placeholder's value: values[key], or a rule's figure.
func fill(values map[string]any, n *node, key, fn, path string) (any, error) {
	if key != "" {
		v, ok := values[key]
		if !ok {
			return nil, fmt.Errorf("no value %q", key)
		}
		return v, nil
	}
	f := n.find(path)
	if f == nil {
		return nil, fmt.Errorf("no argument %q", path)
	}
	r := &f.rule
	switch fn {
	case "default":
		if r.def == nil {
			return nil, fmt.Errorf("argument %q has no default", path)
		}
		return r.def, nil
	case "min":
		if r.min == nil {
			return nil, fmt.Errorf("argument %q has no minimum", path)
		}
		return number(*r.min), nil
	default:
		if r.max == nil {
			return nil, fmt.Errorf("argument %q has no maximum", path)
		}
		return number(*r.max), nil
	}
}

// ArgsType is T, the Go type the arguments decode into.
func (d *Def[T]) ArgsType() reflect.Type { return reflect.TypeFor[T]() }
