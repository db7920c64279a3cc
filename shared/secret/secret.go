// Package secret is the credential firewall's vocabulary: references of the
// form «secret:NAME» (U+00AB, U+00BB) that a model may write, a fleet's
// secrets (NAME → secret id) read from a Source such as AWS Secrets Manager,
// and redaction that turns any secret value back into its reference.
//
// Security boundary: this package fills references only when a caller asks
// (the webtools λ does, after it has checked the destination), and it never
// puts a secret value into an error message. What it cannot see it cannot
// redact: Redact knows the raw value and a few fixed encodings of it (see
// Set.Redact), not a value that was transformed otherwise (hashed, split,
// encrypted, base64 of a longer string that contains it).
package secret

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/url"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
)

// Source fetches the value of a secret by its id (for AWS Secrets Manager,
// a secret name or ARN). Implementations must not put the value in errors.
type Source interface {
	SecretValue(ctx context.Context, id string) (string, error)
}

// Map is a Source over fixed values, keyed by id. The `webtools call`
// command line uses it for --secrets-file; tests use it where Secrets
// Manager is beside the point.
type Map map[string]string

// SecretValue returns m[id], or an error naming id if there is none.
func (m Map) SecretValue(_ context.Context, id string) (string, error) {
	v, ok := m[id]
	if !ok {
		return "", fmt.Errorf("secret %q not found", id)
	}
	return v, nil
}

const (
	refOpen  = "«secret:"
	refClose = "»"
)

var refPattern = regexp.MustCompile(`«secret:([A-Za-z0-9_.\-]+)»`)

// Ref returns the reference for name: «secret:NAME».
func Ref(name string) string { return refOpen + name + refClose }

// Refs returns the names referenced in text, in order of first appearance,
// each once.
func Refs(text string) []string {
	var names []string
	for _, m := range refPattern.FindAllStringSubmatch(text, -1) {
		if !slices.Contains(names, m[1]) {
			names = append(names, m[1])
		}
	}
	return names
}

// HasRef reports whether text contains anything that starts a reference,
// well-formed or not. Callers that must not send references use it rather
// than Refs, so that a malformed one is caught too.
func HasRef(text string) bool { return strings.Contains(text, refOpen) }

// MalformedError reports a «secret: that does not form a reference.
type MalformedError struct{ Near string }

func (e *MalformedError) Error() string {
	return fmt.Sprintf("malformed secret reference near %q: write «secret:NAME» with a name of letters, digits, '_', '.' or '-'", e.Near)
}

// UnknownError reports a reference to a name the fleet has no secret for.
type UnknownError struct {
	Name  string
	Known []string // the fleet's secret names, sorted
}

func (e *UnknownError) Error() string {
	if len(e.Known) == 0 {
		return fmt.Sprintf("unknown secret %q: this fleet has no secrets", e.Name)
	}
	return fmt.Sprintf("unknown secret %q: this fleet's secrets are %s", e.Name, strings.Join(e.Known, ", "))
}

// ErrUnknown matches every *UnknownError with errors.Is.
var ErrUnknown = errors.New("unknown secret")

// Is lets errors.Is(err, ErrUnknown) match.
func (e *UnknownError) Is(target error) bool { return target == ErrUnknown }

// Set is one invocation's view of a fleet's secrets: the names the fleet
// declares, mapped to secret ids, with values fetched from a Source at most
// once each and kept only for the life of the Set. A Set is safe for
// concurrent use.
type Set struct {
	src Source
	ids map[string]string // name → id

	mu     sync.Mutex
	values map[string]string // name → value, filled lazily
}

// NewSet returns a Set over ids (NAME → secret id) read from src. src may be
// nil when ids is empty.
func NewSet(src Source, ids map[string]string) *Set {
	return &Set{src: src, ids: maps.Clone(ids), values: map[string]string{}}
}

// Names returns the fleet's secret names, sorted.
func (s *Set) Names() []string {
	return slices.Sorted(maps.Keys(s.ids))
}

// Has reports whether the fleet declares a secret called name.
func (s *Set) Has(name string) bool { _, ok := s.ids[name]; return ok }

// Value returns the value of the secret called name. It returns an
// *UnknownError if the fleet declares no such secret, and a wrapped Source
// error (which never holds the value) if it cannot be read.
func (s *Set) Value(ctx context.Context, name string) (string, error) {
	id, ok := s.ids[name]
	if !ok {
		return "", &UnknownError{Name: name, Known: s.Names()}
	}
	s.mu.Lock()
	v, ok := s.values[name]
	s.mu.Unlock()
	if ok {
		return v, nil
	}
	if s.src == nil {
		return "", fmt.Errorf("read secret %s: no secret store is configured", name)
	}
	v, err := s.src.SecretValue(ctx, id)
	if err != nil {
		return "", fmt.Errorf("read secret %s: %w", name, err)
	}
	s.mu.Lock()
	s.values[name] = v
	s.mu.Unlock()
	return v, nil
}

// Check returns the names referenced in text after making sure every
// reference is well-formed (else *MalformedError) and names a secret the
// fleet declares (else *UnknownError). It reads no value.
func (s *Set) Check(text string) ([]string, error) {
	if err := checkWellFormed(text); err != nil {
		return nil, err
	}
	names := Refs(text)
	for _, n := range names {
		if !s.Has(n) {
			return nil, &UnknownError{Name: n, Known: s.Names()}
		}
	}
	return names, nil
}

func checkWellFormed(text string) error {
	rest := text
	for {
		i := strings.Index(rest, refOpen)
		if i < 0 {
			return nil
		}
		rest = rest[i:]
		loc := refPattern.FindStringIndex(rest)
		if loc == nil || loc[0] != 0 {
			near := rest
			if len(near) > 40 {
				near = near[:40]
			}
			return &MalformedError{Near: near}
		}
		rest = rest[loc[1]:]
	}
}

// Fill replaces every reference in text with its value passed through
// encode (nil means as is; use JSONString inside a JSON string). It returns
// the filled text and the names it filled. Errors are those of Check and
// Value; on error nothing is returned that holds a value.
//
// Fill does not decide whether filling is allowed: callers check the
// destination first.
func (s *Set) Fill(ctx context.Context, text string, encode func(string) string) (string, []string, error) {
	names, err := s.Check(text)
	if err != nil || len(names) == 0 {
		return text, nil, err
	}
	values := make(map[string]string, len(names))
	for _, n := range names {
		v, err := s.Value(ctx, n)
		if err != nil {
			return "", nil, err
		}
		if encode != nil {
			v = encode(v)
		}
		values[n] = v
	}
	out := refPattern.ReplaceAllStringFunc(text, func(m string) string {
		return values[m[len(refOpen):len(m)-len(refClose)]]
	})
	return out, names, nil
}

// JSONString encodes v as the inside of a JSON string literal, for filling
// a reference that sits inside one. It does not escape <, > and & (JSON
// does not need it, and servers compare the value as sent).
func JSONString(v string) string {
	var buf strings.Builder
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v) // a string always encodes
	s := strings.TrimSuffix(buf.String(), "\n")
	return s[1 : len(s)-1]
}

// LoadAll reads every secret the fleet declares, so that Redact can see
// them all. It is what makes redaction complete; it stops at the first
// secret that cannot be read.
func (s *Set) LoadAll(ctx context.Context) error {
	for _, n := range s.Names() {
		if _, err := s.Value(ctx, n); err != nil {
			return err
		}
	}
	return nil
}

// Redact loads every secret of the fleet (LoadAll) and returns text with
// each value replaced by its reference. If a secret cannot be read it
// returns an error and no text, because it could not promise the text is
// clean.
//
// Besides the raw value it replaces these encodings of it: URL query and
// path escaping, the inside of a JSON string (with and without HTML
// escaping), and standard and URL-safe base64 of the value alone, padded
// and not. Longer matches win. Values are matched case-sensitively; an
// empty value is never matched. A value that is a JSON object is screened
// whole and field by field: each string field of MinFieldLen bytes or more
// is replaced wherever it appears, alone.
func (s *Set) Redact(ctx context.Context, text string) (string, error) {
	if len(s.ids) == 0 {
		return text, nil
	}
	if err := s.LoadAll(ctx); err != nil {
		return "", fmt.Errorf("load the fleet's secrets to screen the output: %w", err)
	}
	return s.RedactLoaded(text), nil
}

// RedactLoaded is Redact with only the values read so far. Use it for
// error messages, where the values that could appear are those already
// filled.
func (s *Set) RedactLoaded(text string) string {
	forms := s.forms()
	if len(forms) == 0 {
		return text
	}
	args := make([]string, 0, 2*len(forms))
	for _, f := range forms {
		args = append(args, f.form, Ref(f.name))
	}
	return strings.NewReplacer(args...).Replace(text)
}

// Margin is how far past a cut a reader must have read for SafeCut to see
// every spelling of a loaded value that starts before the cut: the longest
// spelling, less one byte. Load the values first (LoadAll).
func (s *Set) Margin() int {
	forms := s.forms()
	if len(forms) == 0 {
		return 0
	}
	return len(forms[0].form) - 1 // longest first
}

// SafeCut returns where to cut b, at most n bytes in, so that the cut
// splits no spelling of a loaded value: n itself when no spelling that the
// screen would replace straddles it, else the start of the one that does
// (repeated while another straddles the new place). Kept whole, a value
// before the cut is replaced by the screen; a value the cut would have
// split is left out whole, so that neither a prefix of it nor, in what
// follows, a suffix reaches anyone. b must extend Margin bytes past n where
// the input does, for a straddling value to be seen.
func (s *Set) SafeCut(b []byte, n int) int {
	forms := s.forms()
	if n >= len(b) || len(forms) == 0 {
		return min(n, len(b))
	}
	for moved := true; moved && n > 0; {
		moved = false
		for _, f := range forms {
			if start, ok := straddles(b, n, f.form); ok {
				n, moved = start, true
			}
		}
	}
	return n
}

// straddles reports the start of the leftmost occurrence of form in b that
// begins before n and ends after it.
func straddles(b []byte, n int, form string) (int, bool) {
	lo := max(0, n-len(form)+1)
	hi := min(len(b), n+len(form)-1)
	if hi-lo < len(form) {
		return 0, false
	}
	i := bytes.Index(b[lo:hi], []byte(form))
	if i < 0 {
		return 0, false
	}
	return lo + i, true
}

// spelling is one form of a loaded value and the name it stands for.
type spelling struct{ form, name string }

// forms returns the spellings of the loaded values, longest first (so that
// a value that contains another is replaced whole), and for a value that is
// a JSON object each of its string fields too (see Redact).
func (s *Set) forms() []spelling {
	s.mu.Lock()
	values := maps.Clone(s.values)
	s.mu.Unlock()
	var out []spelling
	for name, v := range values {
		for _, part := range append([]string{v}, jsonFields(v)...) {
			for _, f := range Forms(part) {
				out = append(out, spelling{f, name})
			}
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		if len(out[i].form) != len(out[j].form) {
			return len(out[i].form) > len(out[j].form)
		}
		return out[i].form < out[j].form
	})
	return out
}

// MinFieldLen is the shortest string field of a JSON secret that is
// screened on its own: shorter ones (a port, "dev") are not secrets in
// themselves, and a screen could not keep them from a guess anyway.
const MinFieldLen = 4

// jsonFields returns the string values of v's fields, at any depth, when v
// is a JSON object (as Secrets Manager keeps database credentials):
// {"username": "app", "password": "…"} gives the password (and the user
// name, if long enough) to screen on its own.
func jsonFields(v string) []string {
	v = strings.TrimSpace(v)
	if !strings.HasPrefix(v, "{") {
		return nil
	}
	var obj map[string]any
	if json.Unmarshal([]byte(v), &obj) != nil {
		return nil
	}
	var out []string
	var walk func(any)
	walk = func(x any) {
		switch x := x.(type) {
		case string:
			if len(x) >= MinFieldLen {
				out = append(out, x)
			}
		case map[string]any:
			for _, k := range slices.Sorted(maps.Keys(x)) {
				walk(x[k])
			}
		case []any:
			for _, e := range x {
				walk(e)
			}
		}
	}
	walk(obj)
	return out
}

// Forms returns the spellings of v that redaction looks for: v itself and
// its encodings listed at Set.Redact, without duplicates. It returns nil
// for an empty v.
func Forms(v string) []string {
	if v == "" {
		return nil
	}
	b := []byte(v)
	jsonHTML, _ := json.Marshal(v) // escapes <, > and & as \u003c…
	all := []string{
		v,
		url.QueryEscape(v),
		url.PathEscape(v),
		JSONString(v),
		string(jsonHTML[1 : len(jsonHTML)-1]),
		base64.StdEncoding.EncodeToString(b),
		base64.RawStdEncoding.EncodeToString(b),
		base64.URLEncoding.EncodeToString(b),
		base64.RawURLEncoding.EncodeToString(b),
	}
	var out []string
	for _, f := range all {
		if f != "" && !slices.Contains(out, f) {
			out = append(out, f)
		}
	}
	return out
}
