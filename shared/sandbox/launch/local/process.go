package local

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/agentsfleet/agentsfleet/shared/sandbox/client"
	"github.com/agentsfleet/agentsfleet/shared/sandbox/launch"
	"github.com/agentsfleet/agentsfleet/shared/sandbox/wire"
	"github.com/agentsfleet/agentsfleet/shared/web/egress"
)

// process is one sandboxd serve.
type process struct {
	cmd    *exec.Cmd
	sb     *launch.Sandbox
	nonce  string // a warm one's, to check a pool's record against
	agent  string // the fleet's folder it serves
	home   string // a warm sandbox's own folder, removed when it stops
	stderr *tail
	exited chan struct{} // closed once it has exited and been waited for
	err    error         // Wait's, once exited is closed
}

func (p *process) alive() bool {
	select {
	case <-p.exited:
		return false
	default:
		return true
	}
}

// stop sends SIGTERM and waits grace (or until ctx ends) for the process
// to exit, then kills it, and returns once it has been waited for.
func (p *process) stop(ctx context.Context, grace time.Duration) {
	if !p.alive() {
		return
	}
	if grace > 0 && p.cmd.Process.Signal(syscall.SIGTERM) == nil {
		t := time.NewTimer(grace)
		defer t.Stop()
		select {
		case <-p.exited:
			return
		case <-t.C:
		case <-ctx.Done():
		}
	}
	_ = p.cmd.Process.Kill()
	<-p.exited
}

// start starts sandboxd for spec, over the fleet's folder, and waits
// until it answers /healthz.
func (l *Launcher) start(ctx context.Context, spec launch.Spec) (*process, error) {
	agent := filepath.Join(l.stateDir, "agents", spec.Fleet)
	if err := os.Mkdir(agent, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return nil, fmt.Errorf("%w: run %s: the fleet's folder: %w", launch.ErrStart, spec.RunID, err)
	}
	return l.spawn(ctx, "run "+spec.RunID, agent, spec.ToolTimeout, spec.Browser)
}

// spawn starts sandboxd serving agent as the fleet's folder, with the tool
// timeout toolTimeout (zero: sandboxd's) and, when browser, the Launcher's
// Chromium, and waits until it answers /healthz. what names the sandbox in
// errors ("run R").
func (l *Launcher) spawn(ctx context.Context, what, agent string, toolTimeout time.Duration, browser bool) (*process, error) {
	fail := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s: "+format, append([]any{launch.ErrStart, what}, args...)...)
	}
	if browser && l.browser == "" {
		return nil, fail("%w: no Chromium was given (Config.Browser)", launch.ErrNoBrowser)
	}
	args, err := l.args(agent)
	if err != nil {
		return nil, fail("%w", err)
	}
	if browser {
		args = append(args, "--browser", l.browser)
	}
	raw := make([]byte, 32)
	if _, err := rand.Read(raw); err != nil {
		return nil, fail("a token: %w", err)
	}
	token := hex.EncodeToString(raw)
	toolTimeout = roundUp(toolTimeout)
	if toolTimeout > 0 {
		args = append(args, "--timeout", strconv.Itoa(int(toolTimeout/time.Second)))
	}

	cmd := exec.Command(l.binary, args...)
	// The token goes to sandboxd alone, which erases it at start; the rest
	// of its environment is this process's, less what may hold a secret.
	cmd.Env = append(sandboxdEnv(os.Environ()), wire.TokenEnv+"="+token)
	if l.allow != "" {
		cmd.Env = append(cmd.Env, egress.AllowEnv+"="+l.allow)
	}
	cmd.Dir = "/"
	// Its own process group: a Ctrl-C at the terminal is for this
	// process, which stops its sandboxes itself.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.WaitDelay = time.Second
	p := &process{cmd: cmd, stderr: &tail{log: l.log}, exited: make(chan struct{})}
	cmd.Stderr = p.stderr
	out, w, err := os.Pipe()
	if err != nil {
		return nil, fail("%w", err)
	}
	cmd.Stdout = w
	err = cmd.Start()
	w.Close()
	if err != nil {
		out.Close()
		return nil, fail("start %s: %w", l.binary, err)
	}
	go func() {
		p.err = cmd.Wait()
		close(p.exited)
	}()
	// The first line on its stdout is the address it listens on.
	addrs := make(chan string, 1)
	go func() {
		defer out.Close()
		br := bufio.NewReader(out)
		if line, err := br.ReadString('\n'); err == nil {
			addrs <- strings.TrimSpace(line)
		}
		_, _ = io.Copy(io.Discard, br)
	}()
	deadline := time.NewTimer(l.startTimeout)
	defer deadline.Stop()
	failStarted := func(format string, args ...any) error {
		p.stop(context.Background(), 0)
		msg := fmt.Sprintf(format, args...)
		if last := p.stderr.last(tailLines); last != "" {
			msg += "; sandboxd said:\n" + last
		}
		return fail("%s", msg)
	}
	var addr string
	select {
	case addr = <-addrs:
	case <-p.exited:
		return nil, failStarted("sandboxd exited before it listened (%v)", p.err)
	case <-deadline.C:
		return nil, failStarted("sandboxd did not listen within %v", l.startTimeout)
	case <-ctx.Done():
		p.stop(context.Background(), 0)
		return nil, fail("%w", ctx.Err())
	}
	if host, _, err := net.SplitHostPort(addr); err != nil || !net.ParseIP(host).IsLoopback() {
		return nil, failStarted("sandboxd printed %q, not a loopback address it listens on", addr)
	}
	c, err := client.New(client.Config{URL: "http://" + addr, Token: token, CallTimeout: client.CallTimeoutFor(toolTimeout)})
	if err != nil {
		return nil, failStarted("%v", err)
	}
	for {
		err := c.Health(ctx)
		if err == nil {
			break
		}
		if ctx.Err() != nil {
			p.stop(context.Background(), 0)
			return nil, fail("%w", ctx.Err())
		}
		select {
		case <-p.exited:
			return nil, failStarted("sandboxd exited before it answered %s (%v)", wire.HealthPath, p.err)
		case <-deadline.C:
			return nil, failStarted("sandboxd did not answer %s within %v: %v", wire.HealthPath, l.startTimeout, err)
		case <-time.After(20 * time.Millisecond):
		}
	}
	p.sb = &launch.Sandbox{ID: "sandboxd-" + strconv.Itoa(cmd.Process.Pid), Client: c,
		Places: launch.Places{Workdir: l.workdir, Agent: agent}}
	p.agent = agent
	return p, nil
}

// args are sandboxd's arguments over the fleet's folder agent, but
// --timeout; as root, it gives agent to the workdir's owner.
func (l *Launcher) args(agent string) ([]string, error) {
	args := []string{"serve", "--local", "--listen", "127.0.0.1:0", "--print-addr",
		"--workdir", l.workdir, "--agent", agent, "--shutdown-grace", (l.grace / 2).String()}
	if l.data != "" {
		args = append(args, "--data", l.data)
	}
	if l.workspace != "" {
		args = append(args, "--workspace", l.workspace)
	}
	switch {
	case l.idle < 0:
		args = append(args, "--idle-timeout", "0")
	case l.idle > 0:
		args = append(args, "--idle-timeout", l.idle.String())
	}
	for _, name := range l.env {
		args = append(args, "--env", name)
	}
	if os.Geteuid() != 0 {
		// sandboxd and its commands keep this process's uid.
		return args, nil
	}
	// As root: the commands act as the workdir's owner, who gets the
	// fleet's folder (the folder itself: what earlier runs left in it
	// stays its owner's).
	uid, gid, err := owner(l.workdir)
	if err != nil {
		return nil, err
	}
	if uid == 0 {
		return append(args, "--user", "0"), nil
	}
	user := strconv.Itoa(uid) + ":" + strconv.Itoa(gid)
	if gid == 0 {
		// sandboxd never gives a command root's group; the owner's uid
		// stands in for it.
		user = strconv.Itoa(uid)
		gid = uid
	}
	if err := os.Lchown(agent, uid, gid); err != nil {
		return nil, fmt.Errorf("give the fleet's folder to uid %d: %w", uid, err)
	}
	return append(args, "--user", user), nil
}

// owner returns the uid and gid that own dir.
func owner(dir string) (uid, gid int, err error) {
	fi, err := os.Stat(dir)
	if err != nil {
		return 0, 0, fmt.Errorf("the workdir's owner: %w", err)
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, 0, fmt.Errorf("the workdir's owner: no owner in %T", fi.Sys())
	}
	return int(st.Uid), int(st.Gid), nil
}

// roundUp returns d in whole seconds, rounded up; zero or less is zero.
func roundUp(d time.Duration) time.Duration {
	if d <= 0 {
		return 0
	}
	return time.Duration(math.Ceil(d.Seconds())) * time.Second
}

// sandboxdEnv is environ without the variables that may hold secrets.
func sandboxdEnv(environ []string) []string {
	out := make([]string, 0, len(environ))
	for _, kv := range environ {
		if name, _, _ := strings.Cut(kv, "="); wire.ForbiddenEnv(name) == "" {
			out = append(out, kv)
		}
	}
	return out
}

// tailLines is how many of sandboxd's last lines a start error quotes.
const tailLines = 8

// tail keeps the last lines sandboxd wrote to its standard error and
// passes whole lines on to the log.
type tail struct {
	log     *lineLog
	mu      sync.Mutex
	partial []byte
	lines   []string
}

func (t *tail) Write(b []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.partial = append(t.partial, b...)
	for {
		i := bytes.IndexByte(t.partial, '\n')
		if i < 0 {
			break
		}
		t.add(string(t.partial[:i]))
		t.partial = t.partial[i+1:]
	}
	if len(t.partial) > maxLine {
		t.add(string(t.partial))
		t.partial = nil
	}
	return len(b), nil
}

const (
	maxLine  = 4 << 10
	keptTail = 32
)

func (t *tail) add(line string) {
	t.log.write(line)
	if len(line) > maxLine {
		line = line[:maxLine] + "…"
	}
	t.lines = append(t.lines, line)
	if len(t.lines) > keptTail {
		t.lines = t.lines[len(t.lines)-keptTail:]
	}
}

// last returns the last n lines, and what follows the last newline.
func (t *tail) last(n int) string {
	t.mu.Lock()
	defer t.mu.Unlock()
	lines := t.lines
	if len(t.partial) > 0 {
		lines = append(lines[:len(lines):len(lines)], string(t.partial))
	}
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// lineLog writes whole lines of every sandbox to one writer.
type lineLog struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lineLog) write(line string) {
	if l == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	_, _ = io.WriteString(l.w, line+"\n")
}
