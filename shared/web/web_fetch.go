package web

import (
	"context"
	_ "embed"
	"encoding/json"
)

//go:embed web_fetch.txt
var webFetchTLSDescription string

// webFetchTLS is the fleet tool web_fetch: like webfetch, but https only,
// the host must be on the fleet's network host list (any port), and the
// response cap is 1 MiB. The address policy (public only) still applies.
type webFetchTLS struct{ net *network }

func newWebFetchTLS(n *network) *webFetchTLS { return &webFetchTLS{net: n} }

func (*webFetchTLS) Name() string        { return ToolWebFetchTLS }
func (*webFetchTLS) Description() string { return webFetchTLSDescription }
func (*webFetchTLS) Schema() json.RawMessage {
	return json.RawMessage(`{"type":"object","properties":{"url":{"type":"string","description":"https URL on a host in the fleet's network host list"}},"required":["url"],"additionalProperties":false}`)
}

func (t *webFetchTLS) Run(ctx context.Context, inv *Invocation, raw json.RawMessage) (Result, error) {
	var args webfetchArgs
	if err := decodeArgs(raw, &args); err != nil {
		return errorResult("web_fetch: %v", err), nil
	}
	r := route{tool: ToolWebFetchTLS, httpsOnly: true, listed: true, hosts: inv.Hosts, maxRedirects: maxRedirects}
	p, res := t.net.fetchPage(ctx, r, t.net.listed, args.URL, maxRespBytes)
	if res != nil {
		return *res, nil
	}
	return p.result(ToolWebFetchTLS, "1 MiB"), nil
}
