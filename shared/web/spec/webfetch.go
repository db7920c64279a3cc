package spec

import (
	_ "embed"

	"github.com/agentsfleet/agentsfleet/shared/tool"
)

//go:embed webfetch.txt
var webfetchDescription string

// WebFetchArgs are webfetch's arguments.
type WebFetchArgs struct {
	URL string `json:"url" description:"http or https URL of a public page"`
}

// WebFetch is webfetch's contract: fetches a public web page as text.
var WebFetch = tool.Define[WebFetchArgs](tool.About{
	Name:        "webfetch",
	RunsIn:      tool.InWebtools,
	Scope:       tool.ScopeSearch,
	Builtin:     true,
	Summary:     "Fetches a public web page as text",
	Description: webfetchDescription,
	Values:      figures(nil),
})
