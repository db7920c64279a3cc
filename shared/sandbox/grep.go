package sandbox

import (
	_ "embed"

	"github.com/agentsfleet/agentsfleet/shared/limit"
	"github.com/agentsfleet/agentsfleet/shared/tool"
)

//go:embed grep.txt
var grepText string

// The limits of grep, from the built-in tools page.
const (
	GrepDefaultResults = limit.GrepDefaultResults
	GrepMaxResults     = limit.GrepMaxResults
	GrepMaxColumns     = limit.GrepColumns // characters kept of each path:line:text line
)

// GrepArgs are grep's arguments.
type GrepArgs struct {
	Pattern    string `json:"pattern"`
	Path       string `json:"path,omitempty"`
	Glob       string `json:"glob,omitempty"`
	IgnoreCase bool   `json:"ignore_case,omitempty"`
	MaxResults int    `json:"max_results,omitempty"`
}

// Grep is grep's contract: searches file contents with a regular expression.
var Grep = tool.DefineIn[GrepArgs](&contracts, tool.About{
	Name:        "grep",
	RunsIn:      tool.InSandbox,
	Scope:       tool.ScopeSearch,
	Builtin:     true,
	Summary:     "Searches file contents with a regular expression",
	Description: grepText,
	Rules: tool.Rules{
		"ignore_case": tool.Default(false),
		"max_results": tool.Min(1).Max(GrepMaxResults).Clamp().Default(GrepDefaultResults),
	},
	Values: map[string]any{"MaxColumns": GrepMaxColumns},
})
