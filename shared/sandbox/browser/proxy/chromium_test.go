package proxy

import (
	"encoding/json"
	"fmt"
	"html"
	"io"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/agentsfleet/agentsfleet/shared/web/egress"
)

// chromium finds a Chromium to drive, or skips the test saying how to
// install one.
func chromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Skip("no Chromium on PATH (chromium, chromium-browser or google-chrome): install it with `apt-get install chromium`, or run `make tools` as root")
	return ""
}

// forbidden is a loopback web server the page must never reach: it
// listens on the same port on 127.0.0.1 and, where the machine has IPv6,
// on ::1, counts the connections it accepts and records the paths asked.
type forbidden struct {
	port  uint16
	v6    bool
	conns atomic.Int64
	mu    sync.Mutex
	paths []string
}

func (f *forbidden) reached() (int64, []string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.conns.Load(), slices.Clone(f.paths)
}

func newForbidden(t *testing.T) *forbidden {
	t.Helper()
	f := &forbidden{}
	ln4, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	f.port = netip.MustParseAddrPort(ln4.Addr().String()).Port()
	lns := []net.Listener{ln4}
	if ln6, err := net.Listen("tcp6", fmt.Sprintf("[::1]:%d", f.port)); err == nil {
		lns = append(lns, ln6)
		f.v6 = true
	}
	for _, ln := range lns {
		srv := &http.Server{
			Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				f.mu.Lock()
				f.paths = append(f.paths, r.URL.Path)
				f.mu.Unlock()
				w.Header().Set("Access-Control-Allow-Origin", "*")
				io.WriteString(w, "the forbidden server answered")
			}),
			ConnState: func(_ net.Conn, s http.ConnState) {
				if s == http.StateNew {
					f.conns.Add(1)
				}
			},
		}
		go srv.Serve(ln)
		t.Cleanup(func() { srv.Close() })
	}
	return f
}

// udpCounter counts datagrams on loopback: the STUN server a page points
// WebRTC at.
func udpCounter(t *testing.T) (uint16, *atomic.Int64) {
	t.Helper()
	var n atomic.Int64
	c, err := net.ListenPacket("udp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	go func() {
		buf := make([]byte, 2048)
		for {
			if _, _, err := c.ReadFrom(buf); err != nil {
				return
			}
			n.Add(1)
		}
	}()
	return netip.MustParseAddrPort(c.LocalAddr().String()).Port(), &n
}

// attack is one way a page tries to reach a destination.
type attack struct {
	Kind string `json:"kind"` // iframe, redirect302, meta, location, fetch, xhr, ws, img, worker, eventsource
	URL  string `json:"url"`
	Path string `json:"path"` // the path it asks for, so the control run can tell it arrived
}

// attacks are every way the page tries to reach each base URL.
func attacks(bases map[string]string) []attack {
	var out []attack
	for _, name := range slices.Sorted(maps.Keys(bases)) {
		base := bases[name]
		for _, kind := range []string{"iframe", "redirect302", "meta", "location", "fetch", "xhr", "ws", "img", "worker", "eventsource"} {
			path := "/" + kind + "-" + name
			u := base + path
			if kind == "ws" {
				u = "ws" + strings.TrimPrefix(base, "http") + path
			}
			out = append(out, attack{Kind: kind, URL: u, Path: path})
		}
	}
	return out
}

// page is the attacking page: it tries every attack at once, waits for
// each to end (its load, error or close event, or 8 seconds), then posts
// what happened to /done. turn and stun are WebRTC's servers to try.
const page = `<!doctype html>
<html><head><title>attacker</title>
<link rel="preconnect" href="{{PRECONNECT}}">
<link rel="dns-prefetch" href="//prefetch.example">
</head><body>
<img id="ok" src="/ok.png">
<script>
const attacks = {{ATTACKS}};
const webrtc = {{WEBRTC}};
const give = (p) => Promise.race([p, new Promise(r => setTimeout(() => r("gave up"), 8000))]);
function frame(src, loads) {
  return new Promise(resolve => {
    const f = document.createElement("iframe");
    let n = 0;
    f.onload = () => { if (++n >= loads) resolve("loaded " + n); };
    f.src = src;
    document.body.appendChild(f);
  });
}
function run(a) {
  const via = (p) => "/" + p + "?to=" + encodeURIComponent(a.url);
  switch (a.kind) {
  case "iframe": return frame(a.url, 1);
  case "redirect302": return frame(via("r302"), 1);
  case "meta": return frame(via("meta"), 2);
  case "location": return frame(via("location"), 2);
  case "fetch": return fetch(a.url).then(r => "status " + r.status, e => "error " + e);
  case "xhr": return new Promise(resolve => {
    const x = new XMLHttpRequest();
    x.onloadend = () => resolve("status " + x.status);
    x.open("GET", a.url); x.send();
  });
  case "ws": return new Promise(resolve => {
    const s = new WebSocket(a.url);
    s.onopen = () => { resolve("open"); s.close(); };
    s.onerror = () => resolve("error");
  });
  case "img": return new Promise(resolve => {
    const i = new Image();
    i.onload = () => resolve("loaded"); i.onerror = () => resolve("error");
    i.src = a.url;
  });
  case "eventsource": return new Promise(resolve => {
    const e = new EventSource(a.url);
    e.onopen = () => { resolve("open"); e.close(); };
    e.onerror = () => { resolve("error"); e.close(); };
  });
  case "worker": return new Promise(resolve => {
    const w = new Worker(via("worker.js"));
    w.onmessage = (e) => resolve(e.data); w.onerror = () => resolve("error");
  });
  }
}
async function rtc() {
  if (!webrtc) return "skipped";
  const pc = new RTCPeerConnection({iceServers: [
    {urls: webrtc.stun},
    {urls: webrtc.turn, username: "u", credential: "p"},
  ]});
  pc.createDataChannel("x");
  const done = new Promise(r => { pc.onicegatheringstatechange = () => { if (pc.iceGatheringState === "complete") r("complete"); }; });
  await pc.setLocalDescription(await pc.createOffer());
  return done;
}
async function transport() {
  if (!webrtc || typeof WebTransport === "undefined") return "no WebTransport";
  try {
    const wt = new WebTransport(webrtc.webtransport);
    await wt.ready;
    return "ready";
  } catch (e) { return "error " + e; }
}
async function sw() {
  if (!navigator.serviceWorker) return "no service workers";
  try {
    const reg = await navigator.serviceWorker.register("/sw.js?to=" + encodeURIComponent({{SWURL}}));
    await new Promise(r => { const s = reg.installing || reg.waiting || reg.active; if (!s || s.state === "activated") return r(); s.onstatechange = () => { if (s.state === "activated" || s.state === "redundant") r(); }; });
    return "registered";
  } catch (e) { return "error " + e; }
}
(async () => {
  const own = await fetch("/ok.txt").then(r => r.text(), e => "error " + e);
  const results = await Promise.all(attacks.map(a => give(run(a)).then(r => [a.kind + " " + a.url, r])));
  results.push(["webrtc", await give(rtc())]);
  results.push(["webtransport", await give(transport())]);
  results.push(["serviceworker", await give(sw())]);
  results.push(["own fetch", own]);
  results.push(["own img", document.getElementById("ok").complete && document.getElementById("ok").naturalWidth > 0 ? "loaded" : "not loaded"]);
  await fetch("/done", {method: "POST", body: JSON.stringify(results)});
})();
</script></body></html>`

// onePixel is a 1×1 PNG.
var onePixel = []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01\x00\x00\x00\x01\x08\x06\x00\x00\x00\x1f\x15\xc4\x89\x00\x00\x00\rIDATx\x9cc\xf8\x0f\x00\x00\x01\x01\x00\x05\x18\xd8N\x00\x00\x00\x00IEND\xaeB`\x82")

// site is the page's own server, the one address Allow admits. It serves
// the attacking page and the redirecting pages the attacks go through,
// and hands the page's report to done.
func site(t *testing.T, attacks []attack, webrtc any, swURL, preconnect string) (*httptest.Server, chan [][2]string) {
	t.Helper()
	done := make(chan [][2]string, 1)
	atk, _ := json.Marshal(attacks)
	rtc, _ := json.Marshal(webrtc)
	sw, _ := json.Marshal(swURL)
	body := strings.NewReplacer("{{ATTACKS}}", string(atk), "{{WEBRTC}}", string(rtc), "{{SWURL}}", string(sw),
		"{{PRECONNECT}}", html.EscapeString(preconnect)).Replace(page)
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		io.WriteString(w, body)
	})
	mux.HandleFunc("GET /ok.txt", func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "own") })
	mux.HandleFunc("GET /ok.png", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "image/png")
		w.Write(onePixel)
	})
	mux.HandleFunc("GET /r302", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, r.URL.Query().Get("to"), http.StatusFound)
	})
	mux.HandleFunc("GET /meta", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, `<!doctype html><meta http-equiv="refresh" content="0;url=%s">`, html.EscapeString(r.URL.Query().Get("to")))
	})
	mux.HandleFunc("GET /location", func(w http.ResponseWriter, r *http.Request) {
		to, _ := json.Marshal(r.URL.Query().Get("to"))
		fmt.Fprintf(w, `<!doctype html><script>onload = () => { location = %s; };</script>`, to)
	})
	mux.HandleFunc("GET /worker.js", func(w http.ResponseWriter, r *http.Request) {
		to, _ := json.Marshal(r.URL.Query().Get("to"))
		w.Header().Set("Content-Type", "text/javascript")
		fmt.Fprintf(w, `fetch(%s).then(r => postMessage("status " + r.status), e => postMessage("error " + e));`, to)
	})
	mux.HandleFunc("GET /sw.js", func(w http.ResponseWriter, r *http.Request) {
		to, _ := json.Marshal(r.URL.Query().Get("to"))
		w.Header().Set("Content-Type", "text/javascript")
		fmt.Fprintf(w, `self.addEventListener("install", e => e.waitUntil(fetch(%s).catch(() => {})));`, to)
	})
	mux.HandleFunc("POST /done", func(w http.ResponseWriter, r *http.Request) {
		var got [][2]string
		b, _ := io.ReadAll(r.Body)
		var raw [][]any
		if err := json.Unmarshal(b, &raw); err != nil {
			t.Errorf("the page's report %q: %v", b, err)
		}
		for _, kv := range raw {
			got = append(got, [2]string{fmt.Sprint(kv[0]), fmt.Sprint(kv[1])})
		}
		select {
		case done <- got:
		default:
		}
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv, done
}

// runChromium opens url in a headless Chromium with extra flags and
// returns the page's report, or fails t if none comes within two minutes.
func runChromium(t *testing.T, bin, url string, done chan [][2]string, flags ...string) [][2]string {
	t.Helper()
	args := append([]string{
		"--headless=new", "--no-sandbox", "--user-data-dir=" + t.TempDir(),
		"--no-first-run", "--disable-gpu", "--disable-dev-shm-usage", "--remote-debugging-pipe",
	}, flags...)
	cmd := exec.Command(bin, append(args, url)...)
	// --remote-debugging-pipe reads commands on fd 3 and writes on fd 4;
	// the test sends none, and the pipes keep Chromium from exiting.
	cmdR, cmdW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.ExtraFiles = []*os.File{cmdR, outW}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", bin, err)
	}
	cmdR.Close()
	outW.Close()
	go io.Copy(io.Discard, outR)
	stop := func() {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) // Chromium and the processes it started
		cmd.Wait()
		cmdW.Close()
		outR.Close()
	}
	defer stop()
	select {
	case got := <-done:
		return got
	case <-time.After(2 * time.Minute):
		stop()
		t.Fatalf("the page sent no report within two minutes; Chromium said:\n%s", stderr.String())
		return nil
	}
}

// TestChromiumCannotReachLoopbackOrMetadata opens, in a real headless
// Chromium started with ChromiumFlags, a page that tries every way a page
// has to reach a loopback server (redirect, meta refresh, location, iframe,
// fetch, XHR, WebSocket, img, worker, EventSource, service worker,
// preconnect, WebRTC over STUN and TURN, WebTransport over QUIC) as
// 127.0.0.1, localhost and [::1], and the metadata addresses. The loopback server must see no connection at all. The same
// page without the proxy reaches it by every one of those ways, which shows
// that the page's attacks are real.
func TestChromiumCannotReachLoopbackOrMetadata(t *testing.T) {
	bin := chromium(t)
	f := newForbidden(t)
	turn := newWatched(t, "127.0.0.1:0") // WebRTC's TURN server over TCP
	turnConns := &turn.conns
	stunPort, stunPackets := udpCounter(t)
	quicPort, quicPackets := udpCounter(t) // WebTransport's server, over QUIC
	bases := map[string]string{
		"v4":        fmt.Sprintf("http://127.0.0.1:%d", f.port),
		"localhost": fmt.Sprintf("http://localhost:%d", f.port),
	}
	if f.v6 {
		bases["v6"] = fmt.Sprintf("http://[::1]:%d", f.port)
	}
	webrtc := map[string]string{
		"stun":         fmt.Sprintf("stun:127.0.0.1:%d", stunPort),
		"turn":         fmt.Sprintf("turn:127.0.0.1:%d?transport=tcp", turn.port()),
		"webtransport": fmt.Sprintf("https://127.0.0.1:%d/webtransport", quicPort),
	}
	loopbackAttacks := attacks(bases)
	swURL := bases["v4"] + "/serviceworker-v4"
	preconnect := bases["v4"] + "/"

	t.Run("without the proxy the page reaches it", func(t *testing.T) {
		srv, done := site(t, loopbackAttacks, webrtc, swURL, preconnect)
		report := runChromium(t, bin, srv.URL+"/", done)
		if testing.Verbose() {
			t.Logf("the page's report: %v", report)
		}
		_, paths := f.reached()
		for _, a := range append(loopbackAttacks, attack{Kind: "serviceworker", URL: swURL, Path: "/serviceworker-v4"}) {
			if !slices.Contains(paths, a.Path) {
				t.Errorf("without the proxy, %s %s did not arrive (report %v)", a.Kind, a.URL, report)
			}
		}
		if turnConns.Load() == 0 {
			t.Errorf("without the proxy, WebRTC did not reach the TURN server over TCP")
		}
		if stunPackets.Load() == 0 {
			t.Errorf("without the proxy, WebRTC sent no STUN datagram")
		}
		if quicPackets.Load() == 0 {
			t.Errorf("without the proxy, WebTransport sent no QUIC datagram")
		}
	})
	if t.Failed() {
		t.FailNow()
	}
	conns0, paths0 := f.reached()
	turn0, stun0, quic0 := turnConns.Load(), stunPackets.Load(), quicPackets.Load()

	metadata := attacks(map[string]string{"imds": "http://169.254.169.254", "ecs": "http://169.254.170.2"})
	srv, done := site(t, append(slices.Clone(loopbackAttacks), metadata...), webrtc, swURL, preconnect)
	allow := netip.MustParseAddrPort(srv.Listener.Addr().String())
	var logged strings.Builder
	p := newProxy(t, Config{Allow: allow, Logger: slog.New(slog.NewTextHandler(&logged, nil)), Resolver: egress.Hosts{
		"localhost": {netip.MustParseAddr("127.0.0.1"), netip.MustParseAddr("::1")},
	}})
	report := runChromium(t, bin, srv.URL+"/", done, ChromiumFlags(p.Addr())...)

	conns, paths := f.reached()
	if n := conns - conns0; n != 0 {
		t.Errorf("through the proxy, the forbidden loopback server got %d connections, want 0 (paths %v)", n, paths[len(paths0):])
	}
	if n := turnConns.Load() - turn0; n != 0 {
		t.Errorf("through the proxy, WebRTC reached the TURN server %d times, want 0", n)
	}
	if n := stunPackets.Load() - stun0; n != 0 {
		t.Errorf("through the proxy, WebRTC sent %d STUN datagrams, want 0", n)
	}
	if n := quicPackets.Load() - quic0; n != 0 {
		t.Errorf("through the proxy, WebTransport sent %d QUIC datagrams, want 0", n)
	}
	results := map[string]string{}
	for _, kv := range report {
		results[kv[0]] = kv[1]
	}
	// The page itself came through the proxy, and so did its own requests.
	if results["own fetch"] != "own" || results["own img"] != "loaded" {
		t.Errorf("the page's own fetch and img through the proxy = %q, %q; want \"own\", \"loaded\"", results["own fetch"], results["own img"])
	}
	refused := map[string]string{}
	for _, r := range p.Refusals() {
		refused[r.Host] = r.Addr + " " + r.Reason
	}
	wantRefused := []string{
		fmt.Sprintf("127.0.0.1:%d", f.port),
		fmt.Sprintf("localhost:%d", f.port),
		"169.254.169.254:80",
		"169.254.170.2:80",
	}
	if f.v6 {
		wantRefused = append(wantRefused, fmt.Sprintf("[::1]:%d", f.port))
	}
	for _, h := range wantRefused {
		if _, ok := refused[h]; !ok {
			t.Errorf("Refusals has nothing for %s; it has %v", h, refused)
		}
	}
	for _, h := range []string{"169.254.169.254:80", "169.254.170.2:80"} {
		// Refused by the check on the literal address, before any dial.
		if got := refused[h]; !strings.HasPrefix(got, h+" refused: ") || !strings.Contains(got, "cloud metadata") {
			t.Errorf("refusal of %s = %q, want it refused at that address as a cloud metadata address", h, got)
		}
	}
	if t.Failed() || testing.Verbose() {
		p.Close() // the log is complete
		t.Logf("the page's report: %v", report)
		t.Logf("the proxy's log:\n%s", logged.String())
	}
}
