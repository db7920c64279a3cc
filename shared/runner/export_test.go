package runner

import (
	"fmt"
	"sync"

	"github.com/agentsfleet/agentsfleet/shared/model/modeltest"
	"github.com/agentsfleet/agentsfleet/shared/tool"
)

// cancelSeen holds, by run ID, the channels CancelSeen returned.
var cancelSeen sync.Map

func init() {
	testHookCancelSeen = func(runID string) {
		if ch, ok := cancelSeen.LoadAndDelete(runID); ok {
			close(ch.(chan struct{}))
		}
	}
	// sandboxd answers screenshot (its arguments checked) without a
	// browser; these tests stand for one that has one, whose answer the
	// sandbox client decodes with its image.
	testHookSandboxResult = func(name string, res tool.Result) tool.Result {
		if name != "screenshot" {
			return res
		}
		return tool.Result{Output: fmt.Sprintf("%d×%d screenshot of http://app.test/", ScreenshotWidth, ScreenshotHeight),
			Image: &tool.Image{MediaType: tool.ImagePNG, Data: Screenshot(), Width: ScreenshotWidth, Height: ScreenshotHeight}}
	}
}

// The size of the page every screenshot in these tests captures.
const (
	ScreenshotWidth  = 320
	ScreenshotHeight = 200
)

// Screenshot is the PNG every screenshot call answers in these tests.
func Screenshot() []byte { return modeltest.PNG(ScreenshotWidth, ScreenshotHeight) }

// CancelSeen returns a channel closed once the status watch of run runID
// has seen it cancelled (and the run will not start another turn).
func CancelSeen(runID string) <-chan struct{} {
	ch := make(chan struct{})
	cancelSeen.Store(runID, ch)
	return ch
}
