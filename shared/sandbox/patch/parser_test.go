package patch

import (
	"errors"
	"reflect"
	"testing"
)

func TestParse(t *testing.T) {
	t.Parallel()
	got, err := Parse(" \n*** Begin Patch \n*** Add File: path/add.py\n+abc\n+\n*** Delete File: path/delete.py\n\n" +
		"*** Update File: path/update.py\n*** Move to: path/update2.py\n@@ def f():\n-    pass\n+    return 123\n" +
		"@@ -10,2 +10,2 @@ class C\n@@ def g():\n \n-x\n*** End of File\n*** End Patch\n\n")
	if err != nil {
		t.Fatal(err)
	}
	want := &Patch{Ops: []Op{
		{Kind: Add, Path: "path/add.py", Lines: []string{"abc", ""}, Line: 3},
		{Kind: Delete, Path: "path/delete.py", Line: 6},
		{Kind: Update, Path: "path/update.py", MoveTo: "path/update2.py", Line: 8, Chunks: []Chunk{
			{Context: []string{"def f():"}, Lines: []DiffLine{{'-', "    pass"}, {'+', "    return 123"}}, Line: 10},
			{Context: []string{"class C", "def g():"}, Lines: []DiffLine{{' ', ""}, {'-', "x"}}, EOF: true, Line: 13},
		}},
	}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("Parse = %+v\nwant %+v", got, want)
	}
}

func TestParseFirstChunkWithoutHeader(t *testing.T) {
	t.Parallel()
	got, err := Parse("*** Begin Patch\n*** Update File: file2.py\n import foo\n+bar\n*** End Patch")
	if err != nil {
		t.Fatal(err)
	}
	c := got.Ops[0].Chunks[0]
	if !reflect.DeepEqual(c.Old(), []string{"import foo"}) || !reflect.DeepEqual(c.New(), []string{"import foo", "bar"}) {
		t.Fatalf("chunk old %q new %q", c.Old(), c.New())
	}
}

func TestParseWrappers(t *testing.T) {
	t.Parallel()
	inner := "*** Begin Patch\n*** Add File: a\n+x\n*** End Patch"
	for _, in := range []string{
		"<<'EOF'\n" + inner + "\nEOF\n",
		"<<EOF\n" + inner + "\nEOF",
		"<<\"PATCH\"\n" + inner + "\nPATCH",
		"apply_patch <<'EOF'\n" + inner + "\nEOF\n",
		"```\n" + inner + "\n```",
		"```diff\n" + inner + "\n```\n",
		"\t" + inner + "\n\n",
	} {
		p, err := Parse(in)
		if err != nil || len(p.Ops) != 1 || p.Ops[0].Path != "a" {
			t.Errorf("Parse(%q) = %+v, %v; want one Add of a", in, p, err)
		}
	}
	for _, in := range []string{
		"<<'EOF'\n" + inner + "\nEND\n", // delimiters differ
		"<<'EOF\n" + inner + "\nEOF\n",  // unbalanced quote
	} {
		if _, err := Parse(in); err == nil {
			t.Errorf("Parse(%q) succeeded, want an error", in)
		}
	}
}

func TestParseErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   string
		line int
		msg  string
	}{
		{"bad", 0, "The first line of the patch must be '*** Begin Patch'"},
		{"*** Begin Patch\nbad", 0, "The last line of the patch must be '*** End Patch'"},
		{"*** Begin Patch\n*** Update File: test.py\n*** End Patch", 2, "Update file hunk for path 'test.py' is empty"},
		{"*** Begin Patch\n*** Update File: a\n@@\n*** End Patch", 3, "Update hunk does not contain any lines"},
		{"*** Begin Patch\n*** Update File: a\n@@\n*** End of File\n*** End Patch", 4, "Update hunk does not contain any lines"},
		{"*** Begin Patch\n*** Update File: a\n-x\n*** End of File\nfoo\n*** End Patch", 5, "Expected update hunk to start with a @@ context marker, got: 'foo'"},
		{"*** Begin Patch\n*** Add File: \n*** End Patch", 2, "Add File needs a path"},
	}
	for _, tt := range tests {
		_, err := Parse(tt.in)
		var pe *ParseError
		if !errors.As(err, &pe) || pe.Line != tt.line || pe.Msg != tt.msg {
			t.Errorf("Parse(%q) error = %v, want line %d %q", tt.in, err, tt.line, tt.msg)
		}
	}
}

func TestSeekPassOrder(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name           string
		lines, pattern []string
		start          int
		eof            bool
		want           int
	}{
		{"exact", []string{"foo", "bar", "baz"}, []string{"bar", "baz"}, 0, false, 1},
		{"exact beats an earlier fuzzy match", []string{"bar ", "x", "bar"}, []string{"bar"}, 0, false, 2},
		{"trailing whitespace", []string{"foo   ", "bar\t\t"}, []string{"foo", "bar"}, 0, false, 0},
		{"surrounding whitespace", []string{"    foo   ", "   bar\t"}, []string{"foo", "bar"}, 0, false, 0},
		{"unicode punctuation", []string{"a – b", "“x”"}, []string{"a - b", `"x"`}, 0, false, 0},
		{"from start", []string{"a", "b", "a"}, []string{"a"}, 1, false, 2},
		{"eof only at the end", []string{"a", "b", "a", "c"}, []string{"a"}, 0, true, -1},
		{"eof", []string{"a", "b", "a"}, []string{"a"}, 0, true, 2},
		{"longer than input", []string{"one"}, []string{"too", "many"}, 0, false, -1},
		{"empty pattern", []string{"one"}, nil, 0, false, 0},
	}
	for _, tt := range tests {
		if got := seek(tt.lines, tt.pattern, tt.start, tt.eof); got != tt.want {
			t.Errorf("%s: seek = %d, want %d", tt.name, got, tt.want)
		}
	}
}

func TestApplyChunksKeepsLineEndings(t *testing.T) {
	t.Parallel()
	// A mixed file: untouched lines keep their own ending; new lines take
	// the usual one (CRLF here).
	in := "a\r\nb\nc\r\nd\r\n"
	p, err := Parse("*** Begin Patch\n*** Update File: f\n@@\n-c\n+C\n+C2\n*** End Patch")
	if err != nil {
		t.Fatal(err)
	}
	got, err := applyChunks([]byte(in), p.Ops[0].Chunks, "f")
	if err != nil {
		t.Fatal(err)
	}
	if want := "a\r\nb\nC\r\nC2\r\nd\r\n"; string(got) != want {
		t.Fatalf("applyChunks = %q, want %q", got, want)
	}
}

func TestRoundTrip(t *testing.T) {
	t.Parallel()
	in := "*** Begin Patch\n*** Update File: a\n@@ -1,2 +1,2 @@ -3 +3 @@ x\n@@  spaced\n \n-x\n+y\n*** End of File\n*** End Patch"
	p, err := Parse(in)
	if err != nil {
		t.Fatal(err)
	}
	again, err := Parse(p.String())
	if err != nil {
		t.Fatalf("Parse(String()) error %v for\n%s", err, p.String())
	}
	if !sameOps(p, again) {
		t.Fatalf("round trip changed the patch:\n%+v\n%+v", p, again)
	}
}
