package sandbox

import (
	"context"
	_ "embed"
	"encoding/json"
	"fmt"

	"github.com/agentsfleet/agentsfleet/shared/tool"
	"github.com/agentsfleet/agentsfleet/shared/web/spec"
)

// The display tools run in the sandbox's headless browser (see
// tool.InDisplay): sandboxd drives it (package browser) when it is given
// one (sandboxd serve --browser), and answers NoBrowser otherwise.

//go:embed browser_open.txt
var browserOpenText string

//go:embed screenshot.txt
var screenshotText string

// BrowserOpenArgs are browser_open's arguments.
type BrowserOpenArgs struct {
	// URL is the page to open: http or https.
	URL string `json:"url"`
	// Wait is what the call waits for before it answers: "load" (the
	// default), "domcontentloaded", "networkidle", or else a CSS selector
	// that must match a visible element.
	Wait string `json:"wait,omitempty"`
}

// ScreenshotArgs are screenshot's arguments.
type ScreenshotArgs struct {
	// FullPage captures the whole page rather than the viewport.
	FullPage bool `json:"full_page,omitempty"`
	// Selector, when set, captures the first element it matches.
	Selector string `json:"selector,omitempty"`
}

// The limits of a screenshot: what vision models take without scaling it
// down themselves, and a PNG whose base64 stays under 5 MB. A capture past
// them is scaled down, never cropped.
const (
	// ScreenshotMaxSide is the most pixels on the image's longer side.
	ScreenshotMaxSide = 1568
	// ScreenshotMaxPixels is the most pixels in the image (about 1.15
	// megapixels).
	ScreenshotMaxPixels = 1_150_000
	// ScreenshotMaxBytes is the largest PNG screenshot answers: 3.75 MB,
	// 5 MB in base64.
	ScreenshotMaxBytes = 3_750_000
	// BrowserWidth and BrowserHeight are the browser's viewport, in CSS
	// pixels (one device pixel each).
	BrowserWidth, BrowserHeight = 1280, 800
)

// BrowserOpen is browser_open's contract: opens a page in the headless
// browser.
var BrowserOpen = tool.DefineIn[BrowserOpenArgs](&contracts, tool.About{
	Name:        "browser_open",
	RunsIn:      tool.InDisplay,
	Scope:       tool.ScopeBrowser,
	Summary:     "Opens a page in the sandbox's headless browser",
	Description: browserOpenText,
	Values:      map[string]any{"TextCap": pageCap, "Width": BrowserWidth, "Height": BrowserHeight},
})

// Screenshot is screenshot's contract: captures the browser's page.
var Screenshot = tool.DefineIn[ScreenshotArgs](&contracts, tool.About{
	Name:        "screenshot",
	RunsIn:      tool.InDisplay,
	Scope:       tool.ScopeBrowser,
	Summary:     "Captures the headless browser's page as an image",
	Description: screenshotText,
	Values: map[string]any{
		"MaxSide": ScreenshotMaxSide, "MaxMegapixels": fmt.Sprintf("%.2f", ScreenshotMaxPixels/1e6),
		"MaxMB": fmt.Sprintf("%.2f", ScreenshotMaxBytes/1e6), "Width": BrowserWidth, "Height": BrowserHeight,
	},
})

// pageCap is how much of a page's text browser_open answers, said as
// webfetch says its cap.
var pageCap = spec.PageCap

// NoBrowser is the answer of the display tools in a sandbox that has no
// headless browser (sandboxd serve without --browser).
const NoBrowser = "this sandbox has no headless browser, so browser_open and screenshot cannot run here (it does not mean the page is unreachable): " +
	"they need a sandbox whose sandboxd is started with --browser, as the agentsfleet sandbox image's is (it carries Chromium), " +
	"or, for a local sandbox, Chromium on the machine (Debian: apt-get install chromium)"

// DisplayTools returns browser_open and screenshot as sandboxd serves them
// without a browser: each checks its arguments, then answers NoBrowser.
func DisplayTools() []tool.Tool {
	return []tool.Tool{noBrowser{BrowserOpen}, noBrowser{Screenshot}}
}

// noBrowser is a display tool in a sandbox without a browser.
type noBrowser struct{ tool.Spec }

// Run checks args, then answers NoBrowser.
func (t noBrowser) Run(_ context.Context, args json.RawMessage) (tool.Result, error) {
	if res, ok := t.Check(args); !ok {
		return res, nil
	}
	return tool.Errorf("%s", NoBrowser), nil
}
