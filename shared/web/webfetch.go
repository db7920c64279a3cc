package web

import (
	"context"
	_ "embed"
	"encoding/json"
)

//go:embed webfetch.txt
var webfetchDescription string

// webfetch fetches a public page: http or https, public addresses on ports
// 80 and 443 (the public transport's egress policy), at most 5 redirects,
// 4 MB, DefaultTimeout, HTML reduced to text, fenced as untrusted.
type webfetch struct{ net *network }

type webfetchArgs struct {
	URL string `json:"url"`
}

func newWebFetch(n *network) *webfetch { return &webfetch{net: n} }

func (*webfetch) Name() string        { return ToolWebFetch }
func (*webfetch) Description() string { return webfetchDescription }
func (*webfetch) Schema() json.RawMessage {
	return json.RawMessage(`{"type":"object","properties":{"url":{"type":"string","description":"http or https URL of a public page"}},"required":["url"],"additionalProperties":false}`)
}

func (t *webfetch) Run(ctx context.Context, _ *Invocation, raw json.RawMessage) (Result, error) {
	var args webfetchArgs
	if err := decodeArgs(raw, &args); err != nil {
		return errorResult("webfetch: %v", err), nil
	}
	r := route{tool: ToolWebFetch, maxRedirects: maxRedirects}
	p, res := t.net.fetchPage(ctx, r, t.net.public, args.URL, maxPageBytes)
	if res != nil {
		return *res, nil
	}
	return p.result(ToolWebFetch, "4 MB"), nil
}
