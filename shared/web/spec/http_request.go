package spec

import (
	_ "embed"
	"encoding/json"
	"net/http"
	"strings"

	"github.com/agentsfleet/agentsfleet/shared/tool"
)

//go:embed http_request.txt
var httpRequestDescription string

// HTTPRequestArgs are http_request's arguments.
type HTTPRequestArgs struct {
	Method  string            `json:"method,omitempty"`
	URL     string            `json:"url" description:"http or https URL on a host in the fleet's network host list; may contain «secret:NAME» outside the host"`
	Headers map[string]string `json:"headers,omitempty" description:"header values may contain «secret:NAME»"`
	Body    json.RawMessage   `json:"body,omitempty" description:"a string sent as is, or a JSON value sent as JSON; may contain «secret:NAME»"`
}

// httpMethods are the methods http_request sends; the first is the default.
var httpMethods = []string{http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete, http.MethodOptions}

// HTTPRequest is http_request's contract: sends an HTTP request to a host
// on the fleet's network host list, filling secret references.
var HTTPRequest = tool.Define[HTTPRequestArgs](tool.About{
	Name:        "http_request",
	RunsIn:      tool.InWebtools,
	Scope:       tool.ScopeNetwork,
	Summary:     "Sends an HTTP request to a host on the network host list, filling secret references",
	Description: httpRequestDescription,
	Rules: tool.Rules{
		// Any case and surrounding white space, as models write it.
		"method": tool.OneOf(httpMethods...).FoldCase().Default(httpMethods[0]),
	},
	Values: figures(map[string]any{"OtherMethods": orList(httpMethods[1:])}),
})

// orList formats values as "a, b or c".
func orList(values []string) string {
	if len(values) < 2 {
		return strings.Join(values, "")
	}
	return strings.Join(values[:len(values)-1], ", ") + " or " + values[len(values)-1]
}
