package sandbox

import "github.com/agentsfleet/agentsfleet/shared/tool"

// Specs returns the contracts of every tool sandboxd serves, sorted by
// name: the file, shell and session tools and apply_patch, then the
// display tools. The runner offers these to the model and validates calls
// against them before it sends them to a sandbox; sandboxd's own tools embed
// the same values.
func Specs() []tool.Spec {
	return []tool.Spec{ApplyPatch, Bash, BrowserOpen, ExecCommand, Glob, Grep, List, Read, Screenshot, WriteStdin}
}
