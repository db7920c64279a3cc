package browser

import (
	"testing"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/page"
)

// A script's redirect can run before Page.navigate's answer is read: the
// events then show the page's own navigation after the call's, and the
// answer must not take the call back to a document that never loads.
func TestNavigationKeepsRedirectSeenBeforeNavigateAnswer(t *testing.T) {
	n := &navigation{wait: wait{event: "load"}, frame: "F", reached: map[string]bool{}, seen: map[cdp.LoaderID]bool{}, changed: make(chan struct{}, 1)}
	doc := func(loader cdp.LoaderID, req network.RequestID, url string) {
		n.event(&network.EventRequestWillBeSent{Type: network.ResourceTypeDocument, FrameID: "F", LoaderID: loader, RequestID: req, Request: &network.Request{URL: url}})
		n.event(&network.EventResponseReceived{RequestID: req, Response: &network.Response{Status: 200, URL: url}})
	}
	doc("L1", "R1", "http://site/hop")
	doc("L2", "R2", "http://site/landed")
	n.known("L1") // Page.navigate's answer, read late
	n.event(&page.EventLifecycleEvent{FrameID: "F", LoaderID: "L2", Name: "load"})
	if reached, failed := n.state(); !reached || failed != "" {
		t.Fatalf("the redirect's load was not taken: reached=%v failed=%q loader=%s", reached, failed, n.loader)
	}
	if n.respURL != "http://site/landed" {
		t.Fatalf("document = %q, want the redirect's", n.respURL)
	}
}

// An answer naming a loader the events have not shown (the page was busy
// with a navigation of its own when the call began) is the call's.
func TestNavigationTakesNavigateAnswerNotSeenYet(t *testing.T) {
	n := &navigation{wait: wait{event: "load"}, frame: "F", reached: map[string]bool{}, seen: map[cdp.LoaderID]bool{}, changed: make(chan struct{}, 1)}
	n.event(&network.EventRequestWillBeSent{Type: network.ResourceTypeDocument, FrameID: "F", LoaderID: "L0", RequestID: "R0", Request: &network.Request{URL: "http://site/old"}})
	n.known("L1")
	n.event(&page.EventLifecycleEvent{FrameID: "F", LoaderID: "L0", Name: "load"})
	if reached, _ := n.state(); reached {
		t.Fatal("the earlier navigation's load was taken for the call's")
	}
	n.event(&page.EventLifecycleEvent{FrameID: "F", LoaderID: "L1", Name: "load"})
	if reached, _ := n.state(); !reached {
		t.Fatal("the call's load was not taken")
	}
}
