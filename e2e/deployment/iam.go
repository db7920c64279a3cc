package deployment

import (
	"encoding/json"
	"fmt"
	"path"
	"strings"
)

// statement is one IAM policy statement of a function's execution role.
type statement struct {
	Sid       string                    `json:"Sid"`
	Effect    string                    `json:"Effect"`
	Action    stringList                `json:"Action"`
	NotAction stringList                `json:"NotAction"`
	Resource  stringList                `json:"Resource"`
	Condition map[string]map[string]any `json:"Condition"`
}

// stringList is a policy's string or list of strings.
type stringList []string

func (l *stringList) UnmarshalJSON(b []byte) error {
	var one string
	if json.Unmarshal(b, &one) == nil {
		*l = []string{one}
		return nil
	}
	var many []string
	if err := json.Unmarshal(b, &many); err != nil {
		return fmt.Errorf("want a string or a list of strings: %s", b)
	}
	*l = many
	return nil
}

// Allowed reports whether the statements allow c, as IAM evaluates an
// identity policy: an explicit deny wins, then any allow; nothing allowed
// is denied. Conditions are evaluated for the operators the stack uses,
// with the set operators ForAnyValue: and ForAllValues: over a Call's
// single value; an operator the harness does not know makes an Allow not
// apply and a Deny apply (so an unknown condition can never allow a
// call).
func Allowed(stmts []statement, c Call) (bool, string) {
	allowed := ""
	for _, res := range c.Resource {
		ok := false
		for _, s := range stmts {
			if !s.applies(c.Action, res, c.Context) {
				continue
			}
			if strings.EqualFold(s.Effect, "Deny") {
				return false, fmt.Sprintf("denied by %s", s.describe())
			}
			ok = true
			allowed = s.describe()
		}
		if !ok {
			return false, "no statement allows " + c.Action + " on " + res
		}
	}
	return true, allowed
}

func (s statement) describe() string {
	b, _ := json.Marshal(s)
	return string(b)
}

func (s statement) applies(action, resource string, ctx map[string]string) bool {
	matched := false
	if len(s.NotAction) > 0 {
		matched = true
		for _, a := range s.NotAction {
			if wildcard(strings.ToLower(a), strings.ToLower(action)) {
				matched = false
			}
		}
	}
	for _, a := range s.Action {
		if wildcard(strings.ToLower(a), strings.ToLower(action)) {
			matched = true
		}
	}
	if !matched {
		return false
	}
	inResource := false
	for _, r := range s.Resource {
		if wildcard(r, resource) {
			inResource = true
		}
	}
	if !inResource {
		return false
	}
	deny := strings.EqualFold(s.Effect, "Deny")
	for op, keys := range s.Condition {
		set, base, _ := strings.Cut(op, ":")
		if base == "" {
			set, base = "", op
		}
		if !known[base] || (set != "" && set != "ForAnyValue" && set != "ForAllValues") {
			if deny {
				continue
			}
			return false
		}
		for key, want := range keys {
			got, present := ctx[key]
			var wants []string
			switch w := want.(type) {
			case string:
				wants = []string{w}
			case []any:
				for _, x := range w {
					wants = append(wants, fmt.Sprint(x))
				}
			default:
				wants = []string{fmt.Sprint(w)}
			}
			switch {
			case !present && set == "ForAllValues":
				// Every value of an empty set matches.
			case !present || !conditionHolds(base, got, wants):
				return false
			}
		}
	}
	return true
}

// known are the condition operators conditionHolds evaluates.
var known = map[string]bool{"StringEquals": true, "ArnEquals": true, "StringLike": true, "ArnLike": true}

func conditionHolds(op, got string, wants []string) bool {
	for _, w := range wants {
		switch op {
		case "StringEquals", "ArnEquals":
			if got == w {
				return true
			}
		case "StringLike", "ArnLike":
			if wildcard(w, got) {
				return true
			}
		default:
			return false
		}
	}
	return false
}

// wildcard matches IAM's * and ? (which, unlike path.Match's, cross /).
func wildcard(pattern, s string) bool {
	if !strings.ContainsAny(pattern, "*?") {
		return pattern == s
	}
	// path.Match's * stops at /: match with / replaced by a byte that
	// neither side holds.
	const sep = "\x00"
	ok, err := path.Match(strings.ReplaceAll(strings.ReplaceAll(pattern, "/", sep), "[", "\\["), strings.ReplaceAll(s, "/", sep))
	return err == nil && ok
}
