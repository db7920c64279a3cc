package web_test

import (
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/agentsfleet/agentsfleet/shared/web"
	"github.com/agentsfleet/agentsfleet/shared/web/wire"
)

// TestCutNeverSplitsASecret: a response whose body is cut at the tool's cap
// with a secret value straddling the cut gives the model no part of it —
// not its first bytes (the screen replaces whole values only, so a prefix
// would pass it), and not the rest on a call that reads on. The straddle is
// tried at every tool's cap and at several offsets: one byte in, half, all
// but one.
func TestCutNeverSplitsASecret(t *testing.T) {
	t.Parallel()
	const mib = 1 << 20
	straddling := func(w http.ResponseWriter, r *http.Request) {
		limit, _ := strconv.Atoi(r.URL.Query().Get("cap"))
		in, _ := strconv.Atoi(r.URL.Query().Get("in"))
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		body := strings.Repeat("x", limit-in) + ghToken + strings.Repeat("y", 4096)
		_, _ = w.Write([]byte(body))
	}
	srv, _, _, f, src := firewallSetup(t)
	srv.Config.Handler = http.HandlerFunc(straddling)
	svc := newService(t, srv, func(c *web.Config) { c.Secrets = src })
	for _, tc := range []struct {
		tool string
		cap  int
	}{
		{wire.ToolHTTPRequest, mib},
		{wire.ToolWebFetchTLS, mib},
		{wire.ToolWebFetch, 4 * mib},
	} {
		for _, in := range []int{1, 2, len(ghToken) / 2, len(ghToken) - 1} {
			t.Run(tc.tool+"/"+strconv.Itoa(in), func(t *testing.T) {
				u := srv.url("api.example.com", "/page?cap="+strconv.Itoa(tc.cap)+"&in="+strconv.Itoa(in))
				res := call(t, svc, tc.tool, map[string]any{"url": u}, f)
				if res.IsError {
					t.Fatalf("error result: %.300s", res.Output)
				}
				if !strings.Contains(res.Output, "cut") {
					t.Fatalf("the result does not say the body was cut: …%s", tail(res.Output))
				}
				for n := 3; n <= len(ghToken); n++ {
					if strings.Contains(res.Output, ghToken[:n]) {
						t.Fatalf("the result holds the first %d bytes of the secret: …%s", n, tail(res.Output))
					}
					if strings.Contains(res.Output, ghToken[len(ghToken)-n:]) {
						t.Fatalf("the result holds the last %d bytes of the secret: …%s", n, tail(res.Output))
					}
				}
			})
		}
	}
}

// TestCutIsNoOracle: a guess the model had echoed at the cut is shown as
// the host sent it, whether or not it is the start of a secret: the cut
// moves only for a whole value, so its place says nothing about a partial
// guess.
func TestCutIsNoOracle(t *testing.T) {
	t.Parallel()
	srv, _, _, f, src := firewallSetup(t)
	srv.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		guess := r.URL.Query().Get("guess")
		_, _ = w.Write([]byte(strings.Repeat("x", 1<<20-len(guess)) + guess + "zzzz"))
	})
	svc := newService(t, srv, func(c *web.Config) { c.Secrets = src })
	right := call(t, svc, wire.ToolHTTPRequest, map[string]any{"url": srv.url("api.example.com", "/?guess="+ghToken[:12])}, f)
	wrong := call(t, svc, wire.ToolHTTPRequest, map[string]any{"url": srv.url("api.example.com", "/?guess=ghp_Q0000000")}, f)
	if len(right.Output) != len(wrong.Output) || !strings.Contains(right.Output, ghToken[:12]) {
		t.Fatalf("a right partial guess answers %d bytes ending …%s; a wrong one %d bytes ending …%s; want the same length, the guess shown",
			len(right.Output), tail(right.Output), len(wrong.Output), tail(wrong.Output))
	}
}

func tail(s string) string { return s[max(0, len(s)-160):] }
