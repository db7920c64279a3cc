package sandbox

import (
	_ "embed"

	"github.com/agentsfleet/agentsfleet/shared/limit"
	"github.com/agentsfleet/agentsfleet/shared/tool"
)

//go:embed glob.txt
var globText string

// The limits of glob, from the built-in tools page.
const (
	GlobDefaultResults = limit.GlobDefaultResults
	GlobMaxResults     = limit.GlobMaxResults
)

// GlobArgs are glob's arguments.
type GlobArgs struct {
	Pattern    string `json:"pattern"`
	Path       string `json:"path,omitempty"`
	MaxResults int    `json:"max_results,omitempty"`
}

// Glob is glob's contract: finds files by path pattern.
var Glob = tool.DefineIn[GlobArgs](&contracts, tool.About{
	Name:        "glob",
	RunsIn:      tool.InSandbox,
	Scope:       tool.ScopeFiles,
	Builtin:     true,
	Summary:     "Finds files by path pattern",
	Description: globText,
	Rules: tool.Rules{
		"max_results": tool.Min(1).Max(GlobMaxResults).Clamp().Default(GlobDefaultResults),
	},
})
