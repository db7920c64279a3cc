package search

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
)

// BraveEndpoint is the Brave Search API's web search endpoint.
const BraveEndpoint = "https://api.search.brave.com/res/v1/web/search"

// Brave is the Brave Search API (https://api-dashboard.search.brave.com):
// GET Endpoint?q=…&count=N with the X-Subscription-Token header. It asks
// for at most 20 results, the API's maximum for one request.
type Brave struct {
	Endpoint string // BraveEndpoint if empty
	APIKey   string
	// KeyFrom gives the key when APIKey is empty: a secret read on the
	// first search.
	KeyFrom func(context.Context) (string, error)
	Client  *http.Client
}

var _ Backend = (*Brave)(nil)

// Name returns "Brave Search".
func (b *Brave) Name() string { return "Brave Search" }

type braveResponse struct {
	Web struct {
		Results []struct {
			Title         string   `json:"title"`
			URL           string   `json:"url"`
			Description   string   `json:"description"`
			ExtraSnippets []string `json:"extra_snippets"`
		} `json:"results"`
	} `json:"web"`
}

// Search runs query. Errors never contain the API key.
func (b *Brave) Search(ctx context.Context, query string, max int) ([]Result, error) {
	key := b.APIKey
	if key == "" && b.KeyFrom != nil {
		k, err := b.KeyFrom(ctx)
		if err != nil {
			return nil, fmt.Errorf("%s: read the API key: %w", b.Name(), err)
		}
		key = k
	}
	endpoint := b.Endpoint
	if endpoint == "" {
		endpoint = BraveEndpoint
	}
	u, err := url.Parse(endpoint)
	if err != nil {
		return nil, fmt.Errorf("brave endpoint: %w", err)
	}
	q := u.Query()
	q.Set("q", query)
	q.Set("count", strconv.Itoa(min(max, 20)))
	q.Set("text_decorations", "false")
	u.RawQuery = q.Encode()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, fmt.Errorf("brave request: %w", err)
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set("X-Subscription-Token", key)
	resp, err := b.Client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", b.Name(), err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, statusError(b.Name(), resp, key)
	}
	body, err := readBody(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("%s: read response: %w", b.Name(), err)
	}
	var br braveResponse
	if err := json.Unmarshal(body, &br); err != nil {
		return nil, fmt.Errorf("%s: response is not the expected JSON: %w", b.Name(), err)
	}
	var out []Result
	for _, r := range br.Web.Results {
		if len(out) == max {
			break
		}
		if r.URL == "" {
			continue
		}
		out = append(out, Result{Title: plainText(r.Title), URL: r.URL, Snippet: plainText(r.Description)})
	}
	return out, nil
}
