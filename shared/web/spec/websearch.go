package spec

import (
	_ "embed"

	"github.com/agentsfleet/agentsfleet/shared/limit"
	"github.com/agentsfleet/agentsfleet/shared/tool"
)

//go:embed websearch.txt
var websearchDescription string

// The limits of websearch, from the built-in tools page.
const (
	DefaultSearchResults = limit.WebSearchDefault
	MaxSearchResults     = limit.WebSearchMax
)

// WebSearchArgs are websearch's arguments.
type WebSearchArgs struct {
	Query      string `json:"query" description:"what to search for"`
	MaxResults int    `json:"max_results,omitempty" description:"how many results"`
}

// WebSearch is websearch's contract: searches the web.
var WebSearch = tool.Define[WebSearchArgs](tool.About{
	Name:        "websearch",
	RunsIn:      tool.InWebtools,
	Scope:       tool.ScopeSearch,
	Builtin:     true,
	Summary:     "Searches the web",
	Description: websearchDescription,
	Rules: tool.Rules{
		"query": tool.NotBlank(),
		// Refused, not clamped: the model learns the limit instead of
		// silently getting fewer results than it asked for.
		"max_results": tool.Between(1, MaxSearchResults).Default(DefaultSearchResults),
	},
	Values: figures(nil),
})
