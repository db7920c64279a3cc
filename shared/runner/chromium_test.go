//go:build linux

package runner_test

import (
	"bytes"
	"fmt"
	"image/png"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"

	"github.com/agentsfleet/agentsfleet/shared/model"
	"github.com/agentsfleet/agentsfleet/shared/runner"
	"github.com/agentsfleet/agentsfleet/shared/sandbox"
	"github.com/agentsfleet/agentsfleet/shared/sandbox/launch/launchtest"
	"github.com/agentsfleet/agentsfleet/shared/store"
)

// TestBrowserScreenshotReachesTheModel: a run opens a page of one colour
// in the sandbox's real Chromium, takes a screenshot, and the model's next
// call holds that screenshot as an image whose pixels are the page's
// colour, while the run's event names it by its key in the bucket.
func TestBrowserScreenshotReachesTheModel(t *testing.T) {
	t.Parallel()
	chromium, err := sandbox.FindChromium()
	if err != nil {
		t.Skipf("%v: the browser tools need one", err)
	}
	page := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, `<!doctype html><title>Blue</title><body style="margin:0;background:#3366cc;color:#fff">a blue page</body>`)
	}))
	t.Cleanup(page.Close)
	allow := netip.MustParseAddrPort(strings.TrimPrefix(page.URL, "http://"))
	script := fmt.Sprintf(`[[turn]]
[[turn.tool_call]]
name = "browser_open"
arguments = { url = %q }
[[turn]]
[[turn.tool_call]]
name = "screenshot"
[[turn]]
text = "saw {{last_image}}"
`, page.URL+"/")
	var rec *recorder
	e := newEnv(t, script, func(c *runner.Config) {
		c.Display = true
		c.Blobs = s3Blobs(t)
		l := c.Sandboxes.(*launchtest.Launcher)
		l.Chromium, l.BrowserAllow = chromium, allow
		rec = &recorder{Model: c.Model}
		c.Model = rec
	})
	id := e.start(e.fleet(definition("browsing", "browser_open", "screenshot")), "look at the page")
	if err := e.runner.Run(ctx, id); err != nil {
		t.Fatal(err)
	}
	run, end := e.ended(id)
	if run.Status != store.StatusSucceeded || !strings.HasPrefix(end.Answer, "saw ") || !strings.Contains(end.Answer, "image/png") {
		t.Fatalf("run %s, answer %q; want it succeeded having seen a PNG", run.Status, end.Answer)
	}
	results := e.results(id)
	if len(results) != 2 || results[0].IsError || !strings.Contains(results[0].Output, "a blue page") || !strings.Contains(results[0].Output, "Blue") {
		t.Fatalf("browser_open's result: %+v, want the page's title and text", results)
	}
	// The page's request went through the sandbox's proxy, which reported
	// it: the run's egress log holds it, as the sandbox's account.
	log, err := e.store.ListEgress(ctx, id, "", 0)
	if err != nil {
		t.Fatal(err)
	}
	var reported bool
	for _, en := range log.Egress {
		if en.Tool == "browser_open" && en.Sandbox && en.Method == http.MethodGet && en.Status == http.StatusOK &&
			en.Port == int(allow.Port()) && en.BytesIn > 0 {
			reported = true
		}
	}
	if !reported {
		t.Errorf("the egress log %+v has no browser_open entry for the page", log.Egress)
	}
	shot := results[1]
	if shot.IsError || shot.Image == nil || shot.Image.Ref == "" {
		t.Fatalf("screenshot's result: %+v, want an image kept by reference", shot)
	}
	var img *model.Image
	for _, m := range rec.seen[2] {
		for _, p := range m.Content {
			if p.ToolResult != nil && p.ToolResult.Name == "screenshot" {
				img = p.ToolResult.Image
			}
		}
	}
	if img == nil || len(img.Data) == 0 {
		t.Fatal("the model's call after the screenshot holds no image")
	}
	pic, err := png.Decode(bytes.NewReader(img.Data))
	if err != nil {
		t.Fatalf("the image the model got is not a PNG: %v", err)
	}
	b := pic.Bounds()
	if b.Dx() != img.Width || b.Dy() != img.Height || shot.Image.Width != img.Width {
		t.Errorf("the PNG is %v, the result says %d×%d and the event %d×%d", b, img.Width, img.Height, shot.Image.Width, shot.Image.Height)
	}
	r, g, bl, _ := pic.At(b.Dx()/2, b.Dy()-5).RGBA()
	if r>>8 != 0x33 || g>>8 != 0x66 || bl>>8 != 0xcc {
		t.Errorf("a pixel of the page is #%02x%02x%02x, want #3366cc", r>>8, g>>8, bl>>8)
	}
}
