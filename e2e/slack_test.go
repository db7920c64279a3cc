package e2e

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"sync"
	"testing"
)

// slackPost is one call the fake Slack Web API took.
type slackPost struct {
	method, channel, threadTS, text string
}

// slackFake is a local Slack Web API: it takes every method the poster
// uses, answers ok with a fresh ts, and keeps what was sent.
type slackFake struct {
	*httptest.Server
	token string

	mu    sync.Mutex
	posts []slackPost
	bad   []string
}

func newSlackFake(t *testing.T, token string) *slackFake {
	f := &slackFake{token: token}
	f.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.ParseMultipartForm(1 << 20)
		r.ParseForm()
		method := strings.TrimPrefix(r.URL.Path, "/api/")
		f.mu.Lock()
		defer f.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		if r.Header.Get("Authorization") != "Bearer "+token && r.Form.Get("token") != token {
			f.bad = append(f.bad, method+" without the bot token")
			fmt.Fprint(w, `{"ok": false, "error": "invalid_auth"}`)
			return
		}
		var text []string
		for _, k := range []string{"text", "markdown_text", "chunks", "blocks"} {
			if v := r.Form.Get(k); v != "" {
				text = append(text, v)
			}
		}
		f.posts = append(f.posts, slackPost{method, r.Form.Get("channel"), r.Form.Get("thread_ts"), strings.Join(text, " ")})
		fmt.Fprintf(w, `{"ok": true, "channel": %q, "ts": "1796200000.%06d"}`, r.Form.Get("channel"), len(f.posts))
	}))
	t.Cleanup(f.Close)
	return f
}

// seen returns what the fake took, and the methods it saw.
func (f *slackFake) seen() ([]slackPost, []string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	methods := map[string]bool{}
	for _, p := range f.posts {
		methods[p.method] = true
	}
	var names []string
	for m := range methods {
		names = append(names, m)
	}
	sort.Strings(names)
	return append([]slackPost(nil), f.posts...), names
}

// said reports whether some call in channel's thread carried s.
func (f *slackFake) said(channel, threadTS, s string) bool {
	posts, _ := f.seen()
	for _, p := range posts {
		if p.channel == channel && (p.threadTS == threadTS || p.method == "chat.update") && strings.Contains(p.text, s) {
			return true
		}
	}
	return false
}
