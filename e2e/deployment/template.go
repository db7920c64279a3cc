package deployment

import (
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"strings"
)

// template is a synthesized CloudFormation template, as `make synth`
// writes it.
type template struct {
	Resources map[string]resource `json:"Resources"`
}

// resource is one of the template's resources.
type resource struct {
	Type       string                     `json:"Type"`
	Properties map[string]json.RawMessage `json:"Properties"`
}

func readTemplate(path string) (*template, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read the template: %w", err)
	}
	var t template
	if err := json.Unmarshal(b, &t); err != nil {
		return nil, fmt.Errorf("the template %s is not JSON: %w", path, err)
	}
	if len(t.Resources) == 0 {
		return nil, fmt.Errorf("the template %s has no resources", path)
	}
	return &t, nil
}

// ofType returns the logical ids of the resources of type typ, sorted.
func (t *template) ofType(typ string) []string {
	var ids []string
	for id, r := range t.Resources {
		if r.Type == typ {
			ids = append(ids, id)
		}
	}
	sort.Strings(ids)
	return ids
}

// values are what Ref and Fn::GetAtt give for each resource once the
// harness has made it: refs by logical id, attributes by "id.Attr".
type values struct {
	region, account string
	refs            map[string]string
	attrs           map[string]string
}

// resolve evaluates the intrinsic functions in v (a template value decoded
// as any) that the synthesized stack uses: Ref, Fn::GetAtt, Fn::Join,
// Fn::Sub, Fn::Select, Fn::Split and the pseudo parameters. A reference to
// a resource the harness has not made is an error naming it.
func (vs *values) resolve(v any) (any, error) {
	switch x := v.(type) {
	case map[string]any:
		if len(x) == 1 {
			for k, arg := range x {
				switch k {
				case "Ref":
					return vs.ref(fmt.Sprint(arg))
				case "Fn::GetAtt":
					parts, ok := arg.([]any)
					if !ok || len(parts) != 2 {
						return nil, fmt.Errorf("Fn::GetAtt %v: want [id, attribute]", arg)
					}
					return vs.getAtt(fmt.Sprint(parts[0]), fmt.Sprint(parts[1]))
				case "Fn::Join":
					parts, ok := arg.([]any)
					if !ok || len(parts) != 2 {
						return nil, fmt.Errorf("Fn::Join %v: want [delimiter, list]", arg)
					}
					list, err := vs.resolve(parts[1])
					if err != nil {
						return nil, err
					}
					items, ok := list.([]any)
					if !ok {
						return nil, fmt.Errorf("Fn::Join of %v: not a list", list)
					}
					strs := make([]string, len(items))
					for i, it := range items {
						strs[i] = fmt.Sprint(it)
					}
					return strings.Join(strs, fmt.Sprint(parts[0])), nil
				case "Fn::Sub":
					return vs.sub(arg)
				case "Fn::Select":
					parts, ok := arg.([]any)
					if !ok || len(parts) != 2 {
						return nil, fmt.Errorf("Fn::Select %v: want [index, list]", arg)
					}
					list, err := vs.resolve(parts[1])
					if err != nil {
						return nil, err
					}
					items, _ := list.([]any)
					var i int
					fmt.Sscan(fmt.Sprint(parts[0]), &i)
					if i < 0 || i >= len(items) {
						return nil, fmt.Errorf("Fn::Select %d of %d items", i, len(items))
					}
					return items[i], nil
				case "Fn::Split":
					parts, ok := arg.([]any)
					if !ok || len(parts) != 2 {
						return nil, fmt.Errorf("Fn::Split %v: want [delimiter, string]", arg)
					}
					s, err := vs.resolve(parts[1])
					if err != nil {
						return nil, err
					}
					var out []any
					for _, p := range strings.Split(fmt.Sprint(s), fmt.Sprint(parts[0])) {
						out = append(out, p)
					}
					return out, nil
				case "Fn::GetAZs":
					return []any{vs.region + "a", vs.region + "b", vs.region + "c"}, nil
				}
			}
		}
		out := make(map[string]any, len(x))
		for k, e := range x {
			r, err := vs.resolve(e)
			if err != nil {
				return nil, err
			}
			out[k] = r
		}
		return out, nil
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			r, err := vs.resolve(e)
			if err != nil {
				return nil, err
			}
			out[i] = r
		}
		return out, nil
	}
	return v, nil
}

func (vs *values) ref(name string) (string, error) {
	switch name {
	case "AWS::Region":
		return vs.region, nil
	case "AWS::AccountId":
		return vs.account, nil
	case "AWS::Partition":
		return "aws", nil
	case "AWS::URLSuffix":
		return "amazonaws.com", nil
	case "AWS::StackName":
		return "Agentsfleet", nil
	}
	if v, ok := vs.refs[name]; ok {
		return v, nil
	}
	return "", fmt.Errorf("Ref %s: the harness made no such resource", name)
}

func (vs *values) getAtt(id, attr string) (string, error) {
	if v, ok := vs.attrs[id+"."+attr]; ok {
		return v, nil
	}
	return "", fmt.Errorf("Fn::GetAtt %s.%s: the harness has no such attribute", id, attr)
}

// sub is Fn::Sub: a string with ${Name} and ${Id.Attr}, or [string, {vars}].
func (vs *values) sub(arg any) (string, error) {
	var s string
	vars := map[string]string{}
	switch a := arg.(type) {
	case string:
		s = a
	case []any:
		if len(a) != 2 {
			return "", fmt.Errorf("Fn::Sub %v: want a string or [string, variables]", arg)
		}
		s = fmt.Sprint(a[0])
		m, _ := a[1].(map[string]any)
		for k, v := range m {
			r, err := vs.resolve(v)
			if err != nil {
				return "", err
			}
			vars[k] = fmt.Sprint(r)
		}
	default:
		return "", fmt.Errorf("Fn::Sub %v: want a string or [string, variables]", arg)
	}
	var b strings.Builder
	for {
		i := strings.Index(s, "${")
		if i < 0 {
			b.WriteString(s)
			return b.String(), nil
		}
		j := strings.Index(s[i:], "}")
		if j < 0 {
			return "", fmt.Errorf("Fn::Sub %q: an unclosed ${", s)
		}
		b.WriteString(s[:i])
		name := s[i+2 : i+j]
		s = s[i+j+1:]
		if strings.HasPrefix(name, "!") { // ${!Literal}
			b.WriteString("${" + name[1:] + "}")
			continue
		}
		if v, ok := vars[name]; ok {
			b.WriteString(v)
			continue
		}
		var v string
		var err error
		if id, attr, ok := strings.Cut(name, "."); ok {
			v, err = vs.getAtt(id, attr)
		} else {
			v, err = vs.ref(name)
		}
		if err != nil {
			return "", err
		}
		b.WriteString(v)
	}
}

// prop resolves the property name of resource id into dst (through JSON).
func (vs *values) prop(t *template, id, name string, dst any) error {
	raw, ok := t.Resources[id].Properties[name]
	if !ok {
		return fmt.Errorf("%s has no property %s", id, name)
	}
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return err
	}
	r, err := vs.resolve(v)
	if err != nil {
		return fmt.Errorf("%s.%s: %w", id, name, err)
	}
	b, err := json.Marshal(r)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, dst)
}

// props resolves every property of resource id, as a map.
func (vs *values) props(t *template, id string) (map[string]any, error) {
	out := map[string]any{}
	for name := range t.Resources[id].Properties {
		var v any
		if err := vs.prop(t, id, name, &v); err != nil {
			return nil, err
		}
		out[name] = v
	}
	return out, nil
}
