package browser

import (
	"bufio"
	"bytes"
	"context"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentsfleet/agentsfleet/shared/sandbox"
	"github.com/agentsfleet/agentsfleet/shared/sandbox/sandboxtest"
)

// BenchmarkBrowserOpen reports browser_open of a local page, its first
// call (which starts the confined browser) and later ones (navigations of
// the running browser), each as a ratio to `chromium --headless --dump-dom`
// of the same page (a bare, unconfined browser started for that one page;
// also with --headless=new, the browser's mode), measured in the same run; and the peak memory of the sandbox with the
// browser open: sandboxd's (this process's) and every Chromium process's
// VmHWM, summed (an upper bound: shared pages count once per process), and
// their proportional set size now.
func BenchmarkBrowserOpen(b *testing.B) {
	path := chromium(b)
	mux := http.NewServeMux()
	mux.Handle("/", html(`<title>Bench</title><body><h1>A local page</h1><p>`+strings.Repeat("Some text of the page. ", 200)+`</p></body>`))
	s := newSite(b, mux)
	url := s.URL + "/"
	const bare, first, later = 5, 5, 30
	for b.Loop() {
		dumpDOM := func(mode string) func() {
			return func() {
				out, err := exec.Command(path, mode, "--no-sandbox", "--user-data-dir="+b.TempDir(), "--dump-dom", url).Output()
				if err != nil || !bytes.Contains(out, []byte("A local page")) {
					b.Fatalf("chromium %s --dump-dom: %v\n%s", mode, err, out)
				}
			}
		}
		// --headless is this Chromium's default headless mode; the
		// browser runs --headless=new, which starts slower here.
		dump := average(b, bare, dumpDOM("--headless"))
		dumpNew := average(b, bare, dumpDOM("--headless=new"))
		var warm *Browser
		var start time.Duration
		for i := range first {
			if warm != nil {
				_ = warm.Close()
			}
			warm = New(Config{Chromium: path, Timeout: time.Minute, Allow: s.addr()})
			start += average(b, 1, func() {
				if res := open(b, warm, url); res.IsError {
					b.Fatal(res.Output)
				}
			})
			if i == first-1 {
				start /= first
			}
		}
		next := average(b, later, func() {
			if res := open(b, warm, url); res.IsError {
				b.Fatal(res.Output)
			}
		})
		if res := call(b, context.Background(), warm, "screenshot", sandbox.ScreenshotArgs{FullPage: true}); res.IsError {
			b.Fatal(res.Output)
		}
		pids := processesOf(warm.profiles()[0])
		hwm, pss, threads := memory(os.Getpid())
		for _, pid := range pids {
			h, p, n := memory(pid)
			hwm, pss, threads = hwm+h, pss+p, threads+n
		}
		_ = warm.Close()
		sandboxtest.Report(b, "browser/open-local-page", []sandboxtest.Figure{
			{Name: "dump_dom", Value: ms(dump), Unit: "ms"},
			{Name: "first", Value: ms(start), Unit: "ms"},
			{Name: "dump_dom_new", Value: ms(dumpNew), Unit: "ms"},
			{Name: "first_ratio", Value: float64(start) / float64(dump), Unit: "×"},
			{Name: "first_ratio_new", Value: float64(start) / float64(dumpNew), Unit: "×"},
			{Name: "later", Value: ms(next), Unit: "ms"},
			{Name: "later_ratio", Value: float64(next) / float64(dump), Unit: "×"},
			{Name: "chromium_processes", Value: float64(len(pids)), Unit: ""},
			{Name: "threads", Value: float64(threads), Unit: ""},
			{Name: "peak_rss_sum", Value: hwm / 1024, Unit: "MiB"},
			{Name: "pss", Value: pss / 1024, Unit: "MiB"},
		},
			// A browser that starts confined costs about what a bare
			// one-page Chromium of the same mode does; a navigation of the
			// running browser is a small part of it.
			sandboxtest.Target{Name: "first_ratio_new", Max: 1.5},
			sandboxtest.Target{Name: "later_ratio", Max: 0.25},
		)
	}
}

// average is the mean wall time of n runs of f.
func average(b *testing.B, n int, f func()) time.Duration {
	b.Helper()
	t0 := time.Now()
	for range n {
		f()
	}
	return time.Since(t0) / time.Duration(n)
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1e3 }

// memory is process pid's peak resident set (VmHWM) and proportional set
// size now, in KiB, and its threads.
func memory(pid int) (hwm, pss float64, threads int) {
	dir := filepath.Join("/proc", strconv.Itoa(pid))
	hwm = kib(filepath.Join(dir, "status"), "VmHWM:")
	pss = kib(filepath.Join(dir, "smaps_rollup"), "Pss:")
	threads = int(kib(filepath.Join(dir, "status"), "Threads:"))
	return hwm, pss, threads
}

// kib is the number after key in the file name (a /proc file of "key: N
// kB" lines), or 0.
func kib(name, key string) float64 {
	f, err := os.Open(name)
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), key); ok {
			fields := strings.Fields(rest)
			if len(fields) > 0 {
				v, _ := strconv.ParseFloat(fields[0], 64)
				return v
			}
		}
	}
	return 0
}
