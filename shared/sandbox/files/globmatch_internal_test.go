package files

import (
	"strings"
	"testing"

	"github.com/bmatcuk/doublestar/v4"
)

// TestGlobMatcherAgreesWithDoublestar: the string tests globMatcher picks
// decide every name and path as doublestar does.
func TestGlobMatcherAgreesWithDoublestar(t *testing.T) {
	t.Parallel()
	patterns := []string{
		"*.md", "*", "*.MD", "*.", "*_test.go", "Makefile", "README*", ".*", "*.tar.gz", "a",
		"**/*.md", "**/Makefile", "**/README*", "**/*", "**/x/*.md", "**", "*.[mM]d", "*.{md,txt}", `\*.md`, "*.m?",
		"x*y", "**/.git*", "*\u00e9", "dir/*.md",
	}
	names := []string{"a.md", ".md", "md", "a.mdx", "A.MD", "a.b.md", "Makefile", "makefile", "Makefile.am", "README", "README.md",
		"xREADME", ".git", ".gitignore", "x_test.go", "_test.go", "a", "*.md", `\*.md`, "a.tar.gz", "é", "caf\u00e9", "a.", "xy", "xay"}
	rels := []string{"", "sub", "sub/deeper", "x", ".hidden"}
	for _, p := range patterns {
		if !doublestar.ValidatePattern(p) {
			t.Fatalf("pattern %q is not valid", p)
		}
		for _, baseOnly := range []bool{true, false} {
			if baseOnly && strings.Contains(p, "/") {
				continue // the walk matches such a pattern against paths
			}
			match := globMatcher(p, baseOnly)
			for _, rel := range rels {
				for _, name := range names {
					subject := name
					if !baseOnly {
						subject = joinRel(rel, name)
					}
					want := doublestar.MatchUnvalidated(p, subject)
					if got := match(rel, name); got != want {
						t.Errorf("pattern %q (baseOnly %v) on %q: got %v, doublestar says %v", p, baseOnly, subject, got, want)
					}
				}
			}
		}
	}
}
