package main

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// TestUsageNamesEveryFlag keeps the usage text and the commands' flags
// together: each command's line in usage names every flag its flag set
// defines, and no flag it does not define. The flags are read from this
// package's source, where each command makes its flag.FlagSet.
func TestUsageNamesEveryFlag(t *testing.T) {
	t.Parallel()
	defined := commandFlags(t)
	for _, cmd := range []string{"dev", "table create"} {
		if len(defined[cmd]) == 0 {
			t.Errorf("found no flags for %q in the source; the test no longer finds them", cmd)
		}
	}
	for cmd, flags := range defined {
		line, ok := usageLine(cmd)
		if !ok {
			t.Errorf("usage has no line for %q", cmd)
			continue
		}
		for _, f := range flags {
			if !slices.Contains(usageFlags(line), f) {
				t.Errorf("usage for %q does not name --%s:\n%s", cmd, f, line)
			}
		}
		for _, f := range usageFlags(line) {
			if !slices.Contains(flags, f) {
				t.Errorf("usage for %q names --%s, which %s does not define (it defines %v):\n%s", cmd, f, cmd, flags, line)
			}
		}
	}
}

// usageLine is the line of usage that starts with cmd, indented by two.
func usageLine(cmd string) (string, bool) {
	for _, line := range strings.Split(usage, "\n") {
		rest, ok := strings.CutPrefix(line, "  "+cmd)
		if ok && (rest == "" || rest[0] == ' ') {
			return line, true
		}
	}
	return "", false
}

var flagInUsage = regexp.MustCompile(`(?:--([a-z][a-z0-9-]*)|(?:^|[\s\[])-([a-z])\b)`)

// usageFlags returns the flags line names as --NAME (or -X for a
// one-letter flag), without the dashes.
func usageFlags(line string) []string {
	var out []string
	for _, m := range flagInUsage.FindAllStringSubmatch(line, -1) {
		out = append(out, m[1]+m[2])
	}
	return out
}

// flagNameArg is, for each flag.FlagSet method that defines a flag, the
// position of the flag's name among its arguments.
var flagNameArg = map[string]int{
	"Bool": 0, "BoolFunc": 0, "Duration": 0, "Float64": 0, "Func": 0, "Int": 0, "Int64": 0,
	"String": 0, "Uint": 0, "Uint64": 0,
	"BoolVar": 1, "DurationVar": 1, "Float64Var": 1, "IntVar": 1, "Int64Var": 1,
	"StringVar": 1, "TextVar": 1, "Uint64Var": 1, "UintVar": 1, "Var": 1,
}

// commandFlags parses the package's non-test files and returns, for every
// flag.NewFlagSet("NAME", …) a function assigns to a variable, the names of
// the flags that function defines on it.
func commandFlags(t *testing.T) map[string][]string {
	t.Helper()
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	out := map[string][]string{}
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		file, err := parser.ParseFile(fset, name, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		for _, decl := range file.Decls {
			fn, ok := decl.(*ast.FuncDecl)
			if !ok || fn.Body == nil {
				continue
			}
			sets := map[string]string{} // variable → command, in this function
			ast.Inspect(fn.Body, func(n ast.Node) bool {
				switch n := n.(type) {
				case *ast.AssignStmt:
					if len(n.Lhs) == 1 && len(n.Rhs) == 1 {
						noteFlagSet(sets, n.Lhs[0], n.Rhs[0])
					}
				case *ast.ValueSpec:
					if len(n.Names) == 1 && len(n.Values) == 1 {
						noteFlagSet(sets, n.Names[0], n.Values[0])
					}
				case *ast.CallExpr:
					sel, ok := n.Fun.(*ast.SelectorExpr)
					if !ok {
						break
					}
					recv, ok := sel.X.(*ast.Ident)
					if !ok {
						break
					}
					cmd, isSet := sets[recv.Name]
					i, defines := flagNameArg[sel.Sel.Name]
					if !isSet || !defines || i >= len(n.Args) {
						break
					}
					flag, ok := stringLit(n.Args[i])
					if !ok {
						t.Errorf("%s: a flag of %q whose name is not a string literal; this test cannot check it", fset.Position(n.Pos()), cmd)
						break
					}
					out[cmd] = append(out[cmd], flag)
				}
				return true
			})
		}
	}
	return out
}

// noteFlagSet records in sets that the variable lhs holds the flag set of a
// command, when rhs is flag.NewFlagSet("COMMAND", …).
func noteFlagSet(sets map[string]string, lhs, rhs ast.Expr) {
	id, ok := lhs.(*ast.Ident)
	if !ok {
		return
	}
	call, ok := rhs.(*ast.CallExpr)
	if !ok || len(call.Args) == 0 {
		return
	}
	sel, ok := call.Fun.(*ast.SelectorExpr)
	if !ok || sel.Sel.Name != "NewFlagSet" {
		return
	}
	if pkg, ok := sel.X.(*ast.Ident); !ok || pkg.Name != "flag" {
		return
	}
	if cmd, ok := stringLit(call.Args[0]); ok {
		sets[id.Name] = cmd
	}
}

func stringLit(e ast.Expr) (string, bool) {
	lit, ok := e.(*ast.BasicLit)
	if !ok || lit.Kind != token.STRING {
		return "", false
	}
	s, err := strconv.Unquote(lit.Value)
	return s, err == nil
}
