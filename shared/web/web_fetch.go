package web

import (
	"context"
	"encoding/json"

	"github.com/agentsfleet/agentsfleet/shared/tool"
	"github.com/agentsfleet/agentsfleet/shared/web/spec"
	"github.com/agentsfleet/agentsfleet/shared/web/wire"
)

// webFetchTLS is the fleet tool web_fetch: like webfetch, but https only,
// the host must be on the invocation's host list (any port), and the
// response cap is maxRespBytes. The address policy (public only) still
// applies.
type webFetchTLS struct {
	*tool.Def[spec.WebFetchTLSArgs]
	net *network
}

var _ tool.Tool = (*webFetchTLS)(nil)

func newWebFetchTLS(n *network) *webFetchTLS { return &webFetchTLS{Def: spec.WebFetchTLS, net: n} }

func (t *webFetchTLS) Run(ctx context.Context, raw json.RawMessage) (tool.Result, error) {
	args, res, ok := t.Decode(raw)
	if !ok {
		return res, nil
	}
	inv := invocationFrom(ctx)
	r := route{tool: wire.ToolWebFetchTLS, httpsOnly: true, listed: true, hosts: inv.Hosts, maxRedirects: maxRedirects}
	p, failed := t.net.fetchPage(ctx, r, t.net.listed, args.URL, maxRespBytes)
	if failed != nil {
		return *failed, nil
	}
	return p.result(wire.ToolWebFetchTLS, respCap), nil
}
