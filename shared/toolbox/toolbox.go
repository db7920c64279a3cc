// Package toolbox is the catalog of agentsfleet's tools, made from their
// contracts: every tool.Spec of the three contract packages — shared/sandbox
// (sandboxd's tools and the display tools), shared/web/spec (the web tools)
// and shared/runner/control (the control tools) — each carrying its name,
// where it runs, the scope a Definition that allows it needs, and its
// summary (tool.About). shared/fleet checks a Definition's tool names and
// scopes against it; the runner and the CLI read each tool's description
// and schema from it.
//
// So adding a tool is its contract (tool.DefineIn, with RunsIn and Scope),
// its description (the .txt file the contract embeds) and its
// implementation, registered where its place runs tools (sandboxd's
// server.Tools, web.NewService, control.Tools). Nothing here names a tool.
//
// The package links the contracts and nothing that runs them: no HTML
// stack, no model, no agent loop, no AWS SDK client, no cgo, so that every
// λ that reads a Definition can link it; its tests check that.
package toolbox

import (
	"fmt"
	"slices"
	"strings"

	"github.com/agentsfleet/agentsfleet/shared/runner/control"
	"github.com/agentsfleet/agentsfleet/shared/sandbox"
	"github.com/agentsfleet/agentsfleet/shared/tool"
	webspec "github.com/agentsfleet/agentsfleet/shared/web/spec"
)

// Entry is one tool: its catalog record and its contract.
type Entry struct {
	tool.Info
	Spec tool.Spec
}

// source is one contract package: its specs, and the places its tools may
// say they run in.
type source struct {
	pkg    string
	specs  []tool.Spec
	places []tool.Location
}

// sources are the contract packages. A tool's own contract says where it
// runs; its package must be the one that place serves tools from.
func sources() []source {
	return []source{
		{"shared/sandbox", sandbox.Specs(), []tool.Location{tool.InSandbox, tool.InDisplay}}, // sandboxd serves the display tools
		{"shared/web/spec", webspec.Specs(), []tool.Location{tool.InWebtools}},
		{"shared/runner/control", control.Specs(), []tool.Location{tool.InRunner}},
	}
}

// catalog is every tool, sorted by name; byName indexes it.
var catalog, byName = mustBuild(sources())

func mustBuild(srcs []source) ([]Entry, map[string]int) {
	entries, err := build(srcs)
	if err != nil {
		panic("toolbox: " + err.Error()) // a contract is wrong: any test finds it
	}
	index := make(map[string]int, len(entries))
	for i, e := range entries {
		index[e.Name] = i
	}
	return entries, index
}

// build makes the catalog from srcs. It fails on a contract that does not
// say where it runs, one whose place is not its package's, and two
// contracts of one name.
func build(srcs []source) ([]Entry, error) {
	var out []Entry
	from := map[string]string{}
	for _, src := range srcs {
		for _, s := range src.specs {
			info := s.Info()
			switch {
			case info.Name != s.Name():
				return nil, fmt.Errorf("%s: the contract of %q is named %q in its Info", src.pkg, s.Name(), info.Name)
			case info.RunsIn == "":
				return nil, fmt.Errorf("%s: the contract of %q does not say where it runs (tool.About.RunsIn)", src.pkg, s.Name())
			case !slices.Contains(src.places, info.RunsIn):
				return nil, fmt.Errorf("%s: the contract of %q runs it in the %s, which does not serve tools from %s", src.pkg, s.Name(), info.RunsIn, src.pkg)
			case from[s.Name()] != "":
				return nil, fmt.Errorf("two contracts for tool %q, in %s and %s", s.Name(), from[s.Name()], src.pkg)
			}
			from[s.Name()] = src.pkg
			out = append(out, Entry{Info: info, Spec: s})
		}
	}
	slices.SortFunc(out, func(a, b Entry) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// All returns every tool, sorted by name, each with its contract. The
// caller owns the slice.
func All() []Entry { return slices.Clone(catalog) }

// Names returns the name of every tool, sorted.
func Names() []string {
	names := make([]string, len(catalog))
	for i, e := range catalog {
		names[i] = e.Name
	}
	return names
}

// Lookup returns the tool called name. Names are case-sensitive.
func Lookup(name string) (Entry, bool) {
	i, ok := byName[name]
	if !ok {
		return Entry{}, false
	}
	return catalog[i], true
}
