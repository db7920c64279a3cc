// Package search holds websearch's backends: the Brave Search API and a
// SearXNG instance's JSON API, behind one small interface. Which one a
// deployment uses is a setting (Config), not a fleet's choice.
//
// Backends do no egress checking of their own: they send through the
// *http.Client they are given, which the web package builds on its egress
// policy (public addresses, ports 80 and 443).
package search

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"golang.org/x/net/html"
)

// Result is one hit: a title, a link and a snippet, all plain text.
type Result struct {
	Title   string
	URL     string
	Snippet string
}

// Backend runs a web search. Search returns at most max results; an empty
// slice with a nil error means the search ran and found nothing. Anything
// that keeps the search from running (refused, unreachable, quota, a
// response it cannot read, every engine failing) is an error, never an
// empty result. Implementations are safe for concurrent use.
type Backend interface {
	// Name is a short name for messages, such as "Brave Search".
	Name() string
	Search(ctx context.Context, query string, max int) ([]Result, error)
}

// Kinds of backend that Config.Kind names.
const (
	KindBrave   = "brave"
	KindSearXNG = "searxng"
)

// Config is the deployment's search setting.
type Config struct {
	// Kind is KindBrave, KindSearXNG, or "" for no search backend.
	Kind string
	// URL is the SearXNG instance's base URL (required for SearXNG) or
	// the Brave API endpoint (optional; BraveEndpoint by default).
	URL string
	// APIKey is the Brave Search subscription token, or KeyFrom gives it
	// when a search first needs it (a secret, read once).
	APIKey  string
	KeyFrom func(context.Context) (string, error)
}

// New returns the backend cfg names, sending through client. It returns
// (nil, nil) when cfg.Kind is empty, and an error for an unknown kind or a
// missing setting.
func New(cfg Config, client *http.Client) (Backend, error) {
	switch cfg.Kind {
	case "":
		return nil, nil
	case KindBrave:
		if cfg.APIKey == "" && cfg.KeyFrom == nil {
			return nil, errors.New("search backend brave: an API key is required")
		}
		return &Brave{Endpoint: cfg.URL, APIKey: cfg.APIKey, KeyFrom: cfg.KeyFrom, Client: client}, nil
	case KindSearXNG:
		if cfg.URL == "" {
			return nil, errors.New("search backend searxng: the instance URL is required")
		}
		return &SearXNG{BaseURL: cfg.URL, Client: client}, nil
	default:
		return nil, fmt.Errorf("search backend %q: want %q or %q", cfg.Kind, KindBrave, KindSearXNG)
	}
}

// maxResponse caps what a backend reads from its API: 4 MB, as webfetch.
const maxResponse = 4 << 20

// StatusError is a search API's answer with a status other than 200.
type StatusError struct {
	Backend string
	Status  int
	Detail  string // a short, cleaned excerpt of the body
}

func (e *StatusError) Error() string {
	msg := fmt.Sprintf("%s answered HTTP %d %s", e.Backend, e.Status, http.StatusText(e.Status))
	if e.Detail != "" {
		msg += ": " + e.Detail
	}
	return msg
}

// readBody reads at most maxResponse bytes and fails if there was more.
func readBody(r io.Reader) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(r, maxResponse+1))
	if err != nil {
		return nil, err
	}
	if len(b) > maxResponse {
		return nil, errors.New("response larger than 4 MB")
	}
	return b, nil
}

func statusError(backend string, resp *http.Response, hide string) error {
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	detail := plainText(string(b))
	if hide != "" {
		detail = strings.ReplaceAll(detail, hide, "[api key]")
	}
	if len(detail) > 200 {
		detail = detail[:200] + "…"
	}
	return &StatusError{Backend: backend, Status: resp.StatusCode, Detail: detail}
}

// plainText returns the text of an HTML fragment (search APIs mark matches
// with <strong> and escape entities), with white space collapsed.
func plainText(s string) string {
	if !strings.ContainsAny(s, "<&") {
		return strings.Join(strings.Fields(s), " ")
	}
	z := html.NewTokenizer(strings.NewReader(s))
	var b strings.Builder
	for {
		switch z.Next() {
		case html.ErrorToken:
			return strings.Join(strings.Fields(b.String()), " ")
		case html.TextToken:
			b.Write(z.Text())
		case html.StartTagToken, html.EndTagToken, html.SelfClosingTagToken:
			if name, _ := z.TagName(); string(name) == "br" || string(name) == "p" {
				b.WriteByte(' ')
			}
		}
	}
}
