// Package toolbox joins the catalog of tool names (shared/fleet: where each
// tool runs and the scope it needs) with every tool's contract (shared/tool
// specs from the sandbox, web and control packages), so that the runner and
// the CLI see one list: name, place, scope, description and schema.
//
// The catalog stays the one list of names. Its tests fail when a package's
// specs and the catalog disagree, in either direction. The package is
// cgo-free.
package toolbox

import (
	"fmt"

	"github.com/agentsfleet/agentsfleet/shared/fleet"
	"github.com/agentsfleet/agentsfleet/shared/runner/control"
	"github.com/agentsfleet/agentsfleet/shared/sandbox"
	"github.com/agentsfleet/agentsfleet/shared/tool"
	"github.com/agentsfleet/agentsfleet/shared/web"
)

// Entry is one tool: its catalog record and its contract.
type Entry struct {
	fleet.ToolInfo
	Spec tool.Spec
}

// specs returns every contract, by the places whose packages define them.
func specs() map[fleet.Location][]tool.Spec {
	return map[fleet.Location][]tool.Spec{
		fleet.InSandbox:  sandbox.Specs(), // with the display tools, which sandboxd serves
		fleet.InWebtools: web.Specs(),
		fleet.InRunner:   control.Specs(),
	}
}

// byName is every spec by name, with the place its package says it runs.
var byName, byNameErr = func() (map[string]placed, error) {
	m := map[string]placed{}
	for loc, list := range specs() {
		for _, s := range list {
			if _, dup := m[s.Name()]; dup {
				return nil, fmt.Errorf("two contracts for tool %q", s.Name())
			}
			m[s.Name()] = placed{s, loc}
		}
	}
	return m, nil
}()

type placed struct {
	spec tool.Spec
	loc  fleet.Location
}

// All returns every tool of the catalog, sorted by name, each with its
// contract. It fails when the catalog and the contracts disagree: a name in
// one and not the other, or a tool whose catalog place is not where its
// contract's package runs it (display tools run in the sandbox).
func All() ([]Entry, error) {
	if byNameErr != nil {
		return nil, byNameErr
	}
	var out []Entry
	seen := map[string]bool{}
	for _, info := range fleet.Tools() {
		p, ok := byName[info.Name]
		if !ok {
			return nil, fmt.Errorf("the catalog names tool %q, which has no contract", info.Name)
		}
		runs := info.RunsIn
		if runs == fleet.InDisplay {
			runs = fleet.InSandbox
		}
		if runs != p.loc {
			return nil, fmt.Errorf("the catalog runs tool %q in the %s, its contract in the %s", info.Name, info.RunsIn, p.loc)
		}
		seen[info.Name] = true
		out = append(out, Entry{ToolInfo: info, Spec: p.spec})
	}
	for name := range byName {
		if !seen[name] {
			return nil, fmt.Errorf("tool %q has a contract but is not in the catalog", name)
		}
	}
	return out, nil
}

// Lookup returns the tool called name.
func Lookup(name string) (Entry, bool) {
	info, ok := fleet.LookupTool(name)
	if !ok || byNameErr != nil {
		return Entry{}, false
	}
	p, ok := byName[name]
	if !ok {
		return Entry{}, false
	}
	return Entry{ToolInfo: info, Spec: p.spec}, true
}
