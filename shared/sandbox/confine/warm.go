//go:build linux

package confine

import (
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Warm trampolines.
//
// A cold confined command pays for one more exec (of sandboxd, whose
// trampoline then confines the process) than a bare one, about a
// millisecond here, where `sh -c true` takes one. Start hides it: for each
// policy it keeps a few trampolines started ahead of time, already
// confined (uid, rlimits, subreaper, no_new_privs, Landlock, seccomp), each
// waiting on a socket for the one command it will become: argv,
// environment, directory and the stdio descriptors (SCM_RIGHTS). It enters
// the directory, takes the
// descriptors (and the terminal as its controlling one), looks the program
// up, sets RLIMIT_AS and execs, exactly as the trampoline does; the process
// is the command's, so Wait, KillGroup and the subreaper work as before.
//
// What changes: the seccomp guard (sandboxd's pid, group and threads) is
// the one of the moment the trampoline started, and the directory is
// entered as the confined uid rather than as root. A warm trampoline runs
// as the confined uid and is confined like a command: a command can kill
// one (the next Start then falls back to a cold start), nothing more.

const (
	warmArg0 = "agentsfleet-confine-warm"
	warmIdle = 2 // warm trampolines kept per policy
	maxReq   = 1 << 20
)

// warmRequest is what Start sends a warm trampoline.
type warmRequest struct {
	Argv []string
	Env  []string
	Dir  string
	TTY  bool // stdin becomes the controlling terminal
}

// encode writes r as trampoline.c reads it: a flags byte (1: TTY), the
// number of arguments and of variables (uint32, native byte order), then
// the directory, the arguments and the variables, each ending in NUL.
func (r warmRequest) encode() ([]byte, bool) {
	var flags byte
	if r.TTY {
		flags = 1
	}
	msg := []byte{flags}
	msg = binary.NativeEndian.AppendUint32(msg, uint32(len(r.Argv)))
	msg = binary.NativeEndian.AppendUint32(msg, uint32(len(r.Env)))
	for _, s := range append(append([]string{r.Dir}, r.Argv...), r.Env...) {
		if strings.IndexByte(s, 0) >= 0 {
			return nil, false
		}
		msg = append(append(msg, s...), 0)
	}
	return msg, len(msg) <= maxReq
}

// Start starts cmd, which must come from Command, as cmd.Start would, but
// through a warm trampoline when it can (see above), which saves most of the
// trampoline's start. It can when cmd's stdio is nil or *os.File, it has no
// ExtraFiles, no context (CommandContext) and no SysProcAttr beyond what
// Command sets plus Setctty with Ctty 0. Otherwise, or when no warm
// trampoline can be had, it calls cmd.Start. Afterwards use cmd as after
// cmd.Start: Wait, Process, ProcessState, KillGroup.
func Start(cmd *exec.Cmd) error {
	req, files, key, guard, ok := warmable(cmd)
	if !ok {
		return cmd.Start()
	}
	msg, ok := req.encode()
	if !ok {
		return cmd.Start()
	}
	// The trampoline enters the directory through this descriptor: like
	// the cold one, which enters it as root and then checks that the uid
	// may use it, it then needs no access to the directory's parents.
	dir, err := unix.Open(req.Dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return &os.PathError{Op: "chdir", Path: req.Dir, Err: err}
	}
	defer unix.Close(dir)
	pl := poolFor(key)
	defer pl.refill()
	for range warmIdle + 1 {
		w := pl.take()
		if w == nil {
			break
		}
		if w.guard != guard {
			// sandboxd has started threads since these trampolines
			// did: their filters do not guard them.
			w.release()
			pl.drain()
			break
		}
		err, started := w.run(req.Dir, msg, files, dir)
		if started {
			cmd.Process = w.cmd.Process
			warmStarts.Add(1)
			return nil
		}
		if err != nil {
			return err
		}
	}
	return cmd.Start()
}

// warmable returns the request for cmd, the key of its policy and the guard
// lines that complete it, or false when cmd needs cmd.Start.
func warmable(cmd *exec.Cmd) (req warmRequest, files [3]*os.File, key, guard string, ok bool) {
	if cmd.Process != nil || cmd.Err != nil || cmd.Cancel != nil || len(cmd.ExtraFiles) > 0 ||
		cmd.Path != selfExe || len(cmd.Args) < 2 || cmd.Args[0] != trampolineArg0 {
		return warmRequest{}, files, "", "", false
	}
	attr := cmd.SysProcAttr
	if attr == nil || !attr.Setsid || attr.Pdeathsig != syscall.SIGKILL {
		return warmRequest{}, files, "", "", false
	}
	rest := *attr
	rest.Setsid, rest.Pdeathsig, rest.Setctty = false, 0, false
	if rest.Credential == rootAgain() {
		rest.Credential = nil // Command's own
	}
	if !reflect.ValueOf(rest).IsZero() { // Ctty too: it must be 0 (stdin)
		return warmRequest{}, files, "", "", false
	}
	for i, s := range []any{cmd.Stdin, cmd.Stdout, cmd.Stderr} {
		switch f := s.(type) {
		case nil:
		case *os.File:
			if f == nil {
				return warmRequest{}, files, "", "", false
			}
			files[i] = f
		default:
			return warmRequest{}, files, "", "", false
		}
	}
	if attr.Setctty && files[0] == nil {
		return warmRequest{}, files, "", "", false
	}
	// The policy is the last variable Command set; a caller may have
	// appended others after it.
	var enc string
	env := make([]string, 0, len(cmd.Env))
	for _, kv := range cmd.Env {
		if v, ok := strings.CutPrefix(kv, policyEnv+"="); ok {
			enc = v
			continue
		}
		env = append(env, kv)
	}
	if !strings.HasPrefix(enc, policyMagic+"\n") {
		return warmRequest{}, files, "", "", false
	}
	// The guard and the filter built for it, which withGuard put last, are
	// those of the warm trampoline's start.
	key, guard, ok = strings.Cut(enc, "\nguard ")
	if !ok {
		return warmRequest{}, files, "", "", false
	}
	var err error
	dir := cmd.Dir
	if dir == "" {
		// The cold trampoline inherits sandboxd's; the warm one is in /.
		if dir, err = os.Getwd(); err != nil {
			return warmRequest{}, files, "", "", false
		}
	} else if !filepath.IsAbs(dir) {
		return warmRequest{}, files, "", "", false
	}
	return warmRequest{Argv: cmd.Args[1:], Env: Scrub(env), Dir: dir, TTY: attr.Setctty}, files, key + "\n", guard, true
}

// warm is a started warm trampoline.
type warm struct {
	cmd   *exec.Cmd
	conn  *os.File // our end of its socket
	guard string   // the guard lines of its policy: sandboxd's threads at its start
}

// release lets w go unused: it exits when its socket closes.
func (w *warm) release() {
	w.conn.Close()
	go func() { _ = w.cmd.Wait() }()
}

// run hands w the request. started reports that the command runs (w is
// then used up); otherwise err, if not nil, is the command's own failure to
// start (its directory), and nil means w was unusable.
func (w *warm) run(dirName string, msg []byte, files [3]*os.File, dir int) (err error, started bool) {
	defer w.conn.Close()
	fail := func() (error, bool) {
		_ = w.cmd.Process.Kill()
		go func() { _ = w.cmd.Wait() }()
		return nil, false
	}
	var fds []int
	for i, f := range files {
		if f == nil {
			null, err := devNull()
			if err != nil {
				return fail()
			}
			files[i] = null
		}
		fds = append(fds, int(files[i].Fd()))
	}
	fds = append(fds, dir)
	rc, err := w.conn.SyscallConn()
	if err != nil {
		return fail()
	}
	var sendErr error
	if err := rc.Write(func(fd uintptr) bool {
		sendErr = unix.Sendmsg(int(fd), msg, unix.UnixRights(fds...), nil, 0)
		return sendErr != unix.EAGAIN
	}); err != nil || sendErr != nil {
		return fail()
	}
	// The answer: an empty message once the directory is entered, else
	// the error; nothing (EOF) when the trampoline died.
	// A stopped or killed trampoline (commands of the same uid can do
	// that) costs at most this.
	_ = w.conn.SetReadDeadline(time.Now().Add(2 * time.Second))
	buf := make([]byte, 4096)
	n, err := w.conn.Read(buf)
	if err != nil {
		return fail()
	}
	if n > 1 || buf[0] != 0 {
		_ = w.cmd.Wait()
		return &os.PathError{Op: "chdir", Path: dirName, Err: errors.New(string(buf[:n]))}, false
	}
	return nil, true
}

// devNull is /dev/null, opened once, for the stdio a command leaves nil
// (the trampoline gets a duplicate). Opening it for each command cost every
// warm start five system calls (open, close, and os's attempt to add it to
// the poller: two fcntl and a failing epoll_ctl).
var devNull = sync.OnceValues(func() (*os.File, error) { return os.OpenFile(os.DevNull, os.O_RDWR, 0) })

// pool holds the warm trampolines of one policy.
type pool struct {
	key      string
	ready    chan *warm
	mu       sync.Mutex
	starting int
	failures int
}

var (
	pools      sync.Map // key → *pool
	warmStarts atomic.Int64
)

// poolFor returns the pool of key. Only the maxPools pools used last keep
// warm trampolines (sandboxd has one policy; tests have many): each idle
// one is a process of the confined uid, counted by RLIMIT_NPROC.
func poolFor(key string) *pool {
	v, ok := pools.Load(key)
	if !ok {
		v, _ = pools.LoadOrStore(key, &pool{key: key, ready: make(chan *warm, warmIdle)})
	}
	pl := v.(*pool)
	recent.Lock()
	defer recent.Unlock()
	if len(recent.pools) > 0 && recent.pools[0] == pl {
		return pl
	}
	recent.pools = append([]*pool{pl}, slices.DeleteFunc(recent.pools, func(o *pool) bool { return o == pl })...)
	for len(recent.pools) > maxPools {
		old := recent.pools[len(recent.pools)-1]
		recent.pools = recent.pools[:len(recent.pools)-1]
		go old.drain()
	}
	return pl
}

const maxPools = 2

var recent struct {
	sync.Mutex
	pools []*pool // most recently used first
}

// drain lets the idle trampolines of pl go: they exit when their socket
// closes. A later Start of its policy fills it again.
func (pl *pool) drain() {
	for {
		select {
		case w := <-pl.ready:
			w.conn.Close()
			_ = w.cmd.Wait()
		default:
			return
		}
	}
}

// take returns a warm trampoline, waiting a little for one that is
// starting, or nil. The caller starts replacements (fill) once the command
// is on its way, so that their start does not compete with its handover.
func (pl *pool) take() *warm {
	select {
	case w := <-pl.ready:
		return w
	default:
	}
	pl.mu.Lock()
	starting := pl.starting
	pl.mu.Unlock()
	if starting == 0 {
		return nil
	}
	select {
	case w := <-pl.ready:
		return w
	case <-time.After(20 * time.Millisecond):
		return nil
	}
}

// refillDelay is how long after a warm start its replacement starts, when
// another trampoline is still ready for the next command: starting one
// (an exec of sandboxd and its confinement) while the command just handed
// over execs and runs took a core from it and from sandboxd's answer, on
// a machine of two. An agent's next command comes seconds later; back to
// back ones empty the pool, which then refills at once.
const refillDelay = 3 * time.Millisecond

// refill is fill after a warm start: at once when the pool is empty, else
// after refillDelay.
func (pl *pool) refill() {
	if len(pl.ready) == 0 {
		pl.fill()
		return
	}
	time.AfterFunc(refillDelay, pl.fill)
}

// fill starts warm trampolines until warmIdle are ready or starting.
func (pl *pool) fill() {
	pl.mu.Lock()
	defer pl.mu.Unlock()
	if pl.failures >= 3 {
		return // cold starts from now on
	}
	for len(pl.ready)+pl.starting < warmIdle {
		pl.starting++
		go pl.startOne()
	}
}

func (pl *pool) startOne() {
	w, err := startWarm(pl.key)
	pl.mu.Lock()
	pl.starting--
	if err != nil {
		pl.failures++
		if pl.failures == 3 {
			slog.Warn("confine: warm trampolines fail to start; confined commands start cold", "err", err)
		}
		pl.mu.Unlock()
		return
	}
	pl.failures = 0
	pl.mu.Unlock()
	recent.Lock()
	active := slices.Contains(recent.pools, pl)
	recent.Unlock()
	if !active {
		w.conn.Close()
		_ = w.cmd.Wait()
		return
	}
	select {
	case pl.ready <- w:
	default:
		w.conn.Close() // its trampoline exits
		go func() { _ = w.cmd.Wait() }()
	}
}

// startWarm starts a trampoline for the policy key (a wirePolicy without
// guard) and waits until it is confined and ready.
func startWarm(key string) (*warm, error) {
	enc, err := withGuard(key)
	if err != nil {
		return nil, err
	}
	pair, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("socketpair: %w", err)
	}
	// Ours goes to the runtime's poller (for the deadlines), theirs stays
	// blocking.
	if err := unix.SetNonblock(pair[0], true); err != nil {
		unix.Close(pair[0])
		unix.Close(pair[1])
		return nil, err
	}
	ours, theirs := os.NewFile(uintptr(pair[0]), "warm"), os.NewFile(uintptr(pair[1]), "warm")
	defer theirs.Close()
	cmd := exec.Command(selfExe)
	cmd.Args = []string{warmArg0}
	cmd.Env = []string{policyEnv + "=" + enc}
	cmd.Dir = "/"
	cmd.ExtraFiles = []*os.File{theirs} // descriptor 3, warm_fd in trampoline.c
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Pdeathsig: syscall.SIGKILL, Credential: rootAgain()}
	if err := cmd.Start(); err != nil {
		ours.Close()
		return nil, err
	}
	// It says it is ready with one empty message.
	_ = ours.SetReadDeadline(time.Now().Add(10 * time.Second))
	var b [1]byte
	if n, err := ours.Read(b[:]); err != nil || n != 1 || b[0] != 0 {
		ours.Close()
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		return nil, fmt.Errorf("warm trampoline did not start: %v", err)
	}
	_ = ours.SetReadDeadline(time.Time{})
	_, guard, _ := strings.Cut(enc, "\nguard ")
	return &warm{cmd: cmd, conn: ours, guard: guard}, nil
}
