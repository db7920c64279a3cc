package browser

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"image/png"
	"math"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"github.com/agentsfleet/agentsfleet/shared/sandbox"
	"github.com/agentsfleet/agentsfleet/shared/tool"
)

// The limits of a screenshot (sandbox.ScreenshotMaxSide…, which the
// tool's description states).
const (
	// MaxSide is the most pixels on the image's longer side.
	MaxSide = sandbox.ScreenshotMaxSide
	// MaxPixels is the most pixels in the image.
	MaxPixels = sandbox.ScreenshotMaxPixels
	// MaxPNGBytes is the largest PNG screenshot answers.
	MaxPNGBytes = sandbox.ScreenshotMaxBytes
)

// Shot is screenshot: it captures the page the last browser_open opened,
// as a PNG within MaxSide, MaxPixels and MaxPNGBytes. Safe for concurrent
// use: calls take turns with browser_open's.
type Shot struct {
	*tool.Def[sandbox.ScreenshotArgs]
	b *Browser
}

var _ tool.Tool = (*Shot)(nil)

// region is a rectangle of the document, in CSS pixels.
type region struct {
	X, Y, W, H float64
}

// Run captures the viewport, the whole page (full_page) or the first
// element matching selector. No open page, a selector that matches
// nothing or is not CSS, and an element without size are error results.
func (t *Shot) Run(ctx context.Context, raw json.RawMessage) (tool.Result, error) {
	args, bad, ok := t.Decode(raw)
	if !ok {
		return bad, nil
	}
	if args.FullPage && args.Selector != "" {
		return tool.Errorf("screenshot: give full_page or selector, not both: a selector captures its element, whole"), nil
	}
	ctx, timeout, done, res, ok := t.b.turn(ctx, "screenshot")
	if !ok {
		return res, nil
	}
	defer done()
	inst, opened := t.b.current()
	if inst == nil || !opened {
		res := tool.Errorf("screenshot: no page is open in the sandbox's browser: open one with browser_open first%s", t.b.lostNote())
		res.Egress = t.b.egress(nil, "screenshot")
		return res, nil
	}
	res, err := t.capture(ctx, inst, args, timeout)
	res.Egress = t.b.egress(inst, "screenshot")
	return res, err
}

// capture is screenshot's work on the running browser inst.
func (t *Shot) capture(ctx context.Context, inst *instance, args sandbox.ScreenshotArgs, timeout time.Duration) (tool.Result, error) {
	cctx, release := callContext(ctx, inst.proc.tab)
	defer release()

	what, r, msg, err := subject(cctx, args)
	if err == nil && msg != "" {
		return tool.Errorf("screenshot: %s", msg), nil
	}
	if err != nil {
		return t.failed(ctx, inst, timeout, err)
	}
	scale := fit(r.W, r.H)
	var data []byte
	for range 4 {
		if data, err = capture(cctx, r, scale, args.FullPage || args.Selector != ""); err != nil {
			return t.failed(ctx, inst, timeout, err)
		}
		if len(data) <= MaxPNGBytes {
			break
		}
		// PNG size grows about with the pixels: shrink both sides by the
		// square root of the excess, and a little more.
		scale *= math.Sqrt(float64(MaxPNGBytes)/float64(len(data))) * 0.95
	}
	if len(data) > MaxPNGBytes {
		return tool.Errorf("screenshot: %s does not fit in %d bytes as a PNG even scaled down to %.3g; capture a smaller part with selector", what, MaxPNGBytes, scale), nil
	}
	cfg, err := png.DecodeConfig(bytes.NewReader(data))
	if err != nil {
		return tool.Result{}, fmt.Errorf("browser: Chromium's screenshot is not a PNG: %w", err)
	}
	size := fmt.Sprintf("%d×%d px", cfg.Width, cfg.Height)
	if scale < 1 {
		size += fmt.Sprintf(" (scaled down from %.0f×%.0f to stay within %d px a side, %.2f megapixels and %.2f MB)", r.W, r.H, MaxSide, MaxPixels/1e6, MaxPNGBytes/1e6)
	}
	return tool.Result{
		Output: fmt.Sprintf("screenshot of %s: %s", what, size),
		Image:  &tool.Image{MediaType: tool.ImagePNG, Data: data, Width: cfg.Width, Height: cfg.Height},
	}, nil
}

// failed is the answer of a capture the browser did not finish: the call's
// time ran out, or the browser broke.
func (t *Shot) failed(ctx context.Context, inst *instance, timeout time.Duration, err error) (tool.Result, error) {
	if ctx.Err() != nil {
		return stopped(ctx, "screenshot", "before the capture was done", timeout), nil
	}
	if !inst.proc.alive() {
		return tool.Errorf("screenshot: the browser exited during the capture; open the page again with browser_open"), nil
	}
	return tool.Result{}, fmt.Errorf("browser: screenshot: %w", err)
}

// subject finds what to capture: its words for the answer and its region;
// msg says why it cannot be captured (the model's mistake).
func subject(ctx context.Context, args sandbox.ScreenshotArgs) (what string, r region, msg string, err error) {
	if args.Selector != "" {
		return element(ctx, args.Selector)
	}
	m, err := chromedp.Run(ctx, func(ctx context.Context, t *chromedp.Target) (page.GetLayoutMetricsResult, error) {
		return cdp.Call(ctx, t, page.GetLayoutMetrics, cdp.Empty{})
	})
	if err != nil {
		return "", r, "", err
	}
	if args.FullPage {
		if m.CSSContentSize == nil {
			return "", r, "", errors.New("the page's layout metrics have no content size")
		}
		return "the whole page", region{W: math.Ceil(m.CSSContentSize.Width), H: math.Ceil(m.CSSContentSize.Height)}, "", nil
	}
	v := m.CSSLayoutViewport
	if v == nil {
		return "", r, "", errors.New("the page's layout metrics have no viewport")
	}
	return "the viewport", region{X: float64(v.PageX), Y: float64(v.PageY), W: float64(v.ClientWidth), H: float64(v.ClientHeight)}, "", nil
}

// box is the first element a selector matches, as element's script
// finds it: its place in the document, in CSS pixels.
type box struct {
	Found   string  `json:"found"` // "yes", "absent" or "invalid"
	X       float64 `json:"x"`
	Y       float64 `json:"y"`
	W       float64 `json:"w"`
	H       float64 `json:"h"`
	Tag     string  `json:"tag"`
	Matches int     `json:"matches"`
}

// element finds the first element matching selector, at once: a selector
// that matches nothing is an answer, not something to wait for.
func element(ctx context.Context, selector string) (string, region, string, error) {
	sel, _ := json.Marshal(selector)
	js := `((sel) => {
	let all;
	try { all = document.querySelectorAll(sel); } catch (err) { return {found: "invalid"}; }
	if (all.length === 0) return {found: "absent"};
	const e = all[0], r = e.getBoundingClientRect(), d = document.documentElement.getBoundingClientRect();
	return {found: "yes", x: r.left - d.left, y: r.top - d.top, w: r.width, h: r.height, tag: e.tagName.toLowerCase(), matches: all.length};
})(` + string(sel) + `)`
	b, err := chromedp.Run(ctx, chromedp.Evaluate[box](js))
	if err != nil {
		return "", region{}, "", err
	}
	switch b.Found {
	case "invalid":
		return "", region{}, fmt.Sprintf("selector %q is not valid CSS", selector), nil
	case "absent":
		return "", region{}, fmt.Sprintf("selector %q matches no element of the page", selector), nil
	}
	what := fmt.Sprintf("the <%s> matching %q", b.Tag, selector)
	if b.Matches > 1 {
		what += fmt.Sprintf(" (the first of %d)", b.Matches)
	}
	// Whole pixels, as the capture wants them, covering the element.
	x, y := math.Floor(b.X), math.Floor(b.Y)
	r := region{X: x, Y: y, W: math.Ceil(b.X + b.W - x), H: math.Ceil(b.Y + b.H - y)}
	if b.W <= 0 || b.H <= 0 {
		return "", region{}, fmt.Sprintf("selector %q matches a <%s> that has no size on the page (hidden, or empty)", selector, b.Tag), nil
	}
	return what, r, "", nil
}

// fit is the scale that brings a w×h capture within MaxSide and
// MaxPixels; 1 when it is within them.
func fit(w, h float64) float64 {
	s := 1.0
	if long := max(w, h); long > MaxSide {
		s = MaxSide / long
	}
	if px := w * h * s * s; px > MaxPixels {
		s *= math.Sqrt(MaxPixels / px)
	}
	return s
}

// capture is Chromium's PNG of r at scale; beyond captures outside the
// viewport (the whole page, an element below it).
func capture(ctx context.Context, r region, scale float64, beyond bool) ([]byte, error) {
	return chromedp.Run(ctx, func(ctx context.Context, t *chromedp.Target) ([]byte, error) {
		res, err := cdp.Call(ctx, t, page.CaptureScreenshot, page.CaptureScreenshotParams{
			Format:                page.CaptureScreenshotFormatPng,
			CaptureBeyondViewport: &beyond,
			FromSurface:           ptrTrue(),
			Clip:                  &page.Viewport{X: r.X, Y: r.Y, Width: r.W, Height: r.H, Scale: scale},
		})
		if err != nil {
			return nil, err
		}
		return res.Data, nil
	})
}

func ptrTrue() *bool { t := true; return &t }
