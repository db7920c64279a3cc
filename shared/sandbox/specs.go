package sandbox

import "github.com/agentsfleet/agentsfleet/shared/tool"

// contracts gathers the contracts of this package as each is defined
// (tool.DefineIn): a tool's contract file is the one place that lists it.
var contracts tool.Set

// Specs returns the contracts of every tool sandboxd serves, sorted by
// name: the file, shell and session tools and apply_patch, and the display
// tools. Each carries where it runs (tool.InSandbox, or tool.InDisplay) and
// its scope, from which the catalog (shared/toolbox) is made. The runner
// offers these to the model and validates calls against them before it
// sends them to a sandbox; sandboxd's own tools embed the same values, one
// implementation for each (server.Tools, whose tests fail on a contract
// without one).
func Specs() []tool.Spec { return contracts.Specs() }
