package browser

import (
	"context"
	"encoding/json"
	"net/http"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentsfleet/agentsfleet/shared/sandbox"
	"github.com/agentsfleet/agentsfleet/shared/sandbox/confine"
	"github.com/agentsfleet/agentsfleet/shared/sandbox/sandboxtest"
	"github.com/agentsfleet/agentsfleet/shared/tool"
)

// chromium is the machine's Chromium, or skips t saying how to get one.
func chromium(t testing.TB) string {
	t.Helper()
	path, err := sandbox.FindChromium()
	if err != nil {
		t.Skipf("browser tests need a real Chromium: %v", err)
	}
	return path
}

// site is a test server on loopback that the browser's proxy lets through
// (Config.Allow), counting its requests.
type site struct{ *sandboxtest.Server }

func newSite(t testing.TB, mux *http.ServeMux) *site {
	t.Helper()
	return &site{sandboxtest.NewServer(t, mux)}
}

// addr is the site's address, for Config.Allow.
func (s *site) addr() netip.AddrPort {
	return netip.MustParseAddrPort(strings.TrimPrefix(s.URL, "http://"))
}

// newBrowser is a browser over the machine's Chromium, letting allow
// through, closed (and checked to leave no process behind) at the end of t.
func newBrowser(t testing.TB, allow netip.AddrPort, timeout time.Duration) *Browser {
	t.Helper()
	b := New(Config{Chromium: chromium(t), Policy: &confine.Policy{}, Timeout: timeout, Allow: allow})
	t.Cleanup(func() {
		profiles := b.profiles()
		_ = b.Close()
		for _, p := range profiles {
			if left := processesOf(p); len(left) > 0 {
				t.Errorf("Close left Chromium processes running: %v", left)
			}
		}
	})
	return b
}

// profiles are the profile directories of b's running browser.
func (b *Browser) profiles() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.cur == nil {
		return nil
	}
	return []string{b.cur.proc.profile}
}

// processesOf lists the running processes whose command line names the
// profile directory: the browser's, whatever their parent became.
func processesOf(profile string) []int { return sandboxtest.Processes(os.Getpid(), profile) }

// call runs the tool named name of b with args (a Go value) under ctx.
func call(t testing.TB, ctx context.Context, b *Browser, name string, args any) tool.Result {
	t.Helper()
	raw, err := json.Marshal(args)
	if err != nil {
		t.Fatal(err)
	}
	for _, tl := range b.Tools() {
		if tl.Name() == name {
			res, err := tl.Run(ctx, raw)
			if err != nil {
				t.Fatalf("%s(%s): %v", name, raw, err)
			}
			return res
		}
	}
	t.Fatalf("no tool %s", name)
	return tool.Result{}
}

func open(t testing.TB, b *Browser, url string) tool.Result {
	t.Helper()
	return call(t, context.Background(), b, "browser_open", sandbox.BrowserOpenArgs{URL: url})
}

func wantOK(t testing.TB, res tool.Result, want ...string) {
	t.Helper()
	if res.IsError {
		t.Fatalf("want a result, got an error result:\n%s", res.Output)
	}
	for _, w := range want {
		if !strings.Contains(res.Output, w) {
			t.Fatalf("result lacks %q:\n%s", w, res.Output)
		}
	}
}

func wantError(t testing.TB, res tool.Result, want ...string) {
	t.Helper()
	if !res.IsError {
		t.Fatalf("want an error result, got:\n%s", res.Output)
	}
	for _, w := range want {
		if !strings.Contains(res.Output, w) {
			t.Fatalf("error result lacks %q:\n%s", w, res.Output)
		}
	}
}

// html serves body as a page.
func html(body string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = w.Write([]byte(body))
	}
}

// addrPort is the site's port.
func (s *site) addrPort() string { return strconv.Itoa(int(s.addr().Port())) }
