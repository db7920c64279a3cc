package files

import (
	"strings"

	"github.com/bmatcuk/doublestar/v4"
)

// globMatcher returns how a glob walk tests an entry, given its path below
// the start (rel) and its name: against the name alone when baseOnly,
// else against the path. The shapes agents ask for most ("*.go",
// "**/*_test.go", "Makefile", "**/Makefile", "README*") are tested on
// the name with a string comparison, which is what doublestar would
// decide at a tenth of the cost; every other pattern goes to doublestar.
func globMatcher(pattern string, baseOnly bool) func(rel, name string) bool {
	namePattern, onName := pattern, baseOnly
	// "**/" matches any run of directories, none included, so "**/P" with
	// no other separator matches a path exactly when P matches its name.
	if rest, ok := strings.CutPrefix(pattern, "**/"); ok && !baseOnly && !strings.Contains(rest, "/") {
		namePattern, onName = rest, true
	}
	if onName {
		if match := literalMatcher(namePattern); match != nil {
			return func(_, name string) bool { return match(name) }
		}
		return func(_, name string) bool { return doublestar.MatchUnvalidated(namePattern, name) }
	}
	return func(rel, name string) bool { return doublestar.MatchUnvalidated(pattern, joinRel(rel, name)) }
}

// literalMatcher returns a string test for a name pattern that is a
// literal, a literal after one leading *, or a literal before one
// trailing *; nil for any other.
func literalMatcher(p string) func(string) bool {
	const meta = `*?[]{}\`
	switch {
	case !strings.ContainsAny(p, meta):
		return func(name string) bool { return name == p }
	case strings.HasPrefix(p, "*") && !strings.ContainsAny(p[1:], meta):
		suffix := p[1:]
		return func(name string) bool { return strings.HasSuffix(name, suffix) }
	case strings.HasSuffix(p, "*") && !strings.ContainsAny(p[:len(p)-1], meta):
		prefix := p[:len(p)-1]
		return func(name string) bool { return strings.HasPrefix(name, prefix) }
	}
	return nil
}
