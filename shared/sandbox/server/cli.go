package server

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/agentsfleet/agentsfleet/shared/sandbox"
	"github.com/agentsfleet/agentsfleet/shared/sandbox/confine"
	"github.com/agentsfleet/agentsfleet/shared/sandbox/pin"
	"github.com/agentsfleet/agentsfleet/shared/sandbox/wire"
	"github.com/agentsfleet/agentsfleet/shared/tool"
	"github.com/agentsfleet/agentsfleet/shared/web/egress"
)

// Exit statuses of sandboxd.
const (
	ExitOK       = 0 // call: a normal result; serve: stopped (signal or idle)
	ExitFailed   = 1 // the environment is broken (a Go error)
	ExitUsage    = 2 // bad usage
	ExitToolErr  = 3 // call: an error result
	DefaultIdle  = 15 * time.Minute
	defaultGrace = 20 * time.Second
)

// Defaults are what the binary knows about where it runs (the image).
type Defaults struct {
	Listen     string // serve --listen
	HealthAddr string // health --addr
}

const usage = `usage:
  sandboxd call [--workdir DIR] [--agent DIR] [--data DIR] [--workspace DIR] [--timeout SECONDS] [--user UID[:GID]] [--env NAME]... [--local] TOOL 'JSON'
  sandboxd serve --listen ADDR [root flags] [--browser PATH] [--idle-timeout D] [--tls-from-token | --tls-cert FILE --tls-key FILE | --plain-http] [--print-addr]
  sandboxd health [--addr HOST:PORT] [--tls]

call runs one tool and prints exactly the text the model would see: exit 0
for a normal result, 3 for an error result, 2 for bad usage.
serve reads its bearer token from $SANDBOXD_TOKEN; with --print-addr it
prints the address it listens on (HOST:PORT, one line on stdout) once it
serves, for --listen 127.0.0.1:0.
--tls-from-token serves TLS 1.3 with the key pair derived from the token,
which the runner pins (package pin): the image's CMD. --tls-cert and
--tls-key serve TLS with a certificate of your own. Without TLS, serve
listens on a loopback address only, unless --plain-http says the network
is trusted: the token then crosses it in clear text.
Run as root, sandboxd acts as --user (default 65534:65534), and so do its
commands, through and through; the roots must be that user's to reach.
--browser PATH is the Chromium that browser_open and screenshot drive
(/usr/bin/chromium in the image), started by the first browser_open and
confined like the commands; without it both answer that the sandbox has
no headless browser.
--local is one person's machine (launch/local): it allows --user 0, which
keeps sandboxd and its commands uid 0 with every capability dropped (it
needs Landlock), serve then listens on loopback only and stops when its
parent exits.
--env NAME passes the variable NAME of sandboxd's environment to its
commands (repeat it for more; PATH replaces the commands' system PATH);
names of secrets (AWS_*, ECS_*, SANDBOXD_*, AGENTSFLEET_*, LD_*, *TOKEN*,
*SECRET*, *KEY*, *PASSWORD*, *PASSWD*, *CREDENTIAL*) are refused.
`

// Main runs sandboxd with args (without the program name) and returns its
// exit status. Only the binary's main exits.
func Main(args []string, d Defaults, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return ExitUsage
	}
	switch args[0] {
	case "call":
		return mainCall(args[1:], stdout, stderr)
	case "serve":
		return mainServe(args[1:], d, stdout, stderr)
	case "health":
		return mainHealth(args[1:], d, stderr)
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
		return ExitOK
	}
	fmt.Fprintf(stderr, "sandboxd: unknown command %q\n%s", args[0], usage)
	return ExitUsage
}

// rootFlags are the flags call and serve share.
type rootFlags struct {
	workdir, agent, data, workspace string
	timeout                         int
	user                            string
	local                           bool
	env                             []string
	unsetEnv                        []string // --env names sandboxd's environment lacks (config)
}

func (rf *rootFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&rf.workdir, "workdir", "", "the workdir (default: the current directory)")
	fs.StringVar(&rf.agent, "agent", "", "the agent folder, writable (/agent in the image)")
	fs.StringVar(&rf.data, "data", "", "the mounted data, read-only")
	fs.StringVar(&rf.workspace, "workspace", "", "the turn's workspace, writable")
	fs.IntVar(&rf.timeout, "timeout", int(DefaultTimeout/time.Second), "the fleet's tool_timeout_seconds")
	fs.StringVar(&rf.user, "user", "", "UID[:GID] that sandboxd, when run as root, acts as and runs its commands as (default 65534:65534); 0 only with --local")
	fs.BoolVar(&rf.local, "local", false, "serve one person's machine: allow --user 0 (uid 0 without capabilities), listen on loopback only, stop with the parent")
	fs.Func("env", "pass the variable `NAME` of sandboxd's environment to its commands (repeatable)", func(name string) error {
		rf.env = append(rf.env, name)
		return nil
	})
}

func (rf *rootFlags) config() (Config, error) {
	if rf.timeout <= 0 {
		return Config{}, fmt.Errorf("--timeout must be a positive number of seconds, not %d", rf.timeout)
	}
	wd := rf.workdir
	if wd == "" {
		var err error
		if wd, err = os.Getwd(); err != nil {
			return Config{}, fmt.Errorf("the current directory: %w", err)
		}
	}
	uid, gid, keepRoot, err := parseUser(rf.user, rf.local)
	if err != nil {
		return Config{}, err
	}
	env, unset, err := passEnv(rf.env)
	if err != nil {
		return Config{}, err
	}
	rf.unsetEnv = unset
	roots, err := sandbox.New(sandbox.Dirs{Workdir: wd, Agent: rf.agent, Data: rf.data, Workspace: rf.workspace})
	if err != nil {
		return Config{}, err
	}
	cfg := Config{Roots: roots, Timeout: time.Duration(rf.timeout) * time.Second, UID: uid, GID: gid}
	cfg.Policy = PolicyFor(cfg)
	cfg.Policy.KeepRoot = keepRoot
	cfg.Policy.Env = env
	return cfg, nil
}

// becomeUser gives sandboxd its commands' identity, once what needs root
// is done: under --user 0 (cfg.Policy.KeepRoot) it keeps uid 0 and sheds
// every capability, which executes sandboxd again (confine.ShedCapabilities:
// call it before anything that must not happen twice, with the variables
// the new image needs back, such as the token); otherwise, when root, it
// acts as --user (confine.ActAs).
func becomeUser(cfg Config, env []string) error {
	if cfg.Policy.KeepRoot {
		return confine.ShedCapabilities(env)
	}
	return confine.ActAs(cfg.UID, cfg.GID)
}

// checkRoots checks, once sandboxd acts as its commands' user, that the
// user can enter every root (each tool would fail in one it cannot), and
// returns the writable roots it cannot write to.
func checkRoots(roots *sandbox.Roots) (unwritable []string, err error) {
	for _, rt := range roots.All() {
		if rt.Name == "system" {
			continue
		}
		if err := unix.Faccessat(unix.AT_FDCWD, rt.Path, unix.X_OK, unix.AT_EACCESS); err != nil {
			return nil, fmt.Errorf("the %s %s cannot be entered by uid %d, which sandboxd's tools and commands run as: %w (give it to that user, or choose another with --user)",
				rt.Name, rt.Path, os.Geteuid(), err)
		}
		if rt.Writable && unix.Faccessat(unix.AT_FDCWD, rt.Path, unix.W_OK, unix.AT_EACCESS) != nil {
			unwritable = append(unwritable, rt.Path)
		}
	}
	return unwritable, nil
}

// parseUser reads --user: UID or UID:GID (GID then equals UID), never
// root's, except "0" or "0:0" with --local (local): then keepRoot, and
// sandboxd must run as root and the kernel have Landlock. Only a root
// sandboxd can run its commands as another user; a sandboxd of any other
// user accepts its own ids, which its commands keep, and refuses others
// rather than ignore them.
func parseUser(s string, local bool) (uid, gid int, keepRoot bool, err error) {
	if s == "" {
		return 0, 0, false, nil
	}
	if s == "0" || s == "0:0" {
		switch {
		case !local:
			return 0, 0, false, fmt.Errorf("--user %q: commands never run as root (id 0), except on one person's machine with --local, which keeps uid 0 without capabilities", s)
		case os.Getuid() != 0 || os.Geteuid() != 0:
			return 0, 0, false, fmt.Errorf("--user %s needs sandboxd to run as root: it runs as %d:%d, and its commands keep those ids", s, os.Getuid(), os.Getgid())
		case confine.LandlockABI() == 0:
			return 0, 0, false, fmt.Errorf("--user %s needs Landlock, which this kernel lacks (or has disabled): without it a command of uid 0 could write every file root owns; give the workdir to another user and name that one", s)
		}
		return 0, 0, true, nil
	}
	if us, _, _ := strings.Cut(s, ":"); us == "0" {
		return 0, 0, false, fmt.Errorf("--user %q: uid 0 keeps root's group too: write 0 or 0:0 (with --local)", s)
	}
	us, gs, hasGID := strings.Cut(s, ":")
	if !hasGID {
		gs = us
	}
	id := func(v string) (int, error) {
		n, err := strconv.ParseUint(v, 10, 31)
		if err != nil {
			return 0, fmt.Errorf("--user %q: want UID or UID:GID, decimal numbers such as 10001:10001", s)
		}
		if n == 0 {
			return 0, fmt.Errorf("--user %q: commands never run as root (id 0)", s)
		}
		return int(n), nil
	}
	if uid, err = id(us); err != nil {
		return 0, 0, false, err
	}
	if gid, err = id(gs); err != nil {
		return 0, 0, false, err
	}
	if os.Geteuid() != 0 && (uid != os.Getuid() || gid != os.Getgid()) {
		return 0, 0, false, fmt.Errorf("--user %s needs sandboxd to run as root: it runs as %d:%d, and its commands keep those ids", s, os.Getuid(), os.Getgid())
	}
	return uid, gid, false, nil
}

// checkLocalListen refuses a --local serve that would listen beyond this
// machine: --local is one person's machine, reached over loopback, never
// the image (whose --listen is ":8080").
func checkLocalListen(addr string) error {
	lo, err := loopbackListen(addr)
	if err != nil {
		return err
	}
	if !lo {
		return fmt.Errorf("--local listens on loopback only (127.0.0.1:PORT, [::1]:PORT or localhost:PORT), not %q", addr)
	}
	return nil
}

// checkPlainListen refuses a serve without TLS that would listen beyond
// this machine, where the token would cross a network in clear text,
// unless plainHTTP (--plain-http) says that network is trusted.
func checkPlainListen(addr string, plainHTTP bool) error {
	lo, err := loopbackListen(addr)
	if err != nil {
		return err
	}
	if !lo && !plainHTTP {
		return fmt.Errorf("--listen %q is not a loopback address, and plain HTTP would send the token across the network in clear text: "+
			"serve TLS (--tls-from-token, or --tls-cert and --tls-key), or say the network is trusted with --plain-http", addr)
	}
	return nil
}

// loopbackListen reports whether the --listen address addr is on loopback
// only (127.0.0.0/8, ::1 or localhost); ":PORT" and 0.0.0.0 are every
// address.
func loopbackListen(addr string) (bool, error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false, fmt.Errorf("--listen %q: %w", addr, err)
	}
	ip := net.ParseIP(host)
	return strings.EqualFold(host, "localhost") || (ip != nil && ip.IsLoopback()), nil
}

// watchParent calls stop once sandboxd's parent, ppid when sandboxd
// started, has exited (sandboxd is then another process's child): a
// --local sandboxd belongs to the launcher that started it. Polling getppid
// also covers what a parent-death signal does not: changing ids clears that
// signal, and it follows the parent's thread, not its process.
func watchParent(ctx context.Context, ppid int, stop func()) {
	if os.Getppid() != ppid {
		stop()
		return
	}
	tick := time.NewTicker(parentPoll)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			if os.Getppid() != ppid {
				stop()
				return
			}
		}
	}
}

const parentPoll = 250 * time.Millisecond

func newFlagSet(name string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("sandboxd "+name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, usage) }
	return fs
}

func mainCall(args []string, stdout, stderr io.Writer) int {
	hardenProcess(slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn})))
	var rf rootFlags
	fs := newFlagSet("call", stderr)
	rf.register(fs)
	if err := fs.Parse(args); err != nil {
		return ExitUsage
	}
	if fs.NArg() != 2 {
		fmt.Fprintf(stderr, "sandboxd call: want TOOL and 'JSON' arguments, got %d arguments\n%s", fs.NArg(), usage)
		return ExitUsage
	}
	cfg, err := rf.config()
	if err != nil {
		fmt.Fprintf(stderr, "sandboxd call: %v\n", err)
		return ExitUsage
	}
	if err := becomeUser(cfg, nil); err != nil {
		fmt.Fprintf(stderr, "sandboxd call: %v\n", err)
		return ExitFailed
	}
	if _, err := checkRoots(cfg.Roots); err != nil {
		fmt.Fprintf(stderr, "sandboxd call: %v\n", err)
		return ExitUsage
	}
	tools := Tools(cfg)
	defer closeAll(tools)
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	res, err := Call(ctx, tools, fs.Arg(0), json.RawMessage(fs.Arg(1)))
	switch {
	case errors.Is(err, ErrUnknownTool), errors.Is(err, ErrNotObject):
		fmt.Fprintf(stderr, "sandboxd call: %v\n", err)
		return ExitUsage
	case err != nil:
		fmt.Fprintf(stderr, "sandboxd call: %v\n", err)
		return ExitFailed
	}
	if _, err := io.WriteString(stdout, res.Output); err != nil {
		return ExitFailed
	}
	if res.IsError {
		return ExitToolErr
	}
	return ExitOK
}

func closeAll(tools []tool.Tool) {
	for _, t := range tools {
		if c, ok := t.(io.Closer); ok {
			_ = c.Close()
		}
	}
}

func mainServe(args []string, d Defaults, stdout, stderr io.Writer) int {
	ppid := os.Getppid() // for --local, before anything takes time
	log := slog.New(slog.NewJSONHandler(stderr, nil))
	hardenProcess(log)
	var rf rootFlags
	fs := newFlagSet("serve", stderr)
	rf.register(fs)
	listen := fs.String("listen", d.Listen, "address to listen on, HOST:PORT")
	idle := fs.Duration("idle-timeout", DefaultIdle, "exit after this long without a call (0: never)")
	grace := fs.Duration("shutdown-grace", defaultGrace, "on SIGTERM, how long calls in progress may finish")
	fromToken := fs.Bool("tls-from-token", false, "serve TLS 1.3 with the key pair derived from $"+wire.TokenEnv+", which the runner pins")
	certFile := fs.String("tls-cert", "", "serve TLS with this certificate (PEM)")
	keyFile := fs.String("tls-key", "", "and this key (PEM)")
	plainHTTP := fs.Bool("plain-http", false, "serve plain HTTP on an address that is not loopback: the token crosses that network in clear text")
	printAddr := fs.Bool("print-addr", false, "once serving, print the address listened on (HOST:PORT) as one line on stdout")
	chromium := fs.String("browser", "", "the Chromium `PATH` browser_open and screenshot drive (default: none, and they answer that the sandbox has no browser)")
	if err := fs.Parse(args); err != nil {
		return ExitUsage
	}
	// The token leaves the environment first, whatever happens next.
	token, err := takeEnv(wire.TokenEnv)
	if err != nil {
		log.Warn("the token could not be erased from /proc/self/environ", "err", err)
	}
	if fs.NArg() != 0 {
		fmt.Fprintf(stderr, "sandboxd serve: unexpected arguments %q\n%s", fs.Args(), usage)
		return ExitUsage
	}
	if *listen == "" {
		fmt.Fprintf(stderr, "sandboxd serve: --listen is required\n")
		return ExitUsage
	}
	if rf.local {
		if err := checkLocalListen(*listen); err != nil {
			fmt.Fprintf(stderr, "sandboxd serve: %v\n", err)
			return ExitUsage
		}
	}
	if (*certFile == "") != (*keyFile == "") {
		fmt.Fprintf(stderr, "sandboxd serve: --tls-cert and --tls-key go together\n")
		return ExitUsage
	}
	withTLS := *fromToken || *certFile != ""
	switch {
	case *fromToken && *certFile != "":
		fmt.Fprintf(stderr, "sandboxd serve: --tls-from-token and --tls-cert/--tls-key are two ways to serve TLS: give one\n")
		return ExitUsage
	case *plainHTTP && withTLS:
		fmt.Fprintf(stderr, "sandboxd serve: --plain-http allows serving without TLS; it does not go with --tls-from-token or --tls-cert\n")
		return ExitUsage
	case !withTLS:
		if err := checkPlainListen(*listen, *plainHTTP); err != nil {
			fmt.Fprintf(stderr, "sandboxd serve: %v\n", err)
			return ExitUsage
		}
	}
	if err := wire.CheckToken(token); err != nil {
		fmt.Fprintf(stderr, "sandboxd serve: $%s must hold the bearer token: %v\n", wire.TokenEnv, err)
		return ExitUsage
	}
	cfg, err := rf.config()
	if err != nil {
		fmt.Fprintf(stderr, "sandboxd serve: %v\n", err)
		return ExitUsage
	}
	if cfg.Browser, err = checkBrowser(*chromium); err != nil {
		fmt.Fprintf(stderr, "sandboxd serve: %v\n", err)
		return ExitUsage
	}
	if cfg.BrowserAllow, err = egress.AllowFromEnv(os.Getenv, log); err != nil {
		fmt.Fprintf(stderr, "sandboxd serve: %v\n", err)
		return ExitUsage
	}
	cfg.Logger = log
	// Without capabilities from the start: sandboxd executes itself again
	// here, so the token goes back into the new image's environment (which
	// takes it out again).
	if cfg.Policy.KeepRoot {
		if err := becomeUser(cfg, []string{wire.TokenEnv + "=" + token}); err != nil {
			fmt.Fprintf(stderr, "sandboxd serve: %v\n", err)
			return ExitFailed
		}
	}
	var tlsConfig *tls.Config
	switch {
	case *fromToken:
		if tlsConfig, err = pin.ServerTLS(token); err != nil {
			fmt.Fprintf(stderr, "sandboxd serve: %v\n", err)
			return ExitUsage
		}
	case *certFile != "":
		if tlsConfig, err = LoadTLS(*certFile, *keyFile); err != nil {
			fmt.Fprintf(stderr, "sandboxd serve: %v\n", err)
			return ExitUsage
		}
	}
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		fmt.Fprintf(stderr, "sandboxd serve: %v\n", err)
		return ExitFailed
	}
	// What needs root is done: from here on sandboxd acts as its commands'
	// user, when it runs as root (under --user 0 it has no capability left
	// already).
	if !cfg.Policy.KeepRoot {
		if err := becomeUser(cfg, nil); err != nil {
			ln.Close()
			fmt.Fprintf(stderr, "sandboxd serve: %v\n", err)
			return ExitFailed
		}
	}
	// A server runs commands while it starts threads; call runs one.
	confine.ReserveThreads(reservedThreads)
	unwritable, err := checkRoots(cfg.Roots)
	if err != nil {
		ln.Close()
		fmt.Fprintf(stderr, "sandboxd serve: %v\n", err)
		return ExitUsage
	}
	for _, dir := range unwritable {
		log.Warn("a writable root is not writable by the commands' user: bash and apply_patch will fail there", "dir", dir, "uid", os.Geteuid())
	}
	srv, err := New(Options{Token: token, Tools: Tools(cfg), IdleTimeout: *idle, ShutdownGrace: *grace, Logger: log, Agent: AgentRoot(cfg.Roots),
		Setup: SetupFor(cfg)})
	if err != nil {
		ln.Close()
		fmt.Fprintf(stderr, "sandboxd serve: %v\n", err)
		return ExitUsage
	}
	if len(rf.unsetEnv) > 0 {
		log.Warn("variables named by --env are not set: commands go without them", "names", rf.unsetEnv)
	}
	log.Info("listening", "addr", ln.Addr().String(), "tls", tlsConfig != nil, "tls_from_token", *fromToken, "workdir", cfg.Roots.Workdir(),
		"confinement", cfg.Policy.Status(), "local", rf.local, "env", rf.env,
		"timeout_seconds", rf.timeout, "idle_timeout", idle.String(), "browser", cfg.Browser)
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	if rf.local {
		go watchParent(ctx, ppid, func() {
			log.Info("the parent exited: stopping")
			stop()
		})
	}
	if *printAddr {
		if _, err := fmt.Fprintln(stdout, ln.Addr().String()); err != nil {
			ln.Close()
			log.Error("print the address", "err", err)
			return ExitFailed
		}
	}
	err = srv.Serve(ctx, ln, tlsConfig)
	if err != nil && !errors.Is(err, ErrIdle) {
		log.Error("serve", "err", err)
		return ExitFailed
	}
	return ExitOK
}

func mainHealth(args []string, d Defaults, stderr io.Writer) int {
	fs := newFlagSet("health", stderr)
	addr := fs.String("addr", d.HealthAddr, "sandboxd's HOST:PORT")
	useTLS := fs.Bool("tls", false, "sandboxd serves TLS")
	if err := fs.Parse(args); err != nil {
		return ExitUsage
	}
	scheme := "http"
	client := &http.Client{Timeout: 3 * time.Second}
	if *useTLS {
		scheme = "https"
		// The probe runs beside sandboxd and reads nothing secret.
		client.Transport = &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}} //nolint:gosec
	}
	resp, err := client.Get(scheme + "://" + *addr + wire.HealthPath)
	if err != nil {
		fmt.Fprintf(stderr, "sandboxd health: %v\n", err)
		return ExitFailed
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		fmt.Fprintf(stderr, "sandboxd health: %s\n", resp.Status)
		return ExitFailed
	}
	return ExitOK
}

// hardenProcess marks sandboxd non-dumpable, so that processes of its own
// user (bash, exec_command) can neither ptrace it nor read its memory or
// /proc/<pid>/environ.
func hardenProcess(log *slog.Logger) {
	if err := confine.SetNonDumpable(); err != nil {
		log.Warn("could not mark sandboxd non-dumpable", "err", err)
	}
}

// reservedThreads is the server's reserve of idle threads, so that the
// seccomp filters of its commands name the threads it runs on
// (confine.ReserveThreads): one for each command that can run at once (its
// reaper waits in a system call), that is the exec_command sessions
// (sandbox.MaxSessions) and a bash or grep call or two, and some for
// the file tools. Idle threads cost their stacks' touched pages only.
const reservedThreads = sandbox.MaxSessions + 32

// checkBrowser checks serve's --browser: empty (no browser), or an
// executable file, given by an absolute path (the commands' PATH is not
// sandboxd's).
func checkBrowser(path string) (string, error) {
	if path == "" {
		return "", nil
	}
	if !filepath.IsAbs(path) {
		return "", fmt.Errorf("--browser %q: give Chromium's absolute path, such as /usr/bin/chromium", path)
	}
	fi, err := os.Stat(path)
	if err != nil {
		return "", fmt.Errorf("--browser: %w (install Chromium: apt-get install chromium)", err)
	}
	if fi.IsDir() || fi.Mode()&0o111 == 0 {
		return "", fmt.Errorf("--browser %s is not an executable file", path)
	}
	return path, nil
}
