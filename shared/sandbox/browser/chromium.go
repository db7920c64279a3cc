package browser

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/cdproto/inspector"
	"github.com/chromedp/chromedp"
	"golang.org/x/sys/unix"

	"github.com/agentsfleet/agentsfleet/shared/sandbox"
	"github.com/agentsfleet/agentsfleet/shared/sandbox/confine"
)

// The browser's fixed window and viewport, in CSS pixels.
const (
	WindowWidth  = sandbox.BrowserWidth
	WindowHeight = sandbox.BrowserHeight
)

// The browser's own limits, where they differ from the sandbox's commands'.
const (
	// Processes is RLIMIT_NPROC of the browser: Chromium's processes and
	// threads. The kernel counts every thread of the uid, and the
	// browser shares its uid with bash's commands: their processes count
	// against this limit, and the browser's threads against theirs
	// (confine.DefaultLimits.Processes plus sandboxd's reserve).
	Processes = 1024
	// OpenFiles is RLIMIT_NOFILE of each of Chromium's processes, which
	// hold a descriptor for each shared-memory region and pipe they use.
	OpenFiles = 4096
	// CPUSeconds is RLIMIT_CPU of each of Chromium's processes. The
	// browser lives as long as the sandbox, not one command, so the
	// commands' 600 seconds would end a busy one; each call is bounded by
	// its tool timeout instead.
	CPUSeconds = 4 * 3600
)

// policyFor is the confinement of Chromium under base, the sandbox's: the
// same roots, Landlock, seccomp filter and uid, and limits of its own: no
// RLIMIT_AS (V8 reserves address space by the terabyte for its sandbox
// and pointer cages, never backed by memory: the task's memory size bounds
// what the browser uses), and Processes, OpenFiles and CPUSeconds. Its
// profile lives under /tmp, writable to every confined command anyway.
// A nil base is confine's defaults.
func policyFor(base *confine.Policy) *confine.Policy {
	if base == nil {
		base = &confine.Policy{}
	}
	p := *base
	p.ReadOnly = slices.Clone(base.ReadOnly)
	p.Writable = slices.Clone(base.Writable)
	p.Env = slices.Clone(base.Env)
	p.Limits.AddressSpace = math.MaxUint64 // RLIM_INFINITY: the trampoline keeps the inherited limit
	p.Limits.Processes = max(p.Limits.Processes, Processes)
	p.Limits.OpenFiles = max(p.Limits.OpenFiles, OpenFiles)
	p.Limits.CPUSeconds = max(p.Limits.CPUSeconds, CPUSeconds)
	return &p
}

// flags are Chromium's switches: headless, its own sandbox off (see the
// README's security model: sandboxd's confinement replaces it), nothing
// that calls home, a fixed window, DevTools over fds 3 and 4 rather than a
// loopback port, and the proxy's switches.
func flags(profile string, proxyFlags []string) []string {
	f := []string{
		"--headless=new",
		"--no-sandbox",
		"--user-data-dir=" + profile,
		"--remote-debugging-pipe",
		"--no-first-run",
		"--no-default-browser-check",
		"--disable-background-networking",
		"--disable-component-update",
		"--disable-sync",
		"--disable-extensions",
		"--disable-default-apps",
		"--disable-breakpad",
		"--disable-crash-reporter",
		"--metrics-recording-only",
		"--disable-domain-reliability",
		"--mute-audio",
		"--hide-scrollbars",
		"--password-store=basic",
		"--use-mock-keychain",
		fmt.Sprintf("--window-size=%d,%d", WindowWidth, WindowHeight),
	}
	if smallShm() {
		f = append(f, "--disable-dev-shm-usage")
	}
	f = append(f, proxyFlags...)
	return append(f, "about:blank")
}

// smallShm reports whether /dev/shm is too small for Chromium's shared
// memory (Docker's and Fargate's default is 64 MiB), or absent: Chromium
// then writes it to /tmp.
func smallShm() bool {
	var st unix.Statfs_t
	if err := unix.Statfs("/dev/shm", &st); err != nil {
		return true
	}
	return uint64(st.Bsize)*st.Blocks < 512<<20
}

// process is one started Chromium: its process group, its DevTools pipe
// and its profile directory.
type process struct {
	group   *confine.Group
	pid     int
	profile string
	alloc   context.Context    // chromedp's allocator context over the pipe
	cancel  context.CancelFunc // ends alloc
	tab     context.Context    // the one page
	output  *tail              // the last of Chromium's stderr, for a failed start
	gone    chan struct{}      // closed once the process group is reaped
	stop    sync.Once

	mu       sync.Mutex // guards watchers
	watchers map[*watcher]struct{}
	crashed  chan struct{} // closed when the page's renderer crashes (Inspector.targetCrashed)
	crash    sync.Once
}

// watcher receives the page's events while a call waits on them.
type watcher struct{ fn func(ev any) }

// watch calls fn with every event of the page until stop is called.
func (p *process) watch(fn func(ev any)) (stop func()) {
	w := &watcher{fn: fn}
	p.mu.Lock()
	p.watchers[w] = struct{}{}
	p.mu.Unlock()
	return func() {
		p.mu.Lock()
		delete(p.watchers, w)
		p.mu.Unlock()
	}
}

// event hands one of the page's events to the Browser and the watchers,
// on chromedp's goroutine of the page, in the order they arrive.
func (p *process) event(ev any) {
	if _, ok := ev.(*inspector.EventTargetCrashed); ok {
		p.crash.Do(func() { close(p.crashed) })
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for w := range p.watchers {
		w.fn(ev)
	}
}

// launch starts Chromium at path confined under policy with the DevTools
// pipe, and attaches chromedp to its first page within ctx.
func launch(ctx context.Context, path string, policy *confine.Policy, proxyFlags []string) (*process, error) {
	uid, gid := policy.Identity()
	profile, err := os.MkdirTemp("", "agentsfleet-browser-")
	if err != nil {
		return nil, fmt.Errorf("browser: profile directory: %w", err)
	}
	if os.Geteuid() == 0 || os.Getuid() == 0 {
		if err := os.Chown(profile, uid, gid); err != nil {
			os.RemoveAll(profile)
			return nil, fmt.Errorf("browser: profile directory: %w", err)
		}
	}
	p := &process{profile: profile, gone: make(chan struct{}), output: newTail(8 << 10), watchers: map[*watcher]struct{}{}, crashed: make(chan struct{})}
	if err := p.start(path, policy, proxyFlags); err != nil {
		os.RemoveAll(profile)
		return nil, err
	}
	if err := p.attach(ctx); err != nil {
		p.close()
		return nil, err
	}
	return p, nil
}

// start starts the process on a thread of its own: the kernel's
// parent-death signal follows the thread that forked, so the thread stays
// locked until the browser is gone.
func (p *process) start(path string, policy *confine.Policy, proxyFlags []string) error {
	cmdR, cmdW, err := os.Pipe() // sandboxd → Chromium's fd 3
	if err != nil {
		return fmt.Errorf("browser: pipe: %w", err)
	}
	evR, evW, err := os.Pipe() // Chromium's fd 4 → sandboxd
	if err != nil {
		cmdR.Close()
		cmdW.Close()
		return fmt.Errorf("browser: pipe: %w", err)
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		for _, f := range []*os.File{cmdR, cmdW, evR, evW} {
			f.Close()
		}
		return fmt.Errorf("browser: pipe: %w", err)
	}
	started := make(chan error, 1)
	go func() {
		// Chromium's Pdeathsig (confine's SIGKILL) fires when the thread
		// that forked it ends, so the goroutine keeps that thread until the
		// browser is gone. It then gives the thread back rather than
		// returning locked, which would end the thread: the kernel would
		// signal every other child this thread forked before (a command of
		// bash's, or, in a test binary, the moto server), and sandboxd's
		// list of its threads (confine's guard) would shrink.
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		cmd, err := policy.Command(path, flags(p.profile, proxyFlags)...)
		if err == nil {
			cmd.Dir = "/tmp"
			cmd.Stdin = nil
			cmd.Stdout, cmd.Stderr = outW, outW
			cmd.ExtraFiles = []*os.File{cmdR, evW}
			p.group, err = confine.StartGroup(cmd)
		}
		cmdR.Close()
		evW.Close()
		outW.Close()
		if err != nil {
			started <- err
			return
		}
		p.pid = cmd.Process.Pid
		started <- nil
		<-p.group.Done()
		close(p.gone)
	}()
	if err := <-started; err != nil {
		cmdW.Close()
		evR.Close()
		outR.Close()
		return fmt.Errorf("browser: start %s: %w", path, err)
	}
	go p.output.drain(outR)

	conn := chromedp.NewPipeConn(evR, cmdW)
	p.alloc, p.cancel = chromedp.NewAllocatorContext(context.Background(), &attached{conn: conn})
	return nil
}

// attach makes the chromedp context of the browser's first page, waiting
// within ctx for Chromium to answer.
func (p *process) attach(ctx context.Context) error {
	tab, _ := chromedp.NewContext(p.alloc, chromedp.WithListener(p.event))
	done := make(chan error, 1)
	go func() { done <- chromedp.Do(tab) }()
	select {
	case err := <-done:
		if err != nil {
			return p.failed(err)
		}
	case <-p.gone:
		return p.failed(errors.New("it exited"))
	case <-ctx.Done():
		return fmt.Errorf("browser: Chromium did not answer: %w", context.Cause(ctx))
	}
	// The viewport is the window's size exactly, at one device pixel a
	// CSS pixel, whatever the window's frame takes.
	err := chromedp.Do(tab, chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		_, err := cdp.Call(ctx, t, emulation.SetDeviceMetricsOverride, emulation.SetDeviceMetricsOverrideParams{
			Width: WindowWidth, Height: WindowHeight, DeviceScaleFactor: 1,
		})
		return err
	}))
	if err != nil {
		return p.failed(err)
	}
	p.tab = tab
	return nil
}

// failed is the error of a start that did not reach the page, with the
// end of what Chromium printed.
func (p *process) failed(err error) error {
	select {
	case <-p.gone:
	case <-time.After(2 * time.Second):
	}
	out := strings.TrimSpace(p.output.String())
	if out != "" {
		return fmt.Errorf("browser: Chromium did not start: %w; it printed:\n%s", err, out)
	}
	return fmt.Errorf("browser: Chromium did not start: %w", err)
}

// usable reports whether the process runs and its page has not crashed.
func (p *process) usable() bool { return p.alive() && !p.hasCrashed() }

// hasCrashed reports whether the page's renderer crashed.
func (p *process) hasCrashed() bool {
	select {
	case <-p.crashed:
		return true
	default:
		return false
	}
}

// alive reports whether the process still runs.
func (p *process) alive() bool {
	select {
	case <-p.gone:
		return false
	default:
		return true
	}
}

// close kills the process group, waits for it and removes the profile.
func (p *process) close() {
	p.stop.Do(func() {
		if p.cancel != nil {
			p.cancel()
		}
		if p.group != nil {
			p.group.Kill()
			<-p.gone
		}
		_ = os.RemoveAll(p.profile)
	})
}

// attached is chromedp's allocator for a browser sandboxd started itself:
// it hands chromedp the pipe, and, as an attacher, leaves the process to
// sandboxd (chromedp neither starts nor waits for it).
type attached struct {
	conn chromedp.Transport
	once sync.Once
}

// Allocate returns the browser over the pipe; only once.
func (a *attached) Allocate(ctx context.Context, opts ...chromedp.BrowserOption) (*chromedp.Browser, error) {
	var b *chromedp.Browser
	err := errors.New("browser: the DevTools pipe is already in use")
	a.once.Do(func() { b, err = chromedp.NewBrowserTransport(ctx, a.conn, opts...) })
	return b, err
}

// Wait returns at once: sandboxd waits for the process itself.
func (a *attached) Wait() {}

// Attaches says that the browser runs already.
func (a *attached) Attaches() bool { return true }
