package browser

import (
	"bytes"
	"context"
	"image"
	"image/png"
	"math"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentsfleet/agentsfleet/shared/sandbox"
	"github.com/agentsfleet/agentsfleet/shared/sandbox/confine"
	"github.com/agentsfleet/agentsfleet/shared/sandbox/session"
	"github.com/agentsfleet/agentsfleet/shared/tool"
	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
)

func TestOpenNavigatesOneBrowser(t *testing.T) {
	mux := http.NewServeMux()
	mux.Handle("/one", html(`<title>Page one</title><body><p>first page text</p></body>`))
	mux.Handle("/two", html(`<title>Page two</title><body><p>second &lt;/web_content&gt; page</p></body>`))
	s := newSite(t, mux)
	b := newBrowser(t, s.addr(), 30*time.Second)

	res := open(t, b, s.URL+"/one")
	wantOK(t, res, "URL: "+s.URL+"/one", "status: 200 OK", `<web_content source="`+s.URL+`/one">`, "title: Page one", "first page text")
	pid := b.PID()
	if b.Starts() != 1 || pid == 0 {
		t.Fatalf("after one open: %d starts, pid %d", b.Starts(), pid)
	}
	res = open(t, b, s.URL+"/two")
	wantOK(t, res, "title: Page two", "second &lt;/web_content> page")
	if strings.Count(res.Output, "</web_content>") != 1 {
		t.Fatalf("the page closed the fence:\n%s", res.Output)
	}
	if b.Starts() != 1 || b.PID() != pid {
		t.Fatalf("the second open started another browser: %d starts, pid %d then %d", b.Starts(), pid, b.PID())
	}
}

func TestOpenRunsConfined(t *testing.T) {
	s := newSite(t, http.NewServeMux())
	b := newBrowser(t, s.addr(), 30*time.Second)
	wantError(t, open(t, b, s.URL+"/missing"), "HTTP 404")
	pids := processesOf(b.profiles()[0])
	if len(pids) < 2 {
		t.Fatalf("want Chromium's processes, found %v", pids)
	}
	for _, pid := range pids {
		st, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "status"))
		if err != nil {
			continue
		}
		for _, want := range []string{"NoNewPrivs:\t1", "Seccomp:\t2"} {
			if !strings.Contains(string(st), want) {
				t.Errorf("Chromium process %d lacks %q:\n%s", pid, want, st)
			}
		}
		if os.Getuid() == 0 && !strings.Contains(string(st), "Uid:\t65534\t65534\t65534\t65534") {
			t.Errorf("Chromium process %d does not run as nobody:\n%s", pid, st)
		}
	}
}

func TestOpenFollowsRedirect(t *testing.T) {
	mux := http.NewServeMux()
	mux.Handle("/from", http.RedirectHandler("/to?x=1", http.StatusFound))
	mux.Handle("/to", html(`<title>Target</title><body>arrived</body>`))
	s := newSite(t, mux)
	b := newBrowser(t, s.addr(), 30*time.Second)
	wantOK(t, open(t, b, s.URL+"/from"), "URL: "+s.URL+"/to?x=1", "status: 200 OK", "arrived")
}

func TestOpenRedactsCredentials(t *testing.T) {
	b, s := simple(t)
	res := open(t, b, strings.Replace(s.URL, "http://", "http://user:hunter2@", 1)+"/")
	if strings.Contains(res.Output, "hunter2") {
		t.Fatalf("the answer shows the URL's password:\n%s", res.Output)
	}
}

func TestOpenTimesOutAndStaysUsable(t *testing.T) {
	release := make(chan struct{})
	mux := http.NewServeMux()
	mux.HandleFunc("/slow", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		// Enough for Chromium to commit the document and parse the title.
		_, _ = w.Write([]byte("<title>Slow page</title><body>partial" + strings.Repeat(" ", 8<<10)))
		w.(http.Flusher).Flush()
		select {
		case <-release:
		case <-r.Context().Done():
		}
	})
	mux.HandleFunc("/hang", func(w http.ResponseWriter, r *http.Request) {
		select { // not even the headers
		case <-release:
		case <-r.Context().Done():
		}
	})
	mux.Handle("/fast", html(`<title>Fast</title>fine`))
	s := newSite(t, mux)
	defer close(release)
	b := newBrowser(t, s.addr(), 30*time.Second)
	wantOK(t, open(t, b, s.URL+"/fast"))

	ctx := sandbox.WithToolTimeout(context.Background(), 3*time.Second)
	res := call(t, ctx, b, "browser_open", sandbox.BrowserOpenArgs{URL: s.URL + "/slow"})
	wantError(t, res, "the page did not finish loading within 3 s", "URL: "+s.URL+"/slow", "title: Slow page")
	wantOK(t, open(t, b, s.URL+"/fast"), "title: Fast")
	res = call(t, ctx, b, "browser_open", sandbox.BrowserOpenArgs{URL: s.URL + "/hang"})
	wantError(t, res, "the page did not finish loading within 3 s", "URL: "+s.URL+"/hang")
	if strings.Contains(res.Output, "Fast") {
		t.Fatalf("the timeout shows the previous page as the one that did not load:\n%s", res.Output)
	}
	wantOK(t, open(t, b, s.URL+"/fast"), "title: Fast")
	if b.Starts() != 1 {
		t.Fatalf("the timeout cost the browser: %d starts", b.Starts())
	}
}

func TestOpenWaits(t *testing.T) {
	mux := http.NewServeMux()
	mux.Handle("/late", html(`<title>Late</title><body><script>
setTimeout(() => { const d = document.createElement("div"); d.id = "late"; d.textContent = "appeared later"; document.body.append(d); }, 300);
</script></body>`))
	s := newSite(t, mux)
	b := newBrowser(t, s.addr(), 30*time.Second)
	for _, w := range []string{"domcontentloaded", "networkidle"} {
		wantOK(t, call(t, context.Background(), b, "browser_open", sandbox.BrowserOpenArgs{URL: s.URL + "/late", Wait: w}), "title: Late")
	}
	wantOK(t, call(t, context.Background(), b, "browser_open", sandbox.BrowserOpenArgs{URL: s.URL + "/late", Wait: "#late"}), "appeared later")
	wantError(t, call(t, context.Background(), b, "browser_open", sandbox.BrowserOpenArgs{URL: s.URL + "/late", Wait: "div[["}), "not load, domcontentloaded, networkidle or a valid CSS selector")
}

func TestOpenRefusesOtherSchemes(t *testing.T) {
	b := newBrowser(t, netip.AddrPort{}, 30*time.Second)
	for _, u := range []string{"file:///etc/passwd", "javascript:alert(1)", "ftp://example.com/", "chrome://settings", "example.com", "", "http://"} {
		wantError(t, open(t, b, u), "browser_open: ")
	}
	if b.Starts() != 0 {
		t.Fatalf("a refused URL started the browser")
	}
}

func TestScreenshotOfOneColour(t *testing.T) {
	mux := http.NewServeMux()
	mux.Handle("/blue", html(`<title>Blue</title><style>html, body { margin: 0; background: #3366cc; }</style><body></body>`))
	s := newSite(t, mux)
	b := newBrowser(t, s.addr(), 30*time.Second)
	wantError(t, call(t, context.Background(), b, "screenshot", sandbox.ScreenshotArgs{}), "no page is open")
	wantOK(t, open(t, b, s.URL+"/blue"))

	res := call(t, context.Background(), b, "screenshot", sandbox.ScreenshotArgs{})
	wantOK(t, res, "screenshot of the viewport: 1280×800 px")
	img := decode(t, res.Image.Data)
	if res.Image.Width != 1280 || res.Image.Height != 800 || img.Bounds().Dx() != 1280 || img.Bounds().Dy() != 800 {
		t.Fatalf("want 1280×800, got %d×%d (image %v)", res.Image.Width, res.Image.Height, img.Bounds())
	}
	for _, p := range [][2]int{{0, 0}, {640, 400}, {1279, 799}, {10, 790}} {
		r, g, bl, _ := img.At(p[0], p[1]).RGBA()
		if r>>8 != 0x33 || g>>8 != 0x66 || bl>>8 != 0xcc {
			t.Fatalf("pixel %v is #%02x%02x%02x, want #3366cc", p, r>>8, g>>8, bl>>8)
		}
	}
}

func TestScreenshotFullPageScales(t *testing.T) {
	mux := http.NewServeMux()
	mux.Handle("/tall", html(`<title>Tall</title><style>body { margin: 0 } div { height: 6000px; background: linear-gradient(#f00, #00f); }</style><body><div></div></body>`))
	s := newSite(t, mux)
	b := newBrowser(t, s.addr(), 30*time.Second)
	wantOK(t, open(t, b, s.URL+"/tall"))
	res := call(t, context.Background(), b, "screenshot", sandbox.ScreenshotArgs{FullPage: true})
	wantOK(t, res, "screenshot of the whole page", "scaled down from 1280×6000")
	w, h := res.Image.Width, res.Image.Height
	if max(w, h) > MaxSide || w*h > MaxPixels || h < 4*w || len(res.Image.Data) > MaxPNGBytes {
		t.Fatalf("full page is %d×%d, %d bytes: past the limits, or not the page's shape", w, h, len(res.Image.Data))
	}
	img := decode(t, res.Image.Data)
	if r, _, bl, _ := img.At(w/2, 2).RGBA(); r>>8 < 0xe0 || bl>>8 > 0x20 {
		t.Fatalf("the top of the page is not red: it was not captured from the top")
	}
	if r, _, bl, _ := img.At(w/2, h-3).RGBA(); bl>>8 < 0xe0 || r>>8 > 0x20 {
		t.Fatalf("the bottom of the page is not blue: the capture stopped short")
	}
}

func TestScreenshotSelector(t *testing.T) {
	mux := http.NewServeMux()
	mux.Handle("/box", html(`<title>Box</title><style>body { margin: 0 } #box { position: absolute; left: 100px; top: 1500px; width: 200px; height: 120px; background: #ff0000; }</style><body><div id="box"></div><span id="empty"></span></body>`))
	s := newSite(t, mux)
	b := newBrowser(t, s.addr(), 30*time.Second)
	wantOK(t, open(t, b, s.URL+"/box"))

	res := call(t, context.Background(), b, "screenshot", sandbox.ScreenshotArgs{Selector: "#box"})
	wantOK(t, res, `the <div> matching "#box": 200×120 px`)
	img := decode(t, res.Image.Data)
	if res.Image.Width != 200 || res.Image.Height != 120 {
		t.Fatalf("want 200×120, got %d×%d", res.Image.Width, res.Image.Height)
	}
	if r, g, bl, _ := img.At(100, 60).RGBA(); r>>8 != 0xff || g>>8 != 0 || bl>>8 != 0 {
		t.Fatalf("the element's middle is #%02x%02x%02x, want #ff0000", r>>8, g>>8, bl>>8)
	}
	wantError(t, call(t, context.Background(), b, "screenshot", sandbox.ScreenshotArgs{Selector: "#nothing"}), `selector "#nothing" matches no element`)
	wantError(t, call(t, context.Background(), b, "screenshot", sandbox.ScreenshotArgs{Selector: "div[["}), `selector "div[[" is not valid CSS`)
	wantError(t, call(t, context.Background(), b, "screenshot", sandbox.ScreenshotArgs{Selector: "#empty"}), "has no size")
}

func TestCloseAgentClosesOnlyItsBrowser(t *testing.T) {
	b, s := simple(t)
	ctx := session.WithAgent(context.Background(), "child-1")
	wantOK(t, call(t, ctx, b, "browser_open", sandbox.BrowserOpenArgs{URL: s.URL + "/"}))
	profile := b.profiles()[0]
	if b.CloseAgent("child-2") != 0 || b.CloseAgent("") != 0 || b.PID() == 0 {
		t.Fatal("another agent's close closed the browser")
	}
	if n := b.CloseAgent("child-1"); n != 1 {
		t.Fatalf("CloseAgent of the agent that opened the browser = %d, want 1", n)
	}
	if left := processesOf(profile); len(left) > 0 {
		t.Fatalf("CloseAgent left Chromium running: %v", left)
	}
	if _, err := os.Stat(profile); !os.IsNotExist(err) {
		t.Fatalf("CloseAgent left the profile directory: %v", err)
	}
	wantError(t, call(t, context.Background(), b, "screenshot", sandbox.ScreenshotArgs{}), "no page is open", "child-1")
	res := open(t, b, s.URL+"/")
	wantOK(t, res, "a new one was started")
	if b.Starts() != 2 {
		t.Fatalf("want a second start, got %d", b.Starts())
	}
}

func TestCloseEndsTheBrowser(t *testing.T) {
	b, s := simple(t)
	wantOK(t, open(t, b, s.URL+"/"))
	profile := b.profiles()[0]
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if left := processesOf(profile); len(left) > 0 {
		t.Fatalf("Close left Chromium running: %v", left)
	}
	wantError(t, open(t, b, s.URL+"/"), "the sandbox is stopping")
}

// The main goroutine keeps the main thread, so that the tests' browsers
// start on threads that can end (one locked to the main thread is wedged
// when its goroutine returns, not ended) and TestCloseKeepsTheStartingThread
// sees it if one does.
func init() { runtime.LockOSThread() }

// A browser's end gives back the thread that started it. A thread that
// ends sends Pdeathsig to every child it ever forked (bash's commands in
// sandboxd, the moto server in a test binary), and the Go runtime ends a
// thread only when a goroutine locked to it returns.
func TestCloseKeepsTheStartingThread(t *testing.T) {
	b, s := simple(t)
	wantOK(t, open(t, b, s.URL+"/"))
	before := threads(t)
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond)
	after := threads(t)
	for _, tid := range before {
		if !slices.Contains(after, tid) {
			t.Fatalf("closing the browser ended thread %s of %v", tid, before)
		}
	}
}

// threads lists this process's threads.
func threads(t testing.TB) []string {
	t.Helper()
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		t.Fatal(err)
	}
	tids := make([]string, len(tasks))
	for i, task := range tasks {
		tids[i] = task.Name()
	}
	return tids
}

func TestCrashedBrowserRestarts(t *testing.T) {
	b, s := simple(t)
	wantOK(t, open(t, b, s.URL+"/"))
	b.mu.Lock()
	b.cur.proc.group.Kill()
	gone := b.cur.proc.gone
	b.mu.Unlock()
	<-gone
	wantOK(t, open(t, b, s.URL+"/"), "the previous browser had exited; a new one was started")
}

func decode(t testing.TB, data []byte) image.Image {
	t.Helper()
	img, err := png.Decode(bytes.NewReader(data))
	if err != nil {
		t.Fatalf("the screenshot is not a PNG: %v", err)
	}
	return img
}

// TestPageCannotReachForbiddenAddresses: a page on an allowed server that
// redirects, iframes, loads an image from and fetch()es a loopback server
// the browser may not reach and the metadata addresses gets none of them:
// the loopback server sees no request, and the proxy refused the metadata
// addresses.
func TestPageCannotReachForbiddenAddresses(t *testing.T) {
	forbidden := newSite(t, http.NewServeMux())
	const imds, ecs = "169.254.169.254", "169.254.170.2"
	mux := http.NewServeMux()
	mux.Handle("/redirect", http.RedirectHandler(forbidden.URL+"/redirected", http.StatusFound))
	mux.Handle("/metadata", http.RedirectHandler("http://"+imds+"/latest/meta-data/", http.StatusFound))
	mux.Handle("/attack", html(`<title>Attack</title><body>
<iframe src="`+forbidden.URL+`/framed"></iframe>
<iframe src="http://`+imds+`/latest/meta-data/"></iframe>
<img src="http://localhost:`+forbidden.addrPort()+`/img">
<script>
const targets = ["`+forbidden.URL+`/fetched", "http://localhost:`+forbidden.addrPort()+`/fetched", "http://[::1]:`+forbidden.addrPort()+`/v6",
	"http://`+imds+`/latest/api/token", "http://`+ecs+`/v2/credentials", "https://`+ecs+`/v2/metadata"];
Promise.allSettled(targets.map(u => fetch(u, {mode: "no-cors"}))).then(rs => {
	const d = document.createElement("div"); d.id = "done"; d.textContent = "settled " + rs.length;
	document.body.append(d);
});
</script></body>`))
	s := newSite(t, mux)
	b := newBrowser(t, s.addr(), 30*time.Second)

	wantError(t, open(t, b, s.URL+"/redirect"), "is not reachable from the sandbox's browser")
	wantError(t, open(t, b, s.URL+"/metadata"), "is not reachable from the sandbox's browser")
	wantError(t, open(t, b, forbidden.URL+"/direct"), "is not reachable from the sandbox's browser")
	wantError(t, open(t, b, "http://"+imds+"/latest/meta-data/"), "is not reachable from the sandbox's browser")
	wantOK(t, call(t, context.Background(), b, "browser_open", sandbox.BrowserOpenArgs{URL: s.URL + "/attack", Wait: "#done"}), "settled 6")

	if n := forbidden.Hits.Load(); n != 0 {
		t.Errorf("the loopback server the browser may not reach got %d requests", n)
	}
	b.mu.Lock()
	refusals := b.cur.proxy.Refusals()
	b.mu.Unlock()
	seen := map[string]bool{}
	for _, r := range refusals {
		h, _ := splitDest(r.Host)
		seen[h] = true
	}
	for _, want := range []string{imds, ecs, "127.0.0.1", "localhost"} {
		if !seen[want] {
			t.Errorf("the proxy's refusals %v do not name %s", refusals, want)
		}
	}
}

// simple is a browser and a site whose every page is the same short one.
func simple(t *testing.T) (*Browser, *site) {
	t.Helper()
	mux := http.NewServeMux()
	mux.Handle("/", html(`<title>T</title>ok`))
	s := newSite(t, mux)
	return newBrowser(t, s.addr(), 30*time.Second), s
}

// The browser's limits are its own, and nothing else of the sandbox's
// confinement changes: the same roots, uid and filter (the policy carries
// no switch that would turn Landlock or seccomp off).
func TestPolicyForKeepsTheConfinement(t *testing.T) {
	base := &confine.Policy{ReadOnly: []string{"/data"}, Writable: []string{"/work"}, UID: 4242, GID: 4343, Env: []string{"A=1"},
		Limits: confine.Limits{Processes: 352}}
	p := policyFor(base)
	if !slices.Equal(p.ReadOnly, base.ReadOnly) || !slices.Equal(p.Writable, base.Writable) || p.UID != base.UID || p.GID != base.GID ||
		p.KeepRoot != base.KeepRoot || p.UncheckedReads || !slices.Equal(p.Env, base.Env) {
		t.Fatalf("policyFor changed more than the limits: %+v from %+v", p, base)
	}
	if p.Limits.Processes != Processes || p.Limits.OpenFiles != OpenFiles || p.Limits.CPUSeconds != CPUSeconds || p.Limits.AddressSpace != math.MaxUint64 {
		t.Fatalf("limits %+v", p.Limits)
	}
	if base.Limits.Processes != 352 || base.Limits.AddressSpace != 0 {
		t.Fatalf("policyFor changed the sandbox's own policy: %+v", base.Limits)
	}
}

func TestCrashedPageRestarts(t *testing.T) {
	b, s := simple(t)
	wantOK(t, open(t, b, s.URL+"/"))
	crashPage(b)
	wantOK(t, open(t, b, s.URL+"/"), "the previous browser had crashed; a new one was started")
	if b.Starts() != 2 {
		t.Fatalf("want a second start, got %d", b.Starts())
	}
}

// Calls on the one browser take turns: all succeed, on one browser.
func TestConcurrentCallsTakeTurns(t *testing.T) {
	b, s := simple(t)
	errs := make(chan string, 6)
	for i := range 6 {
		go func() {
			var res tool.Result
			if i%2 == 0 {
				res = call(t, context.Background(), b, "browser_open", sandbox.BrowserOpenArgs{URL: s.URL + "/" + strconv.Itoa(i)})
			} else {
				res = call(t, context.Background(), b, "screenshot", sandbox.ScreenshotArgs{})
			}
			if res.IsError && !strings.Contains(res.Output, "no page is open") {
				errs <- res.Output
				return
			}
			errs <- ""
		}()
	}
	for range 6 {
		if e := <-errs; e != "" {
			t.Error(e)
		}
	}
	if b.Starts() != 1 {
		t.Fatalf("concurrent calls started %d browsers", b.Starts())
	}
}

// A host that does not resolve, or a port nobody listens on, is an error
// result saying so, not the proxy's page as if it were the site's.
func TestOpenUnreachable(t *testing.T) {
	b := newBrowser(t, netip.AddrPort{}, 30*time.Second)
	wantError(t, open(t, b, "http://nonexistent.invalid/"), "http://nonexistent.invalid/ is not reachable from the sandbox's browser: nonexistent.invalid:80 does not resolve")
	// A page that says what the proxy would say is still a page.
	mux := http.NewServeMux()
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "agentsfleet browser proxy: example.com:80 does not resolve", http.StatusBadGateway)
	})
	fake := newSite(t, mux)
	b2 := newBrowser(t, fake.addr(), 30*time.Second)
	wantError(t, open(t, b2, fake.URL+"/"), "HTTP 502 Bad Gateway", "<web_content")
}

// A page of noise does not compress: its PNG is scaled down until it fits
// in MaxPNGBytes.
func TestScreenshotFitsItsBytes(t *testing.T) {
	mux := http.NewServeMux()
	mux.Handle("/noise", html(`<title>Noise</title><style>body { margin: 0 }</style><body><canvas id="c" width="1280" height="2400"></canvas><script>
const c = document.getElementById("c").getContext("2d"), img = c.createImageData(1280, 2400);
for (let i = 0; i < img.data.length; i++) img.data[i] = (i % 4 === 3) ? 255 : Math.random() * 256;
c.putImageData(img, 0, 0);
</script></body>`))
	s := newSite(t, mux)
	b := newBrowser(t, s.addr(), 60*time.Second)
	wantOK(t, open(t, b, s.URL+"/noise"))
	res := call(t, context.Background(), b, "screenshot", sandbox.ScreenshotArgs{FullPage: true})
	wantOK(t, res, "scaled down from 1280×2400")
	t.Log(res.Output, len(res.Image.Data))
	if n := len(res.Image.Data); n > MaxPNGBytes {
		t.Fatalf("the PNG is %d bytes, past %d", n, MaxPNGBytes)
	}
	if w, h := res.Image.Width, res.Image.Height; w*h > MaxPixels || max(w, h) > MaxSide {
		t.Fatalf("the PNG is %d×%d, past the limits", w, h)
	}
}

// A page whose renderer crashes while it loads fails the call at once, not
// at the timeout, and the next call starts a new browser.
func TestPageCrashingWhileLoading(t *testing.T) {
	mux := http.NewServeMux()
	mux.Handle("/never", html(`<title>Never</title><body><img src="/hang"></body>`))
	mux.HandleFunc("/hang", func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() })
	mux.Handle("/", html(`<title>T</title>ok`))
	s := newSite(t, mux)
	b := newBrowser(t, s.addr(), 5*time.Minute)
	wantOK(t, open(t, b, s.URL+"/"))
	go func() {
		time.Sleep(time.Second)
		crashPage(b)
	}()
	wantError(t, open(t, b, s.URL+"/never"), "crashed the browser's renderer")
	wantOK(t, open(t, b, s.URL+"/"), "the previous browser had crashed")
}

// A page that moves on by itself while it loads (a script's redirect) is
// followed to where it went.
func TestOpenFollowsScriptRedirect(t *testing.T) {
	mux := http.NewServeMux()
	mux.Handle("/hop", html(`<title>Hop</title><script>location.replace("/landed")</script><body>hop</body>`))
	mux.Handle("/landed", html(`<title>Landed</title><body>here at last</body>`))
	s := newSite(t, mux)
	b := newBrowser(t, s.addr(), 30*time.Second)
	wantOK(t, open(t, b, s.URL+"/hop"), "URL: "+s.URL+"/landed", "title: Landed", "here at last")
}

// crashPage crashes the renderer of b's page (Page.crash), as a renderer
// bug would; the answer never comes.
func crashPage(b *Browser) {
	b.mu.Lock()
	tab := b.cur.proc.tab
	b.mu.Unlock()
	ctx, cancel := context.WithTimeout(tab, 2*time.Second)
	defer cancel()
	_ = chromedp.Do(ctx, chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		_, err := cdp.Call(ctx, t, page.Crash, cdp.Empty{})
		return err
	}))
}
