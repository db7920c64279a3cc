package web

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strings"

	"github.com/agentsfleet/agentsfleet/shared/secret"
	"github.com/agentsfleet/agentsfleet/shared/tool"
	"github.com/agentsfleet/agentsfleet/shared/web/fence"
	"github.com/agentsfleet/agentsfleet/shared/web/search"
	"github.com/agentsfleet/agentsfleet/shared/web/spec"
)

const (
	notNothing = "A failed search does not mean that nothing exists: try again, rephrase the query, or fetch a page you know with webfetch."
)

// websearch asks the deployment's search backend. The backend's HTTP client
// is the public egress transport (public addresses, ports 80 and 443, at
// most maxRedirects redirects) and reads at most maxPageBytes. A failure is
// an error Result that says it does not mean nothing exists — never an
// empty result list.
type websearch struct {
	*tool.Def[spec.WebSearchArgs]
	net     *network
	backend search.Backend // nil: not configured
}

var _ tool.Tool = (*websearch)(nil)

func newWebSearch(n *network, b search.Backend) *websearch {
	return &websearch{Def: spec.WebSearch, net: n, backend: b}
}

func (t *websearch) Run(ctx context.Context, raw json.RawMessage) (tool.Result, error) {
	args, res, ok := t.Decode(raw)
	if !ok {
		return res, nil
	}
	inv := invocationFrom(ctx)
	query := strings.TrimSpace(args.Query)
	if secret.HasRef(query) {
		return tool.Errorf("websearch: refused: secret references are not filled in search queries. %s", notNothing), nil
	}
	if t.backend == nil {
		return tool.Errorf("websearch: no search backend is configured for this deployment. %s", notNothing), nil
	}
	ctx, cancel := context.WithTimeout(ctx, t.net.timeout)
	defer cancel()
	results, err := t.backend.Search(ctx, query, args.MaxResults)
	if err != nil {
		t.net.log.Warn("web search failed", "backend", t.backend.Name(), "run_id", inv.RunID, "error", err)
		msg := err.Error()
		var ue *url.Error
		if errors.As(err, &ue) || ctx.Err() != nil {
			// The transport's errors start with the request URL; say
			// which backend and why instead.
			msg = t.backend.Name() + ": " + t.net.describe(ctx, err)
		}
		return tool.Errorf("websearch failed: %s. %s", msg, notNothing), nil
	}
	t.net.log.Info("web search", "backend", t.backend.Name(), "run_id", inv.RunID, "results", len(results))
	if len(results) == 0 {
		return tool.Text(fmt.Sprintf("The search ran and %s found no results for %q. Try other words.", t.backend.Name(), query)), nil
	}
	var b strings.Builder
	for i, r := range results {
		if i > 0 {
			b.WriteString("\n\n")
		}
		fmt.Fprintf(&b, "%d. %s\n   %s", i+1, oneLine(r.Title), oneLine(r.URL))
		if s := oneLine(r.Snippet); s != "" {
			fmt.Fprintf(&b, "\n   %s", s)
		}
	}
	return tool.Text(fence.Wrap("websearch: "+query, b.String())), nil
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }
