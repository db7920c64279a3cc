package browser

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"github.com/agentsfleet/agentsfleet/shared/sandbox/browser/proxy"
)

// refusal is a request the egress proxy refused.
type refusal = proxy.Refusal

// errNavTimeout is navigate's error when the call's time ran out before
// the page reached what the call waits for; the navigation holds what is
// known.
var errNavTimeout = errors.New("browser: the page did not finish loading in time")

// crashedWhileLoading is why a navigation failed when the page's renderer
// crashed under it (a page can crash it: memory, a renderer bug).
const crashedWhileLoading = "the page crashed the browser's renderer while it loaded (the next browser_open starts a new browser)"

// pollEvery is how often a wait for a selector looks at the page.
const pollEvery = 100 * time.Millisecond

// navigation is what one browser_open learns of its navigation from the
// page's events: the main document's request (through redirects), its
// response and how far the page got.
type navigation struct {
	wait wait

	mu        sync.Mutex
	frame     cdp.FrameID           // the page's main frame
	loader    cdp.LoaderID          // the navigation's: its first document request's, then Page.navigate's
	seen      map[cdp.LoaderID]bool // the main frame's document loaders since the call began
	reqID     network.RequestID
	reqURL    string // the document's last request, after redirects
	respURL   string
	status    int64
	committed bool   // the document's response arrived
	failed    string // why the document failed to load
	reached   map[string]bool
	changed   chan struct{} // a token when something above changed

	read    text   // what the page showed at the end
	missing string // a wait that cannot be met (a selector that is not CSS)
}

// event takes one of the page's events.
func (n *navigation) event(ev any) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.handle(ev)
}

// known sets the loader Page.navigate answered, when the events had not
// shown it yet (or showed another navigation's, one the page started
// before). A loader the events did show is left to them: the page may
// already have moved on from it (a script's redirect that ran before
// Page.navigate's answer was read), and its load event never comes.
func (n *navigation) known(loader cdp.LoaderID) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.loader != loader && !n.seen[loader] {
		n.loader, n.reqID, n.reqURL, n.respURL, n.status, n.committed = loader, "", "", "", 0, false
		clear(n.reached)
	}
}

// handle updates n from ev; n.mu is held.
func (n *navigation) handle(ev any) {
	switch ev := ev.(type) {
	case *network.EventRequestWillBeSent:
		if ev.Type != network.ResourceTypeDocument || ev.FrameID != n.frame {
			return
		}
		n.seen[ev.LoaderID] = true
		if ev.LoaderID != n.loader {
			// The first document request of the main frame since the
			// call began is its navigation's (Page.navigate answers only
			// once the document commits, after its redirects); a later
			// one is the page moving on by itself (a script's or a meta
			// refresh's redirect), which the call follows.
			n.loader, n.reqID, n.respURL, n.status, n.committed, n.failed = ev.LoaderID, "", "", 0, false, ""
			clear(n.reached)
		}
		n.reqID = ev.RequestID
		n.reqURL = ev.Request.URL + ev.Request.URLFragment
	case *network.EventResponseReceived:
		if ev.RequestID != n.reqID || ev.Response == nil {
			return
		}
		n.status, n.respURL, n.committed = ev.Response.Status, ev.Response.URL, true
	case *network.EventLoadingFailed:
		if ev.RequestID != n.reqID || n.failed != "" {
			return
		}
		n.failed = ev.ErrorText
		if ev.BlockedReason != "" {
			n.failed += " (blocked: " + string(ev.BlockedReason) + ")"
		}
	case *page.EventLifecycleEvent:
		if ev.LoaderID != n.loader || ev.FrameID != n.frame {
			return
		}
		n.reached[ev.Name] = true
	default:
		return
	}
	select {
	case n.changed <- struct{}{}:
	default:
	}
}

// state is whether the waited-for event came, and why the load failed.
func (n *navigation) state() (reached bool, failed string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.reached[n.wait.event], n.failed
}

// navigate opens target on inst's page and waits for w within ctx. Its
// error is errNavTimeout when ctx ended first (the load is stopped then,
// and the navigation holds what is known), or a broken browser.
func (b *Browser) navigate(ctx context.Context, inst *instance, target string, w wait) (*navigation, error) {
	n := &navigation{wait: w, reached: map[string]bool{}, seen: map[cdp.LoaderID]bool{}, changed: make(chan struct{}, 1)}
	cctx, release := callContext(ctx, inst.proc.tab)
	defer release()
	tree, err := chromedp.Run(cctx, func(ctx context.Context, t *chromedp.Target) (page.GetFrameTreeResult, error) {
		return cdp.Call(ctx, t, page.GetFrameTree, cdp.Empty{})
	})
	switch {
	case err != nil && ctx.Err() != nil:
		return n.ended(ctx, inst)
	case err != nil:
		return nil, fmt.Errorf("browser: Page.getFrameTree: %w", err)
	case tree.FrameTree == nil || tree.FrameTree.Frame == nil:
		return nil, errors.New("browser: Page.getFrameTree: the page has no main frame")
	}
	n.frame = tree.FrameTree.Frame.ID
	stop := inst.proc.watch(n.event)
	defer stop()

	res, err := chromedp.Run(cctx, func(ctx context.Context, t *chromedp.Target) (page.NavigateResult, error) {
		return cdp.Call(ctx, t, page.Navigate, page.NavigateParams{URL: target})
	})
	switch {
	case err != nil && ctx.Err() != nil:
		return n.ended(ctx, inst)
	case err != nil && !inst.proc.alive():
		n.failed = "the browser exited while it opened the page (the next browser_open starts a new one)"
		return n, nil
	case err != nil:
		return nil, fmt.Errorf("browser: Page.navigate: %w", err)
	}
	if res.LoaderID == "" {
		// A navigation within the document (a fragment): nothing loads.
		n.mu.Lock()
		n.committed, n.reached[w.event] = true, true
		n.mu.Unlock()
	} else {
		n.known(res.LoaderID)
	}
	if res.ErrorText != "" {
		n.mu.Lock()
		if n.failed == "" {
			n.failed = res.ErrorText
		}
		n.mu.Unlock()
		return n, nil
	}
	if w.selector != "" {
		if err := n.waitSelector(cctx, inst); err != nil {
			if ctx.Err() != nil {
				return n.ended(ctx, inst)
			}
			return nil, err
		}
	} else {
		for {
			reached, failed := n.state()
			if failed != "" {
				return n, nil
			}
			if reached {
				break
			}
			select {
			case <-n.changed:
			case <-cctx.Done():
				return n.ended(ctx, inst)
			case <-inst.proc.gone:
				n.failed = "the browser exited while it loaded the page (the next browser_open starts a new one)"
				return n, nil
			case <-inst.proc.crashed:
				n.failed = crashedWhileLoading
				return n, nil
			}
		}
	}
	if n.missing != "" {
		return n, nil
	}
	if inst.proc.hasCrashed() {
		n.failed = crashedWhileLoading
		return n, nil
	}
	r, err := chromedp.Run(cctx, chromedp.Evaluate[text](readJS))
	if err != nil {
		if ctx.Err() != nil {
			return n.ended(ctx, inst)
		}
		return nil, fmt.Errorf("browser: reading the page: %w", err)
	}
	n.read = r
	return n, nil
}

// ended is navigate's answer when ctx ended before the page was ready: the
// load is stopped, what is known read.
func (n *navigation) ended(ctx context.Context, inst *instance) (*navigation, error) {
	stopLoad(inst.proc.tab, n)
	if !errors.Is(context.Cause(ctx), errTimeout) {
		n.failed = fmt.Sprintf("the call was stopped before the page loaded (%v)", context.Cause(ctx))
		return n, nil
	}
	return n, errNavTimeout
}

// waitSelector polls the page until an element matching the wait's
// selector is visible. A selector that is not CSS ends the wait with
// n.missing set.
func (n *navigation) waitSelector(ctx context.Context, inst *instance) error {
	sel, _ := json.Marshal(n.wait.selector)
	js := `((sel) => {
	let e;
	try { e = document.querySelector(sel); } catch (err) { return "invalid"; }
	if (!e) return "absent";
	const r = e.getBoundingClientRect(), s = getComputedStyle(e);
	return r.width > 0 && r.height > 0 && s.visibility !== "hidden" && s.display !== "none" ? "visible" : "hidden";
})(` + string(sel) + `)`
	for {
		if _, failed := n.state(); failed != "" {
			return nil
		}
		got, err := chromedp.Run(ctx, chromedp.Evaluate[string](js))
		switch {
		case err == nil && got == "visible":
			return nil
		case err == nil && got == "invalid":
			n.missing = fmt.Sprintf("wait %q is not load, domcontentloaded, networkidle or a valid CSS selector", n.wait.selector)
			return nil
		case err != nil && ctx.Err() != nil:
			return ctx.Err()
		}
		// An error here is most often the document being replaced
		// (a redirect, a navigation of its own): look again.
		select {
		case <-time.After(pollEvery):
		case <-ctx.Done():
			return ctx.Err()
		case <-inst.proc.gone:
			n.mu.Lock()
			n.failed = "the browser exited while it loaded the page (the next browser_open starts a new one)"
			n.mu.Unlock()
			return nil
		case <-inst.proc.crashed:
			n.mu.Lock()
			n.failed = crashedWhileLoading
			n.mu.Unlock()
			return nil
		}
	}
}

// refusedBy returns the proxy's reason for refusing the document (u, or
// where its redirects led), if it refused it: a refusal of the same host
// and port.
func (n *navigation) refusedBy(u *url.URL, refusals []refusal) (string, bool) {
	docs := map[dest]bool{destOf(u.String()): true}
	for _, s := range []string{n.reqURL, n.respURL} {
		if s != "" {
			docs[destOf(s)] = true
		}
	}
	for _, r := range refusals {
		host, port := splitDest(r.Host)
		if port == "" {
			_, port = splitDest(r.Addr)
		}
		if docs[dest{host, port}] || (port == "" && anyHost(docs, host)) {
			why := r.Reason
			if r.Addr != "" && !strings.Contains(why, r.Addr) {
				why += " (" + r.Addr + ")"
			}
			return why, true
		}
	}
	return "", false
}

// dest is where a request goes: a host name (lower case, no brackets) and
// port.
type dest struct{ host, port string }

// destOf is the dest of the address s, its scheme's port by default.
func destOf(s string) dest {
	u, err := url.Parse(s)
	if err != nil {
		return dest{}
	}
	port := u.Port()
	if port == "" {
		port = map[string]string{"http": "80", "https": "443"}[strings.ToLower(u.Scheme)]
	}
	return dest{strings.ToLower(u.Hostname()), port}
}

// splitDest splits host[:port], with or without brackets.
func splitDest(hostport string) (string, string) {
	if h, p, err := net.SplitHostPort(hostport); err == nil {
		return strings.ToLower(h), p
	}
	return strings.ToLower(strings.Trim(hostport, "[]")), ""
}

func anyHost(docs map[dest]bool, host string) bool {
	for d := range docs {
		if d.host == host {
			return true
		}
	}
	return false
}
