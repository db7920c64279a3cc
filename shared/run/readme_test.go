package run_test

import (
	"bufio"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// endedHeading introduces README.md's table of run.ended codes.
const endedHeading = "A run that fails says why in its `run.ended` event"

// TestREADMEListsTheCodes checks README.md's table of run.ended codes and
// this package's Code constants against each other, both ways: a code the
// README promises exists, and a code the runner can write is documented.
func TestREADMEListsTheCodes(t *testing.T) {
	t.Parallel()
	listed := readmeCodes(t, filepath.Join("..", "..", "README.md"))
	defined := codeConstants(t)
	if len(listed) == 0 || len(defined) == 0 {
		t.Fatalf("README lists %v, the package defines %v; want both non-empty", listed, defined)
	}
	for _, c := range listed {
		if _, ok := defined[c]; !ok {
			t.Errorf("README.md lists the run.ended code %q, which no Code constant of package run defines", c)
		}
	}
	for c, name := range defined {
		if !slices.Contains(listed, c) {
			t.Errorf("%s = %q is not in README.md's table of run.ended codes", name, c)
		}
	}
}

// readmeCodes returns the first column of the table after endedHeading.
func readmeCodes(t *testing.T, path string) []string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var codes []string
	found, inTable := false, false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		switch {
		case !found:
			found = strings.HasPrefix(line, endedHeading)
		case strings.HasPrefix(line, "|"):
			inTable = true
			cells := strings.Split(strings.Trim(line, "|"), "|")
			cell := strings.TrimSpace(cells[0])
			if cell == "code" || strings.Trim(cell, "-: ") == "" {
				continue // the header and the rule under it
			}
			code := strings.Trim(cell, "`")
			if code == cell || code == "" {
				t.Fatalf("README.md: run.ended table row %q: the code is not written as `code`", line)
			}
			codes = append(codes, code)
		case inTable:
			return codes // the line after the table
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if !found {
		t.Fatalf("README.md has no line starting %q", endedHeading)
	}
	return codes
}

// codeConstants returns the string constants named Code… that the
// package's own (non-test) files declare, value to name.
func codeConstants(t *testing.T) map[string]string {
	t.Helper()
	fset := token.NewFileSet()
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, decl := range f.Decls {
			gd, ok := decl.(*ast.GenDecl)
			if !ok || gd.Tok != token.CONST {
				continue
			}
			for _, spec := range gd.Specs {
				vs := spec.(*ast.ValueSpec)
				for i, id := range vs.Names {
					if !strings.HasPrefix(id.Name, "Code") {
						continue
					}
					var lit *ast.BasicLit
					if i < len(vs.Values) {
						lit, _ = vs.Values[i].(*ast.BasicLit)
					}
					if lit == nil || lit.Kind != token.STRING {
						t.Fatalf("%s: %s is not a string literal", name, id.Name)
					}
					v, err := strconv.Unquote(lit.Value)
					if err != nil {
						t.Fatal(err)
					}
					out[v] = id.Name
				}
			}
		}
	}
	return out
}
