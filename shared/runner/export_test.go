package runner

import "sync"

// cancelSeen holds, by run ID, the channels CancelSeen returned.
var cancelSeen sync.Map

func init() {
	testHookCancelSeen = func(runID string) {
		if ch, ok := cancelSeen.LoadAndDelete(runID); ok {
			close(ch.(chan struct{}))
		}
	}
}

// CancelSeen returns a channel closed once the status watch of run runID
// has seen it cancelled (and the run will not start another turn).
func CancelSeen(runID string) <-chan struct{} {
	ch := make(chan struct{})
	cancelSeen.Store(runID, ch)
	return ch
}
