package web

import (
	"context"
	"fmt"
	"mime"
	"net/http"
	"net/url"

	"github.com/agentsfleet/agentsfleet/shared/secret"
	"github.com/agentsfleet/agentsfleet/shared/tool"
	"github.com/agentsfleet/agentsfleet/shared/web/fence"
)

// page is a fetched web page reduced to text.
type page struct {
	url    *url.URL // where the content came from, after redirects
	status int
	text   string
	cut    bool // the body was longer than the cap
}

// fetchPage GETs rawURL along r through rt, reads at most max bytes and
// reduces them to text. A refusal, a failure or content that is not text
// comes back as an error Result (res non-nil); a page, whatever its HTTP
// status, as p. rawURL is the tool's decoded url argument, never empty.
func (n *network) fetchPage(ctx context.Context, r route, rt http.RoundTripper, rawURL string, max int64) (p *page, res *tool.Result) {
	fail := func(format string, args ...any) (*page, *tool.Result) {
		e := tool.Errorf("%s %s: %s", r.tool, rawURL, fmt.Sprintf(format, args...))
		return nil, &e
	}
	if secret.HasRef(rawURL) {
		return fail("refused: %s does not fill secret references; only http_request does, for hosts on the fleet's network host list", r.tool)
	}
	u, err := url.Parse(rawURL)
	if err != nil || !u.IsAbs() {
		return fail("not an absolute http or https URL")
	}
	if err := r.check(ctx, http.MethodGet, u); err != nil {
		n.log.Warn("web request refused", "tool", r.tool, "host", u.Hostname(), "reason", err.Error())
		return fail("%v", err)
	}
	ctx, cancel := context.WithTimeout(ctx, n.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return fail("not a valid request URL")
	}
	req.Header.Set("User-Agent", userAgent)
	req.Header.Set("Accept", "text/html,application/xhtml+xml,text/plain;q=0.9,application/json;q=0.8,*/*;q=0.5")
	client := &http.Client{Transport: rt, CheckRedirect: r.checkRedirect(nil)}
	resp, err := client.Do(req)
	if err != nil {
		return fail("%s", n.describe(ctx, err))
	}
	defer resp.Body.Close()
	body, cut, err := readScreened(ctx, resp.Body, max, invocationFrom(ctx).Secrets)
	if err != nil {
		return fail("reading the response: %s", n.describe(ctx, err))
	}
	n.log.Info("web request", "tool", r.tool, "host", resp.Request.URL.Hostname(), "status", resp.StatusCode, "bytes", len(body))
	ct := resp.Header.Get("Content-Type")
	text, ok := pageText(body, ct, resp.Request.URL)
	if !ok {
		mt, _, _ := mime.ParseMediaType(ct)
		if mt == "" {
			mt = "unknown"
		}
		return fail("the response is %s (HTTP %d), not text or HTML; %s reads text and HTML only", mt, resp.StatusCode, r.tool)
	}
	return &page{url: resp.Request.URL, status: resp.StatusCode, text: text, cut: cut}, nil
}

// result is the page of the tool called name fenced as untrusted data,
// capText saying the cap it was read under. Any status other than 2xx makes
// it an error result, with the status said outside the fence.
func (p *page) result(name string, capText string) tool.Result {
	text := p.text
	if p.cut {
		text += fence.CutNote(capText)
	}
	out := fence.Wrap(fence.URL(p.url), text)
	if p.status < 200 || p.status > 299 {
		return tool.Result{Output: fmt.Sprintf("%s: HTTP %d %s\n%s", name, p.status, http.StatusText(p.status), out), IsError: true}
	}
	return tool.Text(out)
}
