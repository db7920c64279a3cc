package web

import (
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strings"

	"github.com/agentsfleet/agentsfleet/shared/secret"
	"github.com/agentsfleet/agentsfleet/shared/web/search"
)

//go:embed websearch.txt
var websearchDescription string

// websearch asks the deployment's search backend. The backend's HTTP client
// is the public egress transport (public addresses, ports 80 and 443, at
// most 5 redirects) and reads at most 4 MB. A failure is an error Result
// that says it does not mean nothing exists — never an empty result list.
type websearch struct {
	net     *network
	backend search.Backend // nil: not configured
}

type websearchArgs struct {
	Query      string `json:"query"`
	MaxResults *int   `json:"max_results"`
}

const (
	defaultSearchResults = 8
	maxSearchResults     = 20
	notNothing           = "A failed search does not mean that nothing exists: try again, rephrase the query, or fetch a page you know with webfetch."
)

func newWebSearch(n *network, b search.Backend) *websearch { return &websearch{net: n, backend: b} }

func (*websearch) Name() string        { return ToolWebSearch }
func (*websearch) Description() string { return websearchDescription }
func (*websearch) Schema() json.RawMessage {
	return json.RawMessage(`{"type":"object","properties":{"query":{"type":"string","description":"what to search for"},"max_results":{"type":"integer","minimum":1,"maximum":20,"default":8,"description":"how many results"}},"required":["query"],"additionalProperties":false}`)
}

func (t *websearch) Run(ctx context.Context, inv *Invocation, raw json.RawMessage) (Result, error) {
	var args websearchArgs
	if err := decodeArgs(raw, &args); err != nil {
		return errorResult("websearch: %v", err), nil
	}
	query := strings.TrimSpace(args.Query)
	if query == "" {
		return errorResult("websearch: argument \"query\" is required"), nil
	}
	max := defaultSearchResults
	if args.MaxResults != nil {
		max = *args.MaxResults
		if max < 1 || max > maxSearchResults {
			return errorResult("websearch: max_results must be between 1 and %d, not %d", maxSearchResults, max), nil
		}
	}
	if secret.HasRef(query) {
		return errorResult("websearch: refused: secret references are not filled in search queries. %s", notNothing), nil
	}
	if t.backend == nil {
		return errorResult("websearch: no search backend is configured for this deployment. %s", notNothing), nil
	}
	ctx, cancel := context.WithTimeout(ctx, t.net.timeout)
	defer cancel()
	results, err := t.backend.Search(ctx, query, max)
	if err != nil {
		t.net.log.Warn("web search failed", "backend", t.backend.Name(), "run_id", inv.RunID, "error", err)
		msg := err.Error()
		var ue *url.Error
		if errors.As(err, &ue) || ctx.Err() != nil {
			// The transport's errors start with the request URL; say
			// which backend and why instead.
			msg = t.backend.Name() + ": " + t.net.describe(ctx, err)
		}
		return errorResult("websearch failed: %s. %s", msg, notNothing), nil
	}
	t.net.log.Info("web search", "backend", t.backend.Name(), "run_id", inv.RunID, "results", len(results))
	if len(results) == 0 {
		return Result{Output: fmt.Sprintf("The search ran and %s found no results for %q. Try other words.", t.backend.Name(), query)}, nil
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
	return Result{Output: fence("websearch: "+query, b.String())}, nil
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }
