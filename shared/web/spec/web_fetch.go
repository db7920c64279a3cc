package spec

import (
	_ "embed"

	"github.com/agentsfleet/agentsfleet/shared/tool"
)

//go:embed web_fetch.txt
var webFetchTLSDescription string

// WebFetchTLSArgs are web_fetch's arguments.
type WebFetchTLSArgs struct {
	URL string `json:"url" description:"https URL on a host in the fleet's network host list"`
}

// WebFetchTLS is web_fetch's contract: fetches an HTTPS page from a host on
// the fleet's network host list.
var WebFetchTLS = tool.Define[WebFetchTLSArgs](tool.About{
	Name:        "web_fetch",
	RunsIn:      tool.InWebtools,
	Scope:       tool.ScopeNetwork,
	Summary:     "Fetches an HTTPS page from a host on the network host list",
	Description: webFetchTLSDescription,
	Values:      figures(nil),
})
