package browser

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/chromedp/chromedp"

	"github.com/agentsfleet/agentsfleet/shared/sandbox"
	"github.com/agentsfleet/agentsfleet/shared/tool"
	"github.com/agentsfleet/agentsfleet/shared/web/fence"
	"github.com/agentsfleet/agentsfleet/shared/web/spec"
)

// Open is browser_open: it opens a page in the sandbox's browser, starting
// the browser on the first call, and answers the page's status, address,
// title and text. It also closes the browser (CloseAgent, Close), for the
// server, which closes the tools that hold something. Safe for concurrent
// use: calls take turns.
type Open struct {
	*tool.Def[sandbox.BrowserOpenArgs]
	b *Browser
}

var _ tool.Tool = (*Open)(nil)

// maxText is the most of a page's text browser_open answers: webfetch's
// cap, said as webfetch says it.
const maxText = spec.MaxPageBytes

// Run opens args.URL. A page that does not answer 2xx, cannot be reached
// or does not finish loading in the call's time is an error result; a
// browser that cannot start is a Go error (a broken sandbox).
func (t *Open) Run(ctx context.Context, raw json.RawMessage) (tool.Result, error) {
	args, res, ok := t.Decode(raw)
	if !ok {
		return res, nil
	}
	u, msg := checkURL(args.URL)
	if msg != "" {
		return tool.Errorf("browser_open: %s", msg), nil
	}
	w, msg := parseWait(args.Wait)
	if msg != "" {
		return tool.Errorf("browser_open: %s", msg), nil
	}
	ctx, timeout, done, res, ok := t.b.turn(ctx, "browser_open")
	if !ok {
		return res, nil
	}
	defer done()
	inst, note, err := t.b.running(ctx)
	switch {
	case errors.Is(err, errClosed):
		return tool.Errorf("browser_open: %v", err), nil
	case err != nil && ctx.Err() != nil:
		return stopped(ctx, "browser_open", "while the browser started", timeout), nil
	case err != nil:
		return tool.Result{}, err
	}
	_, mark := inst.proxy.RefusalsSince(0)
	n, err := t.b.navigate(ctx, inst, u.String(), w)
	if err != nil && !errors.Is(err, errNavTimeout) {
		return tool.Result{}, err
	}
	refusals, _ := inst.proxy.RefusalsSince(mark)
	out := n.answer(u, refusals, timeout, errors.Is(err, errNavTimeout))
	out.Egress = t.b.egress(inst, "browser_open")
	if !out.IsError || n.committed {
		t.b.setOpened()
	}
	if note != "" {
		out.Output = note + "\n" + out.Output
	}
	return out, nil
}

// stopped is the error result of a call whose context ended before it got
// to the page: its timeout, or its caller gone.
func stopped(ctx context.Context, name, when string, timeout time.Duration) tool.Result {
	if errors.Is(context.Cause(ctx), errTimeout) {
		return tool.Errorf("%s: the tool timeout (%s) passed %s", name, seconds(timeout), when)
	}
	return tool.Errorf("%s: stopped %s: %v", name, when, context.Cause(ctx))
}

// checkURL parses an address browser_open may open: http or https, with
// a host.
func checkURL(raw string) (*url.URL, string) {
	raw = strings.TrimSpace(raw)
	if raw == "" {
		return nil, "url is empty: give an http or https address"
	}
	u, err := url.Parse(raw)
	if err != nil {
		return nil, fmt.Sprintf("url %.200q is not a valid address: %v", raw, err)
	}
	scheme := strings.ToLower(u.Scheme)
	if scheme != "http" && scheme != "https" {
		if u.Scheme == "" {
			return nil, fmt.Sprintf("url %.200q has no scheme: give an http or https address, such as https://%s", raw, raw)
		}
		return nil, fmt.Sprintf("url %.200q has the scheme %s: the browser opens http and https only", raw, u.Scheme)
	}
	if u.Hostname() == "" {
		return nil, fmt.Sprintf("url %.200q names no host", raw)
	}
	return u, ""
}

// wait is what browser_open waits for: a lifecycle event of the page, or a
// visible element.
type wait struct {
	event    string // the DevTools lifecycle event's name
	selector string // else: the CSS selector of an element that must be visible
}

// parseWait reads browser_open's wait argument.
func parseWait(s string) (wait, string) {
	switch strings.TrimSpace(s) {
	case "", "load":
		return wait{event: "load"}, ""
	case "domcontentloaded":
		return wait{event: "DOMContentLoaded"}, ""
	case "networkidle":
		return wait{event: "networkIdle"}, ""
	}
	if len(s) > 1000 {
		return wait{}, "wait is longer than 1000 characters: give load, domcontentloaded, networkidle or a CSS selector"
	}
	return wait{selector: s}, ""
}

func (w wait) String() string {
	if w.selector != "" {
		return fmt.Sprintf("a visible element matching %q", w.selector)
	}
	return map[string]string{"load": "the load event", "DOMContentLoaded": "the DOMContentLoaded event", "networkIdle": "the network to be idle"}[w.event]
}

// text is what browser_open reads from a loaded page.
type text struct {
	Title string `json:"title"`
	URL   string `json:"url"`
	Text  string `json:"text"`
	Cut   bool   `json:"cut"`
}

// readJS reads the page's title, address and readable text, the text cut
// at maxText characters in the page (the bytes are cut again in Go).
var readJS = fmt.Sprintf(`(() => {
	const t = document.body ? String(document.body.innerText) : "";
	return {title: String(document.title), url: String(location.href), text: t.length > %[1]d ? t.slice(0, %[1]d) : t, cut: t.length > %[1]d};
})()`, maxText)

// answer is browser_open's result for the navigation n to u: refusals are
// the proxy's during the call, timedOut says the call's time ran out.
func (n *navigation) answer(u *url.URL, refusals []refusal, timeout time.Duration, timedOut bool) tool.Result {
	if r, ok := n.refusedBy(u, refusals); ok {
		return tool.Errorf("browser_open: %s is not reachable from the sandbox's browser: %s", fence.URL(u), r)
	}
	final := n.finalURL(u)
	if n.failed != "" && !timedOut {
		switch {
		case !n.committed:
			return tool.Errorf("browser_open: %s could not be opened: %s", fence.URL(u), n.failed)
		case n.status >= 200 && n.status <= 299:
			// The document came, then the load broke off (a crash).
			return tool.Errorf("browser_open: %s stopped loading: %s", final, n.failed)
		}
		// A status Chromium shows its own error page for: said below.
	}
	if timedOut {
		var b strings.Builder
		fmt.Fprintf(&b, "browser_open: the page did not finish loading within %s (waiting for %s); its loading was stopped.\n", seconds(timeout), n.wait)
		fmt.Fprintf(&b, "URL: %s\n", final)
		if n.status != 0 {
			fmt.Fprintf(&b, "status: %d %s\n", n.status, http.StatusText(int(n.status)))
		}
		if n.committed && n.read.Title != "" && n.read.URL == n.respURL {
			b.WriteString(fence.Wrap(final, "title: "+n.read.Title))
		}
		return tool.Errorf("%s", strings.TrimRight(b.String(), "\n"))
	}
	if n.missing != "" {
		return tool.Errorf("browser_open: %s", n.missing)
	}
	if why, ok := n.unreachable(); ok {
		return tool.Errorf("browser_open: %s is not reachable from the sandbox's browser: %s", final, why)
	}
	title := n.read.Title
	if title == "" {
		title = "(none)"
	}
	body := "title: " + title + "\n\n" + cutText(n.read.Text)
	if n.read.Cut || len(n.read.Text) > maxText {
		body += fence.CutNote(spec.PageCap)
	}
	head := fmt.Sprintf("URL: %s\nstatus: %d %s\n", final, n.status, http.StatusText(int(n.status)))
	out := head + fence.Wrap(final, body)
	if n.status < 200 || n.status > 299 {
		return tool.Result{Output: fmt.Sprintf("browser_open: HTTP %d %s\n%s", n.status, http.StatusText(int(n.status)), out), IsError: true}
	}
	return tool.Text(out)
}

// unreachable is the proxy's answer when it could not reach the document's
// host (a name that does not resolve, a refused connection): the page is
// then the proxy's own, whose words are those of package proxy for the
// document's host:port exactly, so a page cannot pass its words for them.
func (n *navigation) unreachable() (string, bool) {
	if n.status != http.StatusBadGateway && n.status != http.StatusGatewayTimeout {
		return "", false
	}
	d := destOf(n.respURL)
	if d.host == "" {
		return "", false
	}
	host := net.JoinHostPort(d.host, d.port)
	got := strings.TrimSpace(n.read.Text)
	for _, why := range []string{host + " does not resolve", host + " refused the connection", "timed out reaching " + host, "cannot reach " + host} {
		if got == "agentsfleet browser proxy: "+why {
			return why, true
		}
	}
	return "", false
}

// cutText cuts s to at most maxText bytes, on a character boundary.
func cutText(s string) string {
	if len(s) <= maxText {
		return s
	}
	s = s[:maxText]
	// A character the cut split decodes as one RuneError byte at the end.
	for range utf8.UTFMax - 1 {
		if r, size := utf8.DecodeLastRuneInString(s); r != utf8.RuneError || size != 1 {
			break
		}
		s = s[:len(s)-1]
	}
	return s
}

// finalURL is the page's address after redirects, without credentials:
// what the page says once the document came, else where the document's
// request went, else u.
func (n *navigation) finalURL(u *url.URL) string {
	read := n.read.URL
	if !n.committed {
		read = "" // the page still shows the previous document
	}
	for _, s := range []string{read, n.respURL, n.reqURL} {
		if p, err := url.Parse(s); err == nil && s != "" && s != "about:blank" {
			return fence.URL(p)
		}
	}
	return fence.URL(u)
}

// stopLoad stops the page's loading after a call ran out of time, and
// reads what the page shows by then, within a few seconds of its own.
func stopLoad(tab context.Context, n *navigation) {
	ctx, cancel := quick(tab)
	defer cancel()
	_ = chromedp.Do(ctx, chromedp.Stop())
	if r, err := chromedp.Run(ctx, chromedp.Evaluate[text](readJS)); err == nil {
		n.read = r
	}
}

// seconds writes a timeout as the fleet sets it: "120 s".
func seconds(d time.Duration) string {
	return strconv.FormatFloat(d.Seconds(), 'f', -1, 64) + " s"
}

// CloseAgent closes the browser when agent started it (Browser.CloseAgent).
func (t *Open) CloseAgent(agent string) int { return t.b.CloseAgent(agent) }

// Close closes the browser with the server (Browser.Close).
func (t *Open) Close() error { return t.b.Close() }
