package sandbox

import (
	_ "embed"

	"github.com/agentsfleet/agentsfleet/shared/tool"
)

//go:embed apply_patch.txt
var applyPatchText string

// ApplyPatchArgs are apply_patch's arguments: Codex's JSON form of the
// tool, whose one argument holds the patch.
type ApplyPatchArgs struct {
	Input string `json:"input" description:"The entire contents of the apply_patch command: *** Begin Patch … *** End Patch."`
}

// ApplyPatch is apply_patch's contract: applies a *** Begin Patch patch to
// the writable roots, all or nothing.
var ApplyPatch = tool.DefineIn[ApplyPatchArgs](&contracts, tool.About{
	Name:        "apply_patch",
	RunsIn:      tool.InSandbox,
	Scope:       tool.ScopeWrite,
	Summary:     "Applies a *** Begin Patch patch to the writable roots, all or nothing",
	Description: applyPatchText,
	Rules:       tool.Rules{"input": tool.NotBlank()},
})
