package e2e

import (
	"strings"
	"testing"

	"github.com/agentsfleet/agentsfleet/shared/slack/slacktest"
)

// slackFake is the local Slack Web API the product posts to: slacktest's,
// which wants the bot token and refuses, with Slack's codes, what Slack
// refuses (a stream in a channel without its recipient among them).
type slackFake struct{ *slacktest.Server }

func newSlackFake(t testing.TB, token string) *slackFake { return &slackFake{slacktest.New(t, token)} }

// seen returns the calls the fake took, and the methods it saw.
func (f *slackFake) seen() ([]slacktest.Call, []string) { return f.Calls(), f.Sorted() }

// said reports whether channel's thread showed s: in one of the app's
// messages there as it is now (posted, edited or streamed), or in a call
// Slack took that posted or edited one.
func (f *slackFake) said(channel, threadTS, s string) bool {
	for _, m := range f.Messages() {
		if m.Channel == channel && m.ThreadTS == threadTS && strings.Contains(m.Text+" "+m.Blocks, s) {
			return true
		}
	}
	for _, c := range f.Calls() {
		if c.Error != "" || c.Args["channel"] != channel || c.Args["thread_ts"] != threadTS && c.Method != "chat.update" {
			continue
		}
		for _, k := range []string{"text", "markdown_text", "chunks", "blocks"} {
			if strings.Contains(c.Args[k], s) {
				return true
			}
		}
	}
	return false
}

// streamed returns the app's streamed message in channel's thread.
func (f *slackFake) streamed(channel, threadTS string) (slacktest.Message, bool) {
	for _, m := range f.Messages() {
		if m.Streamed && m.Channel == channel && m.ThreadTS == threadTS {
			return m, true
		}
	}
	return slacktest.Message{}, false
}
