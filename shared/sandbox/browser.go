package sandbox

import (
	_ "embed"

	"github.com/agentsfleet/agentsfleet/shared/tool"
)

// The display tools run in the sandbox's headless browser, which the
// sandbox image does not carry yet; see tool.InDisplay.

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

// BrowserOpen is browser_open's contract: opens a page in the headless
// browser.
var BrowserOpen = tool.DefineIn[BrowserOpenArgs](&contracts, tool.About{
	Name:        "browser_open",
	RunsIn:      tool.InDisplay,
	Scope:       tool.ScopeBrowser,
	Summary:     "Opens a page in the sandbox's headless browser",
	Description: browserOpenText,
})

// Screenshot is screenshot's contract: captures the browser's page.
var Screenshot = tool.DefineIn[ScreenshotArgs](&contracts, tool.About{
	Name:        "screenshot",
	RunsIn:      tool.InDisplay,
	Scope:       tool.ScopeBrowser,
	Summary:     "Captures the headless browser's page as an image",
	Description: screenshotText,
})

// NoBrowser is why the display tools cannot run: sandboxd serves them, and
// answers every call with this.
const NoBrowser = "the agentsfleet sandbox image carries no headless browser yet, so browser_open and screenshot cannot run in this sandbox"

// DisplayTools returns browser_open and screenshot as sandboxd serves them
// without a browser: each checks its arguments, then answers NoBrowser.
func DisplayTools() []tool.Tool {
	return []tool.Tool{tool.Unbuilt(BrowserOpen, NoBrowser), tool.Unbuilt(Screenshot, NoBrowser)}
}
