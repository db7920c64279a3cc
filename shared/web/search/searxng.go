package search

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
)

// SearXNG is a SearXNG instance's JSON API: GET BaseURL/search?q=…&format=json.
// The instance must list "json" in its search.formats setting; one that
// does not answers 403, which Search reports as such. A page holds about
// ten results, so Search reads up to three pages to fill max.
type SearXNG struct {
	BaseURL string
	Client  *http.Client
}

var _ Backend = (*SearXNG)(nil)

// Name returns "SearXNG".
func (s *SearXNG) Name() string { return "SearXNG" }

type searxResponse struct {
	Results []struct {
		Title   string `json:"title"`
		URL     string `json:"url"`
		Content string `json:"content"`
	} `json:"results"`
	// Each entry is [engine, reason]; read loosely, as versions differ.
	Unresponsive []any `json:"unresponsive_engines"`
}

// maxPages bounds how many pages one search reads.
const maxPages = 3

// Search runs query. When the first page is empty and the instance reports
// engines that did not answer, it returns an error: that is a failed
// search, not an empty one.
func (s *SearXNG) Search(ctx context.Context, query string, max int) ([]Result, error) {
	var out []Result
	for page := 1; page <= maxPages && len(out) < max; page++ {
		sr, err := s.page(ctx, query, page)
		if err != nil {
			if page > 1 {
				break // keep what earlier pages gave
			}
			return nil, err
		}
		if page == 1 && len(sr.Results) == 0 && len(sr.Unresponsive) > 0 {
			var why []string
			for _, e := range sr.Unresponsive {
				if parts, ok := e.([]any); ok {
					var ss []string
					for _, p := range parts {
						ss = append(ss, fmt.Sprint(p))
					}
					why = append(why, strings.Join(ss, ": "))
				} else {
					why = append(why, fmt.Sprint(e))
				}
			}
			return nil, fmt.Errorf("%s: no engine answered (%s)", s.Name(), strings.Join(why, "; "))
		}
		added := 0
		for _, r := range sr.Results {
			if len(out) == max {
				break
			}
			if r.URL == "" || slices.ContainsFunc(out, func(o Result) bool { return o.URL == r.URL }) {
				continue
			}
			out = append(out, Result{Title: plainText(r.Title), URL: r.URL, Snippet: plainText(r.Content)})
			added++
		}
		if added == 0 {
			break
		}
	}
	return out, nil
}

func (s *SearXNG) page(ctx context.Context, query string, page int) (*searxResponse, error) {
	u, err := url.Parse(strings.TrimRight(s.BaseURL, "/") + "/search")
	if err != nil {
		return nil, fmt.Errorf("searxng URL: %w", err)
	}
	q := url.Values{"q": {query}, "format": {"json"}, "pageno": {strconv.Itoa(page)}}
	u.RawQuery = q.Encode()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, fmt.Errorf("searxng request: %w", err)
	}
	req.Header.Set("Accept", "application/json")
	resp, err := s.Client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", s.Name(), err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		err := statusError(s.Name(), resp, "")
		if resp.StatusCode == http.StatusForbidden {
			err = fmt.Errorf("%w (is \"json\" in the instance's search.formats?)", err)
		}
		return nil, err
	}
	body, err := readBody(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("%s: read response: %w", s.Name(), err)
	}
	var sr searxResponse
	if err := json.Unmarshal(body, &sr); err != nil {
		return nil, fmt.Errorf("%s: response is not the expected JSON: %w", s.Name(), err)
	}
	return &sr, nil
}
