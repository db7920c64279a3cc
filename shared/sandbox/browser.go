package sandbox

import (
	_ "embed"

	"github.com/agentsfleet/agentsfleet/shared/tool"
)

// The display tools run in the sandbox's headless browser, which the
// sandbox image does not carry yet; see fleet.InDisplay.

//go:embed browser_open.txt
var browserOpenText string

//go:embed screenshot.txt
var screenshotText string

// BrowserOpenArgs are browser_open's arguments.
type BrowserOpenArgs struct {
	URL string `json:"url"`
}

// ScreenshotArgs are screenshot's arguments: none.
type ScreenshotArgs struct{}

// BrowserOpen is browser_open's contract: opens a page in the headless
// browser.
var BrowserOpen = tool.Define[BrowserOpenArgs](tool.About{Name: "browser_open", Description: browserOpenText})

// Screenshot is screenshot's contract: captures the browser's page.
var Screenshot = tool.Define[ScreenshotArgs](tool.About{Name: "screenshot", Description: screenshotText})

// NoBrowser is why the display tools cannot run: sandboxd serves them, and
// answers every call with this.
const NoBrowser = "the agentsfleet sandbox image carries no headless browser yet, so browser_open and screenshot cannot run in this sandbox"

// DisplayTools returns browser_open and screenshot as sandboxd serves them
// without a browser: each checks its arguments, then answers NoBrowser.
func DisplayTools() []tool.Tool {
	return []tool.Tool{tool.Unbuilt(BrowserOpen, NoBrowser), tool.Unbuilt(Screenshot, NoBrowser)}
}
