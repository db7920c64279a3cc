package web

import (
	"context"
	"encoding/json"

	"github.com/agentsfleet/agentsfleet/shared/tool"
	"github.com/agentsfleet/agentsfleet/shared/web/spec"
	"github.com/agentsfleet/agentsfleet/shared/web/wire"
)

// webfetch fetches a public page: http or https, public addresses on ports
// 80 and 443 (the public transport's egress policy), at most maxRedirects
// redirects, maxPageBytes, DefaultTimeout, HTML reduced to text, fenced as
// untrusted. It reads no invocation: no host list, no secrets.
type webfetch struct {
	*tool.Def[spec.WebFetchArgs]
	net *network
}

var _ tool.Tool = (*webfetch)(nil)

func newWebFetch(n *network) *webfetch { return &webfetch{Def: spec.WebFetch, net: n} }

func (t *webfetch) Run(ctx context.Context, raw json.RawMessage) (tool.Result, error) {
	args, res, ok := t.Decode(raw)
	if !ok {
		return res, nil
	}
	r := route{tool: wire.ToolWebFetch, maxRedirects: maxRedirects}
	p, failed := t.net.fetchPage(ctx, r, t.net.public, args.URL, maxPageBytes)
	if failed != nil {
		return *failed, nil
	}
	return p.result(wire.ToolWebFetch, pageCap), nil
}
