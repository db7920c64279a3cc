package sandbox

import (
	_ "embed"

	"github.com/agentsfleet/agentsfleet/shared/tool"
)

//go:embed bash.txt
var bashText string

// The output cap of bash: the first BashOutputHead and the last
// BashOutputTail bytes are kept.
const (
	BashOutputHead = 10_000
	BashOutputTail = 20_000
)

// BashArgs are bash's arguments.
type BashArgs struct {
	Command string `json:"command"`
}

// Bash is bash's contract: runs a shell command as a confined process.
var Bash = tool.DefineIn[BashArgs](&contracts, tool.About{
	Name:        "bash",
	RunsIn:      tool.InSandbox,
	Scope:       tool.ScopeExecute,
	Builtin:     true,
	Summary:     "Runs a shell command as a confined process",
	Description: bashText,
	Rules:       tool.Rules{"command": tool.NotBlank()},
	Values: map[string]any{
		"OutputCap":  BashOutputHead + BashOutputTail,
		"OutputHead": BashOutputHead,
		"OutputTail": BashOutputTail,
	},
})
