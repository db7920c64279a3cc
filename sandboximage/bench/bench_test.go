package bench_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/agentsfleet/agentsfleet/sandboximage"
	"github.com/agentsfleet/agentsfleet/shared/sandbox"
	"github.com/agentsfleet/agentsfleet/shared/sandbox/sandboxtest"
	"github.com/agentsfleet/agentsfleet/shared/sandbox/server"
	"github.com/agentsfleet/agentsfleet/shared/sandbox/shell"
	"github.com/agentsfleet/agentsfleet/shared/sandbox/wire"
	"github.com/agentsfleet/agentsfleet/shared/tool"
)

const (
	treeFiles   = 50_000
	treeDirs    = 200
	needle      = "NEEDLE_7f3a"
	bigFileSize = 1 << 30
	token       = "bench-token-0123456789abcdef"
)

// fixtureDir is the cache of the fixtures, world-readable so that confined
// processes (uid 65534 when the benchmarks run as root) can read them.
func fixtureDir(b *testing.B) string {
	b.Helper()
	dir := filepath.Join(os.TempDir(), "agentsfleet-bench")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		b.Fatal(err)
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		b.Fatal(err)
	}
	return dir
}

var fixtureMu sync.Mutex

// once makes name under the fixture dir with make, unless a finished copy
// is there already.
func once(b *testing.B, name string, make func(path string) error) string {
	b.Helper()
	fixtureMu.Lock()
	defer fixtureMu.Unlock()
	path := filepath.Join(fixtureDir(b), name)
	done := path + ".done"
	if _, err := os.Stat(done); err == nil {
		return path
	}
	os.RemoveAll(path)
	start := time.Now()
	if err := make(path); err != nil {
		b.Fatalf("make fixture %s: %v", name, err)
	}
	if err := os.WriteFile(done, nil, 0o644); err != nil {
		b.Fatal(err)
	}
	b.Logf("made fixture %s in %v", name, time.Since(start).Round(time.Millisecond))
	return path
}

// tree is 50,000 text files of about 1.5 KB in 200 directories; 50 of them
// hold the needle, 40 are *.md.
func tree(b *testing.B) string {
	return once(b, "tree", writeTree)
}

func writeTree(root string) error {
	line := "the quick brown fox jumps over the lazy dog 0123456789\n"
	body := strings.Repeat(line, 28)
	for i := range treeFiles {
		dir := filepath.Join(root, fmt.Sprintf("d%03d", i%treeDirs), fmt.Sprintf("s%d", i%5))
		if i < treeDirs*5 {
			if err := os.MkdirAll(dir, 0o755); err != nil {
				return err
			}
		}
		ext := ".txt"
		if i%1250 == 0 {
			ext = ".md"
		}
		content := body
		if i%1000 == 7 {
			content = body + "here is the " + needle + " we look for\n"
		}
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("f%05d%s", i, ext)), []byte(content), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// bigFile is 1 GiB of numbered text lines; it returns the path and the
// number of lines.
func bigFile(b *testing.B) (string, int) {
	path := once(b, "big.txt", func(path string) error {
		f, err := os.Create(path)
		if err != nil {
			return err
		}
		w := bufio.NewWriterSize(f, 4<<20)
		var n int64
		for i := 1; n < bigFileSize; i++ {
			k, _ := fmt.Fprintf(w, "line %09d: lorem ipsum dolor sit amet, consectetur adipiscing elit, sed do eiusmod\n", i)
			n += int64(k)
		}
		if err := w.Flush(); err != nil {
			return err
		}
		return f.Close()
	})
	info, err := os.Stat(path)
	if err != nil {
		b.Fatal(err)
	}
	// Every line has the same length.
	const lineLen = len("line 000000001: lorem ipsum dolor sit amet, consectetur adipiscing elit, sed do eiusmod\n")
	return path, int(info.Size() / int64(lineLen))
}

// sandboxdBinary builds sandboxd once per run.
func sandboxdBinary(b *testing.B) string {
	b.Helper()
	fixtureMu.Lock()
	defer fixtureMu.Unlock()
	bin := filepath.Join(fixtureDir(b), "bin", "sandboxd")
	goBin, err := exec.LookPath("go")
	if err != nil {
		b.Skip("no go tool to build sandboxd")
	}
	// As the Dockerfile builds it (sandboximage.BuildFlags): stripped and
	// static. A dynamic build costs the trampoline a run of the dynamic
	// loader at every confined command.
	cmd := exec.Command(goBin, append(append([]string{"build"}, sandboximage.BuildFlags...), "-o", bin, "github.com/agentsfleet/agentsfleet/sandboximage/sandboxd")...)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=1")
	if out, err := cmd.CombinedOutput(); err != nil {
		b.Fatalf("build sandboxd: %v\n%s", err, out)
	}
	return bin
}

// api is a real sandboxd serve process over workdir, on loopback, and the
// same tools built in this process for direct calls.
type api struct {
	tools  []tool.Tool
	base   string
	client *http.Client
}

func newAPI(b *testing.B, workdir string) *api {
	b.Helper()
	bin := sandboxdBinary(b)
	roots, err := sandbox.New(sandbox.Dirs{Workdir: workdir})
	if err != nil {
		b.Fatal(err)
	}
	cmd := exec.Command(bin, "serve", "--listen", "127.0.0.1:0", "--workdir", workdir, "--timeout", "300", "--idle-timeout", "0")
	cmd.Env = append(os.Environ(), wire.TokenEnv+"="+token)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { cmd.Process.Signal(syscall.SIGTERM); cmd.Wait() })
	addr := make(chan string, 2)
	go func() {
		var lines []string
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			var rec struct{ Msg, Addr string }
			if json.Unmarshal(sc.Bytes(), &rec) == nil && rec.Msg == "listening" {
				addr <- rec.Addr
			}
			lines = append(lines, sc.Text())
		}
		addr <- "exited: " + strings.Join(lines, "\n") // before it listened, it stopped
	}()
	a := &api{tools: server.Tools(server.Config{Roots: roots, Timeout: 5 * time.Minute}),
		client: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4}}}
	select {
	case ad := <-addr:
		if why, ok := strings.CutPrefix(ad, "exited: "); ok {
			b.Fatalf("sandboxd serve %s exited: %s", workdir, why)
		}
		a.base = "http://" + ad
	case <-time.After(30 * time.Second):
		b.Fatal("sandboxd serve did not start")
	}
	return a
}

func (a *api) call(b *testing.B, name, args string) tool.Result {
	req, _ := http.NewRequest(http.MethodPost, a.base+wire.ToolsPath+name, strings.NewReader(args))
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := a.client.Do(req)
	if err != nil {
		b.Fatal(err)
	}
	defer resp.Body.Close()
	var res tool.Result
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(resp.Body)
		b.Fatalf("%s %s: %s %s", name, args, resp.Status, body)
	}
	if err := json.NewDecoder(resp.Body).Decode(&res); err != nil {
		b.Fatal(err)
	}
	return res
}

func (a *api) direct(b *testing.B, name, args string) tool.Result {
	for _, t := range a.tools {
		if t.Name() == name {
			res, err := t.Run(context.Background(), json.RawMessage(args))
			if err != nil {
				b.Fatal(err)
			}
			return res
		}
	}
	b.Fatalf("no name %s", name)
	return tool.Result{}
}

// timings runs f n times and returns the durations.
func timings(n int, f func()) []time.Duration {
	out := make([]time.Duration, n)
	for i := range out {
		start := time.Now()
		f()
		out[i] = time.Since(start)
	}
	return out
}

func p50(d []time.Duration) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[len(s)/2]
}

func micros(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e3 }
func millis(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e6 }

// verdict is "ok" or "OVER" for a figure against its target.
func verdict(got, target float64) string {
	if got <= target {
		return "ok"
	}
	return "OVER"
}

// alternate runs a and b n times each, interleaved so that machine load
// falls on both alike, and returns their p50s.
func alternate(n int, a, b func()) (time.Duration, time.Duration) {
	d := alternateAll(n, 0, a, b)
	return d[0], d[1]
}

// alternateAll runs each of fs in turn, n rounds, and returns their p50s.
// pause follows each call, so that what a call leaves running (sandboxd
// replacing the warm trampoline it used) is not timed in the next one.
func alternateAll(n int, pause time.Duration, fs ...func()) []time.Duration {
	ds := make([][]time.Duration, len(fs))
	for range n {
		for i, f := range fs {
			ds[i] = append(ds[i], timings(1, f)...)
			time.Sleep(pause)
		}
	}
	out := make([]time.Duration, len(fs))
	for i, d := range ds {
		out[i] = p50(d)
	}
	return out
}

// BenchmarkTrivialToolOverHTTP: read of a one-line file over loopback HTTP
// against calling the read tool directly. Target: HTTP p50 ≤ 1 ms.
func BenchmarkTrivialToolOverHTTP(b *testing.B) {
	dir := sandboxtest.Base(b) // as root, sandboxd acts as an unprivileged uid
	os.WriteFile(filepath.Join(dir, "one.txt"), []byte("hello\n"), 0o644)
	a := newAPI(b, dir)
	const args = `{"path":"one.txt"}`
	if res := a.call(b, "read", args); res.Output != "1\thello" {
		b.Fatalf("read = %q", res.Output)
	}
	httpP50, directP50 := alternate(500, func() { a.call(b, "read", args) }, func() { a.direct(b, "read", args) })
	b.ReportMetric(micros(httpP50), "http-p50-µs")
	b.ReportMetric(micros(directP50), "direct-p50-µs")
	b.ReportMetric(float64(httpP50)/float64(directP50), "ratio")
	b.Logf("trivial tool (read): HTTP p50 %.0f µs, direct p50 %.0f µs, ratio %.1f×; target HTTP p50 ≤ 1000 µs: %s",
		micros(httpP50), micros(directP50), float64(httpP50)/float64(directP50), verdict(micros(httpP50), 1000))
}

// BenchmarkBashTrue: bash `true` through sandboxd (HTTP, confined) against
// a bare `sh -c true`. Target ≤ 2×.
func BenchmarkBashTrue(b *testing.B) {
	dir := sandboxtest.Base(b)
	os.Chmod(filepath.Dir(dir), 0o755)
	os.Chmod(dir, 0o755)
	a := newAPI(b, dir)
	if res := a.call(b, "bash", `{"command":"true"}`); res.Output != "[exit code 0]" {
		b.Fatalf("bash true = %q", res.Output)
	}
	// 5 ms apart: an agent's commands come seconds apart, and each leaves
	// sandboxd starting a warm trampoline for the next one.
	p := alternateAll(100, 5*time.Millisecond,
		func() { a.call(b, "bash", `{"command":"true"}`) },
		func() {
			if err := exec.Command("/bin/sh", "-c", "true").Run(); err != nil {
				b.Fatal(err)
			}
		})
	viaP50, bareP50 := p[0], p[1]
	ratio := float64(viaP50) / float64(bareP50)
	b.ReportMetric(millis(viaP50), "sandboxd-p50-ms")
	b.ReportMetric(millis(bareP50), "bare-p50-ms")
	b.ReportMetric(ratio, "ratio")
	b.Logf("bash true: sandboxd p50 %.2f ms, bare sh -c true p50 %.2f ms, ratio %.2f×; target ≤ 2×: %s",
		millis(viaP50), millis(bareP50), ratio, verdict(ratio, 2))
}

func needRipgrep(b *testing.B) string {
	rg := shell.Ripgrep()
	if rg == "" {
		b.Skip("no rg on PATH (make tools installs it)")
	}
	return rg
}

// BenchmarkGrep: grep through sandboxd against plain rg, on 50,000 files.
// Target ≤ 1.15×. It also times rg, unconfined, with the command line the
// tool runs (which searches hidden files but not .git, so every path meets a
// glob), to tell what sandboxd costs from what that search costs.
func BenchmarkGrep(b *testing.B) {
	rg := needRipgrep(b)
	root := tree(b)
	work := filepath.Dir(root)
	a := newAPI(b, work)
	args := fmt.Sprintf(`{"pattern":%q,"path":"tree","max_results":1000}`, needle)
	res := a.call(b, "grep", args)
	if n := strings.Count(res.Output, needle); res.IsError || n != treeFiles/1000 {
		b.Fatalf("grep found %d lines, want %d: %.200q", n, treeFiles/1000, res.Output)
	}
	rgRun := func(argv ...string) func() {
		return func() {
			cmd := exec.Command(rg, argv...)
			cmd.Dir = work
			out, err := cmd.Output()
			if err != nil || strings.Count(string(out), needle) != treeFiles/1000 {
				b.Fatalf("rg %q: %v", argv, err)
			}
		}
	}
	toolArgv := (&shell.Grep{RG: rg}).Argv(sandbox.GrepArgs{Pattern: needle}, "./tree")
	p := alternateAll(21, 0, func() { a.call(b, "grep", args) }, rgRun("-n", needle, "tree"), rgRun(toolArgv[1:]...))
	viaP50, rgP50, toolP50 := p[0], p[1], p[2]
	ratio := float64(viaP50) / float64(rgP50)
	b.ReportMetric(millis(viaP50), "sandboxd-p50-ms")
	b.ReportMetric(millis(rgP50), "rg-p50-ms")
	b.ReportMetric(millis(toolP50), "rg-tool-argv-p50-ms")
	b.ReportMetric(ratio, "ratio")
	b.Logf("grep, %d files: sandboxd p50 %.1f ms, rg p50 %.1f ms, ratio %.2f×; target ≤ 1.15×: %s; "+
		"rg with the tool's command line, unconfined: p50 %.1f ms (%.2f× rg), sandboxd %.2f× that",
		treeFiles, millis(viaP50), millis(rgP50), ratio, verdict(ratio, 1.15),
		millis(toolP50), float64(toolP50)/float64(rgP50), float64(viaP50)/float64(toolP50))
}

// BenchmarkGlob: glob through sandboxd against rg --files with the same
// glob, on 50,000 files. Target ≤ 1.5×.
func BenchmarkGlob(b *testing.B) {
	rg := needRipgrep(b)
	root := tree(b)
	work := filepath.Dir(root)
	a := newAPI(b, work)
	const args = `{"pattern":"*.md","path":"tree","max_results":2000}`
	res := a.call(b, "glob", args)
	if n := strings.Count(res.Output, ".md"); res.IsError || n != treeFiles/1250 {
		b.Fatalf("glob found %d, want %d: %.200q", n, treeFiles/1250, res.Output)
	}
	plain := func() {
		cmd := exec.Command(rg, "--files", "-g", "*.md", "tree")
		cmd.Dir = work
		out, err := cmd.Output()
		if err != nil || strings.Count(string(out), ".md") != treeFiles/1250 {
			b.Fatalf("rg --files: %v", err)
		}
	}
	viaP50, rgP50 := alternate(15, func() { a.call(b, "glob", args) }, plain)
	ratio := float64(viaP50) / float64(rgP50)
	b.ReportMetric(millis(viaP50), "sandboxd-p50-ms")
	b.ReportMetric(millis(rgP50), "rg-files-p50-ms")
	b.ReportMetric(ratio, "ratio")
	b.Logf("glob, %d files: sandboxd p50 %.1f ms, rg --files p50 %.1f ms, ratio %.2f×; target ≤ 1.5×: %s",
		treeFiles, millis(viaP50), millis(rgP50), ratio, verdict(ratio, 1.5))
}

// runMeasured runs cmd and returns its wall time, its peak RSS in MiB and
// its output.
//
// The peak is the largest VmHWM of /proc/<pid>/status, sampled every
// millisecond: the high-water mark of the process's own memory since its
// exec. The rusage Maxrss of wait4 is not used: os/exec starts children
// with vfork, and at exec the kernel records the memory of the parent it
// shared (this benchmark process, tens of MiB) as the child's starting
// maxrss, so every child would seem to use at least that.
func runMeasured(b *testing.B, cmd *exec.Cmd) (time.Duration, float64, string) {
	b.Helper()
	var out strings.Builder
	cmd.Stdout = &out
	cmd.Stderr = &out
	start := time.Now()
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	done := make(chan struct{})
	peakKiB := make(chan int64, 1)
	go func() {
		var peak int64
		status := fmt.Sprintf("/proc/%d/status", cmd.Process.Pid)
		for {
			if kib, ok := vmHWM(status); ok {
				peak = max(peak, kib)
			}
			select {
			case <-done:
				peakKiB <- peak
				return
			case <-time.After(time.Millisecond):
			}
		}
	}()
	err := cmd.Wait()
	elapsed := time.Since(start)
	close(done)
	peak := <-peakKiB
	if err != nil {
		b.Fatalf("%s: %v\n%.500s", cmd, err, out.String())
	}
	return elapsed, float64(peak) / 1024, out.String()
}

// vmHWM reads the VmHWM line (KiB) of a /proc/<pid>/status file.
func vmHWM(status string) (int64, bool) {
	b, err := os.ReadFile(status)
	if err != nil {
		return 0, false
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			var kib int64
			if _, err := fmt.Sscan(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), &kib); err == nil {
				return kib, true
			}
		}
	}
	return 0, false
}

// BenchmarkReadDeepOffset: `sandboxd call read` of the last 100 lines of a
// 1 GiB file, against `wc -l` of the same file (the floor: reading it once).
// Target: peak RSS ≤ 32 MiB whatever the file size.
func BenchmarkReadDeepOffset(b *testing.B) {
	bin := sandboxdBinary(b)
	path, lines := bigFile(b)
	args := fmt.Sprintf(`{"path":%q,"offset":%d,"limit":100}`, filepath.Base(path), lines-99)
	var readTimes, wcTimes []time.Duration
	var peak, wcPeak float64
	for range 5 {
		d, rss, out := runMeasured(b, exec.Command(bin, "call", "--workdir", filepath.Dir(path), "read", args))
		if !strings.HasPrefix(out, fmt.Sprintf("%d\t", lines-99)) || strings.Count(out, "\n") != 99 {
			b.Fatalf("read at offset %d: %.200q", lines-99, out)
		}
		readTimes = append(readTimes, d)
		peak = max(peak, rss)
		d, rss, _ = runMeasured(b, exec.Command("wc", "-l", path))
		wcTimes = append(wcTimes, d)
		wcPeak = max(wcPeak, rss)
	}
	ratio := float64(p50(readTimes)) / float64(p50(wcTimes))
	gbps := float64(bigFileSize) / p50(readTimes).Seconds() / 1e9
	b.ReportMetric(millis(p50(readTimes)), "read-p50-ms")
	b.ReportMetric(millis(p50(wcTimes)), "wc-p50-ms")
	b.ReportMetric(ratio, "ratio")
	b.ReportMetric(peak, "peak-rss-MiB")
	b.Logf("read at offset %d of a 1 GiB file: p50 %.0f ms (%.2f GB/s), wc -l p50 %.0f ms, ratio %.2f×; peak RSS (VmHWM) %.1f MiB (wc %.1f MiB); target ≤ 32 MiB: %s",
		lines-99, millis(p50(readTimes)), gbps, millis(p50(wcTimes)), ratio, peak, wcPeak, verdict(peak, 32))
}
