package sandbox

import (
	_ "embed"

	"github.com/agentsfleet/agentsfleet/shared/limit"
	"github.com/agentsfleet/agentsfleet/shared/tool"
)

//go:embed read.txt
var readText string

// The limits of read, from the built-in tools page.
const (
	ReadDefaultLimit = limit.ReadDefaultLines // lines returned when limit is not given
	ReadMaxLimit     = limit.ReadMaxLines     // a larger limit reads this many lines
	ReadMaxLineChars = limit.ReadLineChars    // characters kept of one line
)

// ReadArgs are read's arguments.
type ReadArgs struct {
	Path   string `json:"path"`
	Offset int    `json:"offset,omitempty"`
	Limit  int    `json:"limit,omitempty"`
}

// Read is read's contract: reads a text file as numbered lines.
var Read = tool.DefineIn[ReadArgs](&contracts, tool.About{
	Name:        "read",
	RunsIn:      tool.InSandbox,
	Scope:       tool.ScopeFiles,
	Builtin:     true,
	Summary:     "Reads a text file as numbered lines",
	Description: readText,
	Rules: tool.Rules{
		"offset": tool.Min(1).Default(1),
		"limit":  tool.Min(1).Max(ReadMaxLimit).Clamp().Default(ReadDefaultLimit),
	},
	Values: map[string]any{"MaxLineChars": ReadMaxLineChars},
})
