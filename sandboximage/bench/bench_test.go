package bench_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
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

// bigFile writes 1 GiB of numbered text lines, all of one length, to a
// temporary directory that b removes when it ends, and returns the file's
// path and its number of lines. It is synced before it is read, so that no
// writeback runs while the benchmark times the reads.
func bigFile(b *testing.B) (string, int) {
	b.Helper()
	start := time.Now()
	path := filepath.Join(sandboxtest.Base(b), "big.txt")
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	const tail = ": lorem ipsum dolor sit amet, consectetur adipiscing elit, sed do eiusmod\n"
	w := bufio.NewWriterSize(f, 4<<20)
	line := make([]byte, 0, 128)
	lines := 0
	for n := 0; n < bigFileSize; n += len(line) {
		lines++
		line = append(line[:0], "line 000000000"...)
		for i, v := len(line)-1, lines; v > 0; i, v = i-1, v/10 {
			line[i] = byte('0' + v%10)
		}
		line = append(line, tail...)
		if _, err := w.Write(line); err != nil {
			b.Fatal(err)
		}
	}
	if err := w.Flush(); err != nil {
		b.Fatal(err)
	}
	if err := f.Sync(); err != nil {
		b.Fatal(err)
	}
	b.Logf("wrote a 1 GiB file of %d lines in %v", lines, time.Since(start).Round(time.Millisecond))
	return path, lines
}

// sandboxdBinary builds sandboxd once per run, into a directory of this
// process's that TestMain removes: two runs at once on one machine (other
// worktrees' make bench) must not time each other's binaries.
func sandboxdBinary(b *testing.B) string {
	b.Helper()
	bin, err := builtSandboxd()
	if errors.Is(err, exec.ErrNotFound) {
		b.Skip("no go tool to build sandboxd")
	}
	if err != nil {
		b.Fatal(err)
	}
	return bin
}

var binDir string

var builtSandboxd = sync.OnceValues(func() (string, error) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		return "", err
	}
	if binDir, err = os.MkdirTemp("", "agentsfleet-bench-sandboxd-"); err != nil {
		return "", err
	}
	// Confined processes (uid 65534 when the benchmarks run as root)
	// execute it too: it is their trampoline.
	if err := os.Chmod(binDir, 0o755); err != nil {
		return "", err
	}
	bin := filepath.Join(binDir, "sandboxd")
	// As the Dockerfile builds it (sandboximage.BuildFlags): stripped and
	// static. A dynamic build costs the trampoline a run of the dynamic
	// loader at every confined command.
	cmd := exec.Command(goBin, append(append([]string{"build"}, sandboximage.BuildFlags...), "-o", bin, "github.com/agentsfleet/agentsfleet/sandboximage/sandboxd")...)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=1")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("build sandboxd: %v\n%s", err, out)
	}
	return bin, nil
})

func TestMain(m *testing.M) {
	code := m.Run()
	if binDir != "" {
		os.RemoveAll(binDir)
	}
	os.Exit(code)
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
				// The line of each call is read and dropped: decoding it
				// would cost this process, the client's, CPU in every
				// round trip timed.
				_, _ = io.Copy(io.Discard, stderr)
				return
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
// against calling the read tool directly. Target: HTTP p50 ≤ 150 µs.
func BenchmarkTrivialToolOverHTTP(b *testing.B) {
	dir := sandboxtest.Base(b) // as root, sandboxd acts as an unprivileged uid
	os.WriteFile(filepath.Join(dir, "one.txt"), []byte("hello\n"), 0o644)
	a := newAPI(b, dir)
	const args = `{"path":"one.txt"}`
	if res := a.call(b, "read", args); res.Output != "1\thello" {
		b.Fatalf("read = %q", res.Output)
	}
	httpP50, directP50 := alternate(500, func() { a.call(b, "read", args) }, func() { a.direct(b, "read", args) })
	sandboxtest.Report(b, "sandboxd/trivial-tool-http", []sandboxtest.Figure{
		{Name: "http_p50", Value: micros(httpP50), Unit: "µs"},
		{Name: "direct_p50", Value: micros(directP50), Unit: "µs"},
		{Name: "ratio", Value: float64(httpP50) / float64(directP50), Unit: "×"},
	}, sandboxtest.Target{Name: "http_p50", Max: 150})
}

// BenchmarkBashTrue: bash `true` through sandboxd (HTTP, confined) against
// a bare `sh -c true`. Target ≤ 1.5×.
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
	sandboxtest.Report(b, "sandboxd/bash-true", []sandboxtest.Figure{
		{Name: "sandboxd_p50", Value: millis(viaP50), Unit: "ms"},
		{Name: "bare_p50", Value: millis(bareP50), Unit: "ms"},
		{Name: "ratio", Value: float64(viaP50) / float64(bareP50), Unit: "×"},
	}, sandboxtest.Target{Name: "ratio", Max: 1.5})
}

func needRipgrep(b *testing.B) string {
	rg := shell.Ripgrep()
	if rg == "" {
		b.Skip("no rg on PATH (make tools installs it)")
	}
	return rg
}

// BenchmarkGrep: grep through sandboxd against plain rg, on 50,000 files.
// Target ≤ 1.05×. It also times rg, unconfined, with the command line the
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
	sandboxtest.Report(b, "sandboxd/grep-50k-files", []sandboxtest.Figure{
		{Name: "sandboxd_p50", Value: millis(viaP50), Unit: "ms"},
		{Name: "rg_p50", Value: millis(rgP50), Unit: "ms"},
		{Name: "ratio", Value: float64(viaP50) / float64(rgP50), Unit: "×"},
		{Name: "rg_tool_argv_p50", Value: millis(toolP50), Unit: "ms"},
		{Name: "tool_argv_ratio", Value: float64(toolP50) / float64(rgP50), Unit: "×"},
	}, sandboxtest.Target{Name: "ratio", Max: 1.05})
}

// BenchmarkGlob: glob through sandboxd against rg --files with the same
// glob, on 50,000 files. Target ≤ 1.2×.
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
	sandboxtest.Report(b, "sandboxd/glob-50k-files", []sandboxtest.Figure{
		{Name: "sandboxd_p50", Value: millis(viaP50), Unit: "ms"},
		{Name: "rg_files_p50", Value: millis(rgP50), Unit: "ms"},
		{Name: "ratio", Value: float64(viaP50) / float64(rgP50), Unit: "×"},
	}, sandboxtest.Target{Name: "ratio", Max: 1.2})
}

// run runs name with args and returns its wall time and its output.
func run(b *testing.B, name string, args ...string) (time.Duration, string) {
	b.Helper()
	cmd := exec.Command(name, args...)
	start := time.Now()
	out, err := cmd.CombinedOutput()
	elapsed := time.Since(start)
	if err != nil {
		b.Fatalf("%s: %v\n%.500s", cmd, err, out)
	}
	return elapsed, string(out)
}

// runPeak runs name with args, traced, and returns its peak RSS in MiB.
// Its time is not measured: each signal to a traced thread stops it until
// this process lets it go on, which the Go runtime's preemption signals
// would cost sandboxd and not wc.
//
// The peak is the VmHWM of /proc/<pid>/status read when the process stops
// on its way out (ptrace's PTRACE_EVENT_EXIT, before its memory goes): the
// kernel's own high-water mark of its memory since its exec, what its
// rusage would report but for one thing. os/exec starts a child with vfork,
// sharing this process's memory until it execs, and at exec the kernel
// records that memory (this benchmark's, tens of MiB) as the child's
// starting maxrss, so the rusage of wait4 would make every child seem to use
// at least as much as the benchmark.
func runPeak(b *testing.B, name string, args ...string) float64 {
	b.Helper()
	// Every ptrace request comes from the thread that started the child.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var out strings.Builder
	cmd := exec.Command(name, args...)
	cmd.Stdout = &out
	cmd.Stderr = &out
	cmd.SysProcAttr = &syscall.SysProcAttr{Ptrace: true}
	if err := cmd.Start(); err != nil {
		b.Fatalf("%s: %v", cmd, err)
	}
	pid := cmd.Process.Pid
	var peakKiB int64 = -1
	for first := true; peakKiB < 0; first = false {
		var ws syscall.WaitStatus
		if _, err := syscall.Wait4(pid, &ws, 0, nil); err != nil {
			b.Fatalf("%s: wait: %v", cmd, err)
		}
		if !ws.Stopped() {
			b.Fatalf("%s ended before its exit stop: %v", cmd, ws)
		}
		sig := ws.StopSignal()
		switch {
		case first: // the stop after its exec
			if err := syscall.PtraceSetOptions(pid, syscall.PTRACE_O_TRACEEXIT); err != nil {
				b.Fatalf("%s: ptrace: %v", cmd, err)
			}
			sig = 0
		case sig == syscall.SIGTRAP && ws.TrapCause() == syscall.PTRACE_EVENT_EXIT:
			kib, ok := vmHWM(fmt.Sprintf("/proc/%d/status", pid))
			if !ok {
				b.Fatalf("%s: no VmHWM at its exit", cmd)
			}
			peakKiB = kib
			if err := syscall.PtraceDetach(pid); err != nil {
				b.Fatalf("%s: ptrace detach: %v", cmd, err)
			}
			continue
		}
		if err := syscall.PtraceCont(pid, int(sig)); err != nil { // a signal goes on to it
			b.Fatalf("%s: ptrace: %v", cmd, err)
		}
	}
	if err := cmd.Wait(); err != nil {
		b.Fatalf("%s: %v\n%.500s", cmd, err, out.String())
	}
	return float64(peakKiB) / 1024
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
// Targets: at most 1.05× wc's time, and a peak RSS of 12 MiB whatever the
// file's size.
func BenchmarkReadDeepOffset(b *testing.B) {
	bin := sandboxdBinary(b)
	path, lines := bigFile(b)
	args := fmt.Sprintf(`{"path":%q,"offset":%d,"limit":100}`, filepath.Base(path), lines-99)
	read := []string{"call", "--workdir", filepath.Dir(path), "read", args}
	// The peaks first, in runs of their own (which also bring the file's
	// pages into the cache for both alike), then the times, alternately.
	var peak, wcPeak float64
	for range 2 {
		peak = max(peak, runPeak(b, bin, read...))
		wcPeak = max(wcPeak, runPeak(b, "wc", "-l", path))
	}
	var readTimes, wcTimes []time.Duration
	for range 9 {
		d, out := run(b, bin, read...)
		if !strings.HasPrefix(out, fmt.Sprintf("%d\t", lines-99)) || strings.Count(out, "\n") != 99 {
			b.Fatalf("read at offset %d: %.200q", lines-99, out)
		}
		readTimes = append(readTimes, d)
		d, _ = run(b, "wc", "-l", path)
		wcTimes = append(wcTimes, d)
	}
	sandboxtest.Report(b, "sandboxd/read-deep-offset-1GiB", []sandboxtest.Figure{
		{Name: "read_p50", Value: millis(p50(readTimes)), Unit: "ms"},
		{Name: "wc_p50", Value: millis(p50(wcTimes)), Unit: "ms"},
		{Name: "ratio", Value: float64(p50(readTimes)) / float64(p50(wcTimes)), Unit: "×"},
		{Name: "peak_rss", Value: peak, Unit: "MiB"},
		{Name: "wc_peak_rss", Value: wcPeak, Unit: "MiB"},
	}, sandboxtest.Target{Name: "ratio", Max: 1.05}, sandboxtest.Target{Name: "peak_rss", Max: 12})
}
