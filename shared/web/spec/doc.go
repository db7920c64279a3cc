// Package spec holds the contracts of the five web tools — webfetch,
// websearch, web_fetch, http_request and pushover: each one's arguments,
// the rules they are checked against, its model-facing description (a .txt
// file beside it, its figures filled from the limits here), and where it
// runs and the scope it needs (the webtools λ, tool.InWebtools).
//
// It holds no implementation: package web runs these tools, embedding these
// specs. The catalog of tools (shared/toolbox) and so shared/fleet read the
// contracts from here, which is why they link none of web's HTML stack or
// its AWS SDK clients. It imports only shared/tool and the standard
// library.
package spec
