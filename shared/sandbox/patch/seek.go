package patch

import (
	"strings"
	"unicode"
)

// The matching passes, strictest first, as Codex's seek_sequence runs them:
// exact; ignoring trailing whitespace; ignoring surrounding whitespace; and
// with Unicode punctuation normalised to ASCII (dashes, quotes, odd spaces).
var passes = []func(string) string{
	func(s string) string { return s },
	func(s string) string { return strings.TrimRightFunc(s, unicode.IsSpace) },
	strings.TrimSpace,
	normalise,
}

// seek finds pattern in lines at or after start and returns the index of
// its first line, or -1. Each pass scans the whole range before the next,
// looser one is tried, so an exact match later in the file wins over a
// fuzzy one earlier. When eof is true the pattern must end the file.
func seek(lines, pattern []string, start int, eof bool) int {
	if len(pattern) == 0 {
		return start
	}
	if len(pattern) > len(lines) {
		return -1
	}
	last := len(lines) - len(pattern)
	if eof {
		start = last
	}
	for k, norm := range passes {
		want := make([]string, len(pattern))
		for i, p := range pattern {
			want[i] = norm(p)
		}
		have := lines
		if k > 0 {
			have = make([]string, len(lines))
			for i := start; i < len(lines); i++ {
				have[i] = norm(lines[i])
			}
		}
	scan:
		for i := start; i <= last; i++ {
			for j := range want {
				if have[i+j] != want[j] {
					continue scan
				}
			}
			return i
		}
	}
	return -1
}

// normalise trims s and maps typographic punctuation to ASCII: the code
// points are those of Codex's seek_sequence.
func normalise(s string) string {
	return strings.Map(func(r rune) rune {
		switch r {
		case '\u2010', '\u2011', '\u2012', '\u2013', '\u2014', '\u2015', '\u2212':
			return '-'
		case '\u2018', '\u2019', '\u201A', '\u201B':
			return '\''
		case '\u201C', '\u201D', '\u201E', '\u201F':
			return '"'
		case '\u00A0', '\u2002', '\u2003', '\u2004', '\u2005', '\u2006', '\u2007',
			'\u2008', '\u2009', '\u200A', '\u202F', '\u205F', '\u3000':
			return ' '
		}
		return r
	}, strings.TrimSpace(s))
}
