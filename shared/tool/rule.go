package tool

import (
	"fmt"
	"reflect"
	"sort"
	"strings"
)

// Rules constrain arguments beyond their Go types, keyed by the argument's
// JSON name, or a dotted path for a field of a nested object ("plan.status",
// arrays passed through).
type Rules map[string]Rule

// Rule constrains one argument. Build one from Min, Max, Between, OneOf,
// MaxLen, NotBlank or Default, and chain the rest:
//
//	tool.Min(1).Max(ReadMaxLimit).Clamp().Default(ReadDefaultLimit)
//
// The zero Rule allows every value of the argument's type.
type Rule struct {
	min, max *float64
	clamp    bool
	def      any
	enum     []string
	fold     bool
	maxLen   int
	notBlank bool
}

// Min is a rule that a number is at least n.
func Min(n float64) Rule { return Rule{}.Min(n) }

// Max is a rule that a number is at most n.
func Max(n float64) Rule { return Rule{}.Max(n) }

// Between is a rule that a number is from lo to hi.
func Between(lo, hi float64) Rule { return Rule{}.Min(lo).Max(hi) }

// OneOf is a rule that a string is one of values.
func OneOf(values ...string) Rule { return Rule{}.OneOf(values...) }

// MaxLen is a rule that a string has at most n characters.
func MaxLen(n int) Rule { return Rule{}.MaxLen(n) }

// NotBlank is a rule that a string holds more than white space.
func NotBlank() Rule { return Rule{}.NotBlank() }

// Default is a rule that an absent argument takes v.
func Default(v any) Rule { return Rule{}.Default(v) }

// Min refuses numbers below n.
func (r Rule) Min(n float64) Rule { r.min = &n; return r }

// Max refuses numbers above n, or takes them as n after Clamp.
func (r Rule) Max(n float64) Rule { r.max = &n; return r }

// Clamp takes a number above Max as Max instead of refusing it (the spec's
// caps clamp: "a larger value reads 2000"). The schema still states the
// maximum, so that a model does not ask for more.
func (r Rule) Clamp() Rule { r.clamp = true; return r }

// Default gives an absent argument the value v, which must fit the
// argument's type and the rule's own range.
func (r Rule) Default(v any) Rule { r.def = v; return r }

// OneOf refuses strings other than values.
func (r Rule) OneOf(values ...string) Rule { r.enum = values; return r }

// FoldCase makes OneOf ignore case and surrounding white space; the value
// decoded is the one of OneOf's spelling.
func (r Rule) FoldCase() Rule { r.fold = true; return r }

// MaxLen refuses strings of more than n characters (runes).
func (r Rule) MaxLen(n int) Rule { r.maxLen = n; return r }

// NotBlank refuses strings that are empty or only white space.
func (r Rule) NotBlank() Rule { r.notBlank = true; return r }

// check reports what is wrong with r for an argument of node n, at path.
func (r Rule) check(n *node) error {
	numeric := n.kind == kindInteger || n.kind == kindNumber
	if (r.min != nil || r.max != nil) && !numeric {
		return fmt.Errorf("a range on %s, which is not a number", n.want())
	}
	if r.clamp && r.max == nil {
		return fmt.Errorf("Clamp without Max")
	}
	if (r.enum != nil || r.maxLen != 0 || r.notBlank) && n.kind != kindString {
		return fmt.Errorf("a string rule on %s", n.want())
	}
	if r.fold && r.enum == nil {
		return fmt.Errorf("FoldCase without OneOf")
	}
	if n.kind == kindInteger {
		for _, b := range []*float64{r.min, r.max} {
			if b != nil && *b != float64(int64(*b)) {
				return fmt.Errorf("a bound of %v on an integer", *b)
			}
		}
	}
	if r.def != nil {
		dv := reflect.ValueOf(r.def)
		if !dv.Type().ConvertibleTo(n.typ) || (numeric != isNumberKind(dv.Kind())) {
			return fmt.Errorf("a default of type %s for %s", dv.Type(), n.typ)
		}
		v := reflect.New(n.typ).Elem()
		v.Set(dv.Convert(n.typ))
		if msg := r.apply(n, v, "default"); msg != "" {
			return fmt.Errorf("the default %v breaks its own rule: %s", r.def, msg)
		}
	}
	return nil
}

func isNumberKind(k reflect.Kind) bool {
	return (k >= reflect.Int && k <= reflect.Uint64) || k == reflect.Float32 || k == reflect.Float64
}

// apply checks the decoded value v against r, clamping or canonicalising it
// in place. It returns what is wrong, in the words "must be …", or "".
func (r Rule) apply(n *node, v reflect.Value, arg string) string {
	switch n.kind {
	case kindString:
		s := v.String()
		switch {
		case r.notBlank && strings.TrimSpace(s) == "":
			return fmt.Sprintf("argument %q must not be empty", arg)
		case r.maxLen > 0 && len([]rune(s)) > r.maxLen:
			return fmt.Sprintf("argument %q must be at most %d characters, not %d", arg, r.maxLen, len([]rune(s)))
		case r.enum != nil:
			for _, e := range r.enum {
				if s == e || (r.fold && strings.EqualFold(strings.TrimSpace(s), e)) {
					v.SetString(e)
					return ""
				}
			}
			return fmt.Sprintf("argument %q must be one of %s, not %s", arg, orList(r.enum), clipJSON(s))
		}
	case kindInteger, kindNumber:
		var f float64
		if n.kind == kindInteger {
			f = float64(intOf(v))
		} else {
			f = v.Float()
		}
		low := r.min != nil && f < *r.min
		high := r.max != nil && f > *r.max
		switch {
		case high && r.clamp:
			setNumber(v, *r.max)
		case (low || high) && r.min != nil && r.max != nil && !r.clamp:
			return fmt.Sprintf("argument %q must be between %v and %v, not %v", arg, number(*r.min), number(*r.max), number(f))
		case low:
			return fmt.Sprintf("argument %q must be %v or more, not %v", arg, number(*r.min), number(f))
		case high:
			return fmt.Sprintf("argument %q must be at most %v, not %v", arg, number(*r.max), number(f))
		}
	}
	return ""
}

func intOf(v reflect.Value) int64 {
	if v.CanInt() {
		return v.Int()
	}
	return int64(v.Uint())
}

func setNumber(v reflect.Value, f float64) {
	switch {
	case v.CanInt():
		v.SetInt(int64(f))
	case v.CanUint():
		v.SetUint(uint64(f))
	default:
		v.SetFloat(f)
	}
}

// number is f as the schema and the messages print it: 2000, not 2e+03.
func number(f float64) any {
	if f == float64(int64(f)) {
		return int64(f)
	}
	return f
}

// unused reports a rule whose path names no argument of n.
func (rs Rules) unused(n *node) error {
	var bad []string
	for path := range rs {
		if n.find(path) == nil {
			bad = append(bad, path)
		}
	}
	if len(bad) == 0 {
		return nil
	}
	sort.Strings(bad)
	return fmt.Errorf("rules for %s, which are not arguments", strings.Join(bad, ", "))
}

// orList formats values as "a, b or c".
func orList(values []string) string {
	switch len(values) {
	case 0:
		return ""
	case 1:
		return values[0]
	}
	return strings.Join(values[:len(values)-1], ", ") + " or " + values[len(values)-1]
}

// andList formats values as "a, b and c".
func andList(values []string) string {
	if len(values) < 2 {
		return orList(values)
	}
	return strings.Join(values[:len(values)-1], ", ") + " and " + values[len(values)-1]
}
