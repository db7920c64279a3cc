package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"image/png"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/agentsfleet/agentsfleet/shared/sandbox"
	sandboxclient "github.com/agentsfleet/agentsfleet/shared/sandbox/client"
	"github.com/agentsfleet/agentsfleet/shared/sandbox/sandboxtest"
	"github.com/agentsfleet/agentsfleet/shared/sandbox/server"
	"github.com/agentsfleet/agentsfleet/shared/sandbox/wire"
	"github.com/agentsfleet/agentsfleet/shared/tool"
	"github.com/agentsfleet/agentsfleet/shared/web/egress"
)

// chromium is the machine's Chromium, or skips t saying how to get one.
func chromium(t *testing.T) string {
	t.Helper()
	path, err := sandbox.FindChromium()
	if err != nil {
		t.Skipf("the browser tests need a real Chromium: %v", err)
	}
	return path
}

func newCounted(t *testing.T, h http.Handler) *sandboxtest.Server { return sandboxtest.NewServer(t, h) }

func page(body string) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = io.WriteString(w, body)
	}
}

// TestBrowserThroughSandboxd drives the browser as the runner does: the
// sandbox client, sandboxd's HTTP handler, real Chromium. A page's attempts
// on a loopback server, on sandboxd itself and on the metadata addresses
// (by redirect, iframe and script) reach none of them.
func TestBrowserThroughSandboxd(t *testing.T) {
	path := chromium(t)
	f := newFixture(t)
	forbidden := newCounted(t, page("<title>forbidden</title>secret"))

	// sandboxd, counting the requests that carry no bearer token: a page's.
	var anonymous atomic.Int64
	var sandboxdURL string
	mux := http.NewServeMux()
	mux.Handle("/blue", page(`<title>Blue</title><style>html, body { margin: 0; background: #3366cc; }</style>blue page`))
	mux.HandleFunc("/hang", func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() })
	mux.Handle("/to-forbidden", http.RedirectHandler(forbidden.URL+"/", http.StatusFound))
	mux.Handle("/to-metadata", http.RedirectHandler("http://169.254.169.254/latest/meta-data/", http.StatusFound))
	mux.HandleFunc("/attack", func(w http.ResponseWriter, r *http.Request) {
		targets := []string{forbidden.URL + "/fetched", sandboxdURL + "/healthz", sandboxdURL + wire.ToolPath("bash"),
			"http://169.254.169.254/latest/meta-data/", "http://169.254.170.2/v2/credentials", "http://127.0.0.1:" + portOf(forbidden.URL) + "/direct"}
		js, _ := json.Marshal(targets)
		page(`<title>Attack</title><body>
<iframe src="`+forbidden.URL+`/framed"></iframe><iframe src="`+sandboxdURL+`/healthz"></iframe>
<img src="http://169.254.169.254/latest/meta-data/iam/">
<script>
Promise.allSettled(`+string(js)+`.map(u => fetch(u, {mode: "no-cors"}))).then(rs => {
	const d = document.createElement("div"); d.id = "done";
	d.textContent = "settled: " + rs.map(r => r.status).join(",");
	document.body.append(d);
});
</script></body>`)(w, r)
	})
	site := newCounted(t, mux)
	allow, err := egress.AllowFromEnv(func(name string) string {
		if name == egress.AllowEnv {
			return strings.TrimPrefix(site.URL, "http://")
		}
		return ""
	}, slog.Default())
	if err != nil {
		t.Fatal(err)
	}
	tools := server.Tools(server.Config{Roots: f.roots, Timeout: 30 * time.Second, Browser: path, BrowserAllow: allow})
	defer closeTools(tools)
	srv, err := server.New(server.Options{Token: testToken, Tools: tools, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	sd := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get(wire.AuthorizationHeader) == "" {
			anonymous.Add(1)
		}
		srv.ServeHTTP(w, r)
	}))
	defer sd.Close()
	sandboxdURL = sd.URL
	c, err := sandboxclient.New(sandboxclient.Config{URL: sd.URL, Token: testToken})
	if err != nil {
		t.Fatal(err)
	}
	// The calls are a child agent's: its browser closes with it.
	actx := sandboxclient.WithAgent(context.Background(), "child-7")
	callTool := func(name string, args any) tool.Result {
		t.Helper()
		raw, _ := json.Marshal(args)
		res, err := c.Call(actx, name, raw, "")
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		return res
	}

	if res := callTool("screenshot", sandbox.ScreenshotArgs{}); !res.IsError || !strings.Contains(res.Output, "no page is open") {
		t.Fatalf("screenshot before any open = %+v", res)
	}
	res := callTool("browser_open", sandbox.BrowserOpenArgs{URL: site.URL + "/blue"})
	if res.IsError || !strings.Contains(res.Output, "blue page") {
		t.Fatalf("browser_open = %+v", res)
	}
	res = callTool("screenshot", sandbox.ScreenshotArgs{})
	if res.IsError || res.Image == nil || res.Image.MediaType != tool.ImagePNG {
		t.Fatalf("screenshot = %+v", res)
	}
	img, err := png.Decode(bytes.NewReader(res.Image.Data))
	if err != nil {
		t.Fatal(err)
	}
	if r, g, b, _ := img.At(res.Image.Width/2, res.Image.Height/2).RGBA(); r>>8 != 0x33 || g>>8 != 0x66 || b>>8 != 0xcc {
		t.Fatalf("the screenshot's middle is #%02x%02x%02x, want #3366cc", r>>8, g>>8, b>>8)
	}

	// The call's own tool timeout (wire.ToolTimeoutHeader) bounds a page
	// that never loads.
	raw, _ := json.Marshal(sandbox.BrowserOpenArgs{URL: site.URL + "/hang"})
	res, err = c.Call(sandboxclient.WithToolTimeout(actx, 2*time.Second), "browser_open", raw, "")
	if err != nil || !res.IsError || !strings.Contains(res.Output, "the page did not finish loading within 2 s") {
		t.Fatalf("browser_open of a page that never loads = %+v, %v", res, err)
	}

	for _, u := range []string{forbidden.URL + "/", site.URL + "/to-forbidden", sd.URL + "/healthz", site.URL + "/to-metadata", "http://169.254.170.2/v2/credentials"} {
		res := callTool("browser_open", sandbox.BrowserOpenArgs{URL: u})
		if !res.IsError || !strings.Contains(res.Output, "is not reachable from the sandbox's browser") {
			t.Errorf("browser_open %s = %+v, want it refused", u, res)
		}
	}
	res = callTool("browser_open", sandbox.BrowserOpenArgs{URL: site.URL + "/attack", Wait: "#done"})
	if res.IsError || !strings.Contains(res.Output, "settled: ") {
		t.Fatalf("the attack page = %+v", res)
	}
	if n := forbidden.Hits.Load(); n != 0 {
		t.Errorf("a loopback server the browser may not reach got %d requests", n)
	}
	if n := anonymous.Load(); n != 0 {
		t.Errorf("sandboxd got %d requests from the browser", n)
	}

	// The browser closes with the child agent that started it, not with
	// another.
	ctx := context.Background()
	pids := browserProcesses(os.Getpid())
	if len(pids) == 0 {
		t.Fatal("found no Chromium process under this test")
	}
	if n, err := c.CloseSessions(ctx, "child-8"); err != nil || n != 0 {
		t.Fatalf("closing another agent = %d, %v; want 0", n, err)
	}
	if len(sandboxtest.Left(pids)) != len(pids) {
		t.Fatal("closing another agent ended Chromium processes")
	}
	if n, err := c.CloseSessions(ctx, "child-7"); err != nil || n != 1 {
		t.Fatalf("closing the agent that started the browser = %d, %v; want 1", n, err)
	}
	if left := sandboxtest.LeftAfter(pids, 10*time.Second); len(left) > 0 {
		t.Fatalf("Chromium processes outlived their agent: %v", left)
	}
}

// TestServeBrowserFlag runs sandboxd serve --browser with the test allowance
// in its environment, as launch/local and the image do, and checks that
// SIGTERM leaves no Chromium process behind.
func TestServeBrowserFlag(t *testing.T) {
	path := chromium(t)
	f := newFixture(t)
	site := newCounted(t, page(`<title>Served</title>through sandboxd serve`))
	p := startServe(t, []string{wire.TokenEnv + "=" + testToken, egress.AllowEnv + "=" + strings.TrimPrefix(site.URL, "http://")},
		"--workdir", f.work, "--idle-timeout", "0", "--browser", path)
	c := p.client()
	res := c.result(t, "browser_open", `{"url":"`+site.URL+`/"}`)
	if res.IsError || !strings.Contains(res.Output, "through sandboxd serve") {
		t.Fatalf("browser_open = %+v\n%s", res, p.log())
	}
	reported := false
	for _, e := range res.Egress {
		reported = reported || (e.Tool == "browser_open" && e.Host == "127.0.0.1" && e.Status == http.StatusOK && e.BytesIn > 0)
	}
	if !reported {
		t.Errorf("browser_open's egress %+v has no entry for the page it loaded", res.Egress)
	}
	pids := browserProcesses(p.cmd.Process.Pid)
	if len(pids) == 0 {
		t.Fatal("found no Chromium process under sandboxd")
	}
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if status := p.waitExit(t, 30*time.Second); status != 0 {
		t.Fatalf("after SIGTERM: exit %d\n%s", status, p.log())
	}
	if left := sandboxtest.LeftAfter(pids, 10*time.Second); len(left) > 0 {
		t.Fatalf("Chromium processes outlived sandboxd: %v", left)
	}

	for _, bad := range []string{"chromium", filepath.Join(f.base, "missing"), f.base} {
		cmd := sandboxd(t, "serve", "--listen", "127.0.0.1:0", "--workdir", f.work, "--browser", bad)
		cmd.Env = append(os.Environ(), wire.TokenEnv+"="+testToken)
		out, _ := cmd.CombinedOutput()
		if cmd.ProcessState.ExitCode() != server.ExitUsage || !strings.Contains(string(out), "--browser") {
			t.Errorf("serve --browser %s: exit %d, %s", bad, cmd.ProcessState.ExitCode(), out)
		}
	}
}

// TestNoBrowser: without --browser the display tools say the sandbox has
// none, and how to get one.
func TestNoBrowser(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	tools := server.Tools(server.Config{Roots: f.roots})
	defer closeTools(tools)
	for _, name := range []string{"browser_open", "screenshot"} {
		res, err := server.Call(context.Background(), tools, name, []byte(`{"url":"https://example.com/"}`))
		if name == "screenshot" {
			res, err = server.Call(context.Background(), tools, name, []byte(`{}`))
		}
		if err != nil || !res.IsError || res.Output != sandbox.NoBrowser {
			t.Errorf("%s without a browser = %+v, %v", name, res, err)
		}
	}
}

func closeTools(tools []tool.Tool) int {
	n := 0
	for _, tl := range tools {
		if c, ok := tl.(io.Closer); ok {
			_ = c.Close()
			n++
		}
	}
	return n
}

func portOf(u string) string { return u[strings.LastIndex(u, ":")+1:] }

// browserProcesses lists the Chromium processes (those with a browser
// profile on their command line) descending from root.
func browserProcesses(root int) []int { return sandboxtest.Processes(root, "agentsfleet-browser-") }
