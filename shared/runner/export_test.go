package runner

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"

	"github.com/agentsfleet/agentsfleet/shared/model/modeltest"
	"github.com/agentsfleet/agentsfleet/shared/sandbox"
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
}

// FixedScreenshot is a screenshot tool that answers Screenshot for every
// call (its arguments checked as sandboxd's are), for a test sandbox that
// stands for one with a browser (launchtest.Launcher.Replace): the answer
// still crosses sandboxd's HTTP API and the sandbox client.
func FixedScreenshot() tool.Tool { return fixedScreenshot{sandbox.Screenshot} }

type fixedScreenshot struct{ tool.Spec }

func (f fixedScreenshot) Run(_ context.Context, args json.RawMessage) (tool.Result, error) {
	if res, ok := sandbox.Screenshot.Check(args); !ok {
		return res, nil
	}
	return tool.Result{Output: fmt.Sprintf("%d×%d screenshot of http://app.test/", ScreenshotWidth, ScreenshotHeight),
		Image: &tool.Image{MediaType: tool.ImagePNG, Data: Screenshot(), Width: ScreenshotWidth, Height: ScreenshotHeight}}, nil
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
