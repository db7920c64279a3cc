//go:build linux

package confine

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

// ExitConfineFailure is the exit status of a confined command whose
// confinement could not be applied (a policy that does not decode, a
// seccomp filter the kernel refuses, Landlock failing where sandboxd saw
// it). The target never ran; stderr holds one line starting with
// "agentsfleet-confine:". Callers should treat it as a broken environment,
// not as the command's own failure.
const ExitConfineFailure = 125

// NobodyID is the uid and gid a confined process runs as when sandboxd runs
// as root and the Policy names none.
const NobodyID = 65534

// Limits are the rlimits of a confined process. Zero means the default.
// Soft and hard limits are equal, except CPUSeconds, whose hard limit is one
// second higher so that SIGXCPU comes before SIGKILL.
type Limits struct {
	// Processes is RLIMIT_NPROC. The kernel counts every process and thread
	// of the uid, not of the command: when sandboxd is not root its own
	// threads and every other confined command count too.
	Processes    uint64
	OpenFiles    uint64 // RLIMIT_NOFILE
	FileSize     uint64 // RLIMIT_FSIZE, bytes; writing past it raises SIGXFSZ
	AddressSpace uint64 // RLIMIT_AS, bytes of virtual address space
	CPUSeconds   uint64 // RLIMIT_CPU
}

// DefaultLimits are the limits used where a Policy leaves one at zero.
var DefaultLimits = Limits{
	Processes:    256,
	OpenFiles:    1024,
	FileSize:     1 << 30, // 1 GiB
	AddressSpace: 4 << 30, // 4 GiB
	CPUSeconds:   600,
}

func (l Limits) withDefaults() Limits {
	set := func(v *uint64, d uint64) {
		if *v == 0 {
			*v = d
		}
	}
	set(&l.Processes, DefaultLimits.Processes)
	set(&l.OpenFiles, DefaultLimits.OpenFiles)
	set(&l.FileSize, DefaultLimits.FileSize)
	set(&l.AddressSpace, DefaultLimits.AddressSpace)
	set(&l.CPUSeconds, DefaultLimits.CPUSeconds)
	return l
}

// Policy says what a confined process may reach. A Policy is read by
// Command and not kept; it is safe to share between goroutines as long as
// nobody modifies it.
type Policy struct {
	// ReadOnly are readable (and executable) roots: the mounted data, the
	// system directories. The system directories, /proc and the usual /dev
	// entries are readable whatever this says.
	ReadOnly []string
	// Writable are the writable roots: workdir, /agent, workspace. /tmp and
	// /dev/shm are always writable.
	Writable []string
	Limits   Limits
	// UID and GID are the identity to drop to when sandboxd runs as root.
	// Zero means NobodyID. Ignored when sandboxd is not root: the process
	// then keeps sandboxd's uid.
	UID, GID int
	// KeepRoot, when sandboxd runs as root, makes the process keep uid and
	// gid 0 instead of dropping to UID:GID, with every capability gone:
	// the securebits NOROOT and NO_SETUID_FIXUP set and locked, the
	// bounding and ambient sets empty, and empty effective, permitted and
	// inheritable sets, then no_new_privs as always. File ownership and
	// Landlock then decide what it touches: it meets the permissions of
	// the files root owns (it may write them where Landlock lets it) and
	// nothing beyond, no CAP_DAC_OVERRIDE, CAP_CHOWN, CAP_MKNOD,
	// CAP_NET_BIND_SERVICE, CAP_SETUID, CAP_SYS_ADMIN or any other. It is
	// sandboxd's local mode for a workdir root owns (sandboxd --local
	// --user 0), never the image's. Landlock is required (Command fails
	// without it), UncheckedReads is ignored (root owns files outside the
	// roots), and from Landlock ABI 6 signals are scoped to the command's
	// own descendants (root shares its uid with the machine's daemons).
	// RLIMIT_NPROC does not bind uid 0 (the kernel exempts root's user
	// whatever its capabilities): processes are bounded only by the
	// machine's (or container's) pid limit. Ignored when sandboxd is not
	// root.
	KeepRoot bool
	// Env is added to the base environment (PATH, HOME, LANG…): a
	// variable of Env replaces the base one of the same name. Variables
	// that Scrub removes are removed from it too.
	Env []string
	// UncheckedReads leaves reading, executing and truncating files to
	// file permissions: Landlock then refuses only what changes the file
	// system outside the writable roots (writing, creating, removing,
	// renaming, linking). It is for a program that only reads, is given
	// paths sandboxd checked, and follows no link on its own (grep's rg):
	// Landlock checks every file such a program opens, up the directories
	// to the nearest rule, which costs a search of many small files some
	// 10%. What bounds its reads is then sandboxd's check and the uid: a
	// directory swapped for a link while it searches can lead it to files
	// outside the roots that its uid may read.
	UncheckedReads bool

	noLandlock bool // tests only: see wirePolicy.NoLandlock
	noSeccomp  bool // tests only: see wirePolicy.NoSeccomp
}

const (
	trampolineArg0 = "agentsfleet-confine"
	policyEnv      = "AGENTSFLEET_CONFINE_POLICY"
	selfExe        = "/proc/self/exe"
)

// Command returns a command that runs name with args under p. name is looked
// up in the confined PATH (BaseEnv's, or the one in p.Env); when it is not
// found, Start returns an *exec.Error wrapping exec.ErrNotFound, as
// exec.Command would.
//
// The caller sets Dir and stdio and starts it. It may append to cmd.Env
// (the additions are scrubbed) but must not replace it: the policy travels
// in it, and a command without it exits with ExitConfineFailure. It may add
// to cmd.SysProcAttr (Setctty, Ctty) but must keep Setsid and must not
// change Credential: when sandboxd is root the trampoline drops to Identity
// itself, after entering Dir, so that a Dir the uid cannot use fails with a
// clear message (exit ExitConfineFailure) rather than inside fork.
//
// cmd.Path is /proc/self/exe and cmd.Args[0] the trampoline's marker;
// cmd.Args[1:] are name and args. An error from Start therefore reads
// "fork/exec /proc/self/exe: …": the child could not be started at all
// (most often, cmd.Dir does not exist). The program's own failures arrive
// as its exit status and stderr.
//
// The process leads its own session and process group; KillGroup kills it
// and every descendant.
func (p *Policy) Command(name string, args ...string) (*exec.Cmd, error) {
	cmd := exec.Command(selfExe)
	if err := p.setup(cmd, name, args); err != nil {
		return nil, err
	}
	return cmd, nil
}

// CommandContext is Command with a context: when ctx is done, the command
// and all its descendants are killed (KillGroup), and Wait returns.
func (p *Policy) CommandContext(ctx context.Context, name string, args ...string) (*exec.Cmd, error) {
	cmd := exec.CommandContext(ctx, selfExe)
	if err := p.setup(cmd, name, args); err != nil {
		return nil, err
	}
	cmd.Cancel = func() error { return KillGroup(cmd) }
	return cmd, nil
}

var procMounted = sync.OnceValue(func() error {
	_, err := os.Stat(selfExe)
	return err
})

func (p *Policy) setup(cmd *exec.Cmd, name string, args []string) error {
	if name == "" {
		return errors.New("confine: no program")
	}
	if err := procMounted(); err != nil {
		return fmt.Errorf("confine: the trampoline needs /proc: %w", err)
	}
	warnOnce.Do(warnWithoutLandlock)

	w := wirePolicy{
		Limits:         p.Limits,
		Landlock:       LandlockABI() > 0 && !p.noLandlock,
		Seccomp:        !p.noSeccomp,
		UncheckedReads: p.UncheckedReads,
	}
	switch {
	case isRoot() && p.KeepRoot:
		if !w.Landlock {
			return errors.New("confine: a command that keeps uid 0 needs Landlock, which this kernel lacks: without it, root's files outside the roots would be writable to it")
		}
		w.NoCaps, w.UncheckedReads = true, false
	case isRoot():
		w.UID, w.GID = ids(p.UID, p.GID)
	}
	var err error
	if w.ReadOnly, err = absPaths(p.ReadOnly); err != nil {
		return err
	}
	if w.Writable, err = absPaths(p.Writable); err != nil {
		return err
	}
	enc, err := withGuard(w.key())
	if err != nil {
		return fmt.Errorf("confine: %w", err)
	}

	env := mergeEnv(BaseEnv(), Scrub(p.Env))
	cmd.Args = append([]string{trampolineArg0, name}, args...)
	cmd.Env = append(env, policyEnv+"="+enc)
	if lookErr := precheck(name, env); lookErr != nil {
		cmd.Err = lookErr
	}
	// The trampoline drops root itself (see dropPrivileges), after the
	// child has entered cmd.Dir.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Pdeathsig: syscall.SIGKILL, Credential: rootAgain()}
	return nil
}

// regainRoot is the Credential of a trampoline that sandboxd, acting as
// another user (ActAs), starts: root again from fork to exec, which the
// real id allows without privilege. Else the trampoline would start with
// its effective id apart from its real one, a set-uid start to the kernel
// (AT_SECURE), and the C library would drop variables such as TMPDIR from
// the environment that it hands on to the command.
var regainRoot = &syscall.Credential{NoSetGroups: true}

// rootAgain returns regainRoot while sandboxd acts as another user, else
// nil.
func rootAgain() *syscall.Credential {
	if os.Geteuid() != 0 && isRoot() {
		return regainRoot
	}
	return nil
}

// Identity returns the uid and gid a process confined under p runs as:
// p.UID and p.GID (zero meaning NobodyID) when sandboxd is root, acting as
// another user or not (ActAs), 0 and 0 when it is root and p.KeepRoot,
// sandboxd's own otherwise. sandboxd uses it to hand the process things it
// must own, such as its terminal.
func (p *Policy) Identity() (uid, gid int) {
	switch {
	case !isRoot():
		return os.Getuid(), os.Getgid()
	case p.KeepRoot:
		return 0, 0
	}
	return ids(p.UID, p.GID)
}

// isRoot reports whether sandboxd runs as root: its real uid is root's,
// whatever ActAs made its effective one.
func isRoot() bool { return os.Getuid() == 0 }

// ActAs makes a root process act as uid:gid (zero meaning NobodyID), the
// identity it gives its commands, while it stays root underneath. Its
// effective (and so file-system) ids become uid:gid and its supplementary
// groups go: sandboxd's own file tools then meet the permissions its
// commands meet, not root's. Its real and saved ids stay root's: its
// commands, which are uid:gid through and through, can then neither
// signal it, trace it, read its /proc files nor count against its process
// limit (the kernel wants them to match every one of its ids). A
// trampoline starts as root again (the real id allows that; see
// regainRoot) and drops every id for good.
//
// Call it once, before any command starts, after what needs root (a
// privileged port, a key file only root may read). It does nothing when
// the process is not root.
func ActAs(uid, gid int) error {
	if os.Geteuid() != 0 {
		return nil
	}
	uid, gid = ids(uid, gid)
	// With cgo (the trampoline), these change every thread, through the C
	// library.
	if err := syscall.Setgroups(nil); err != nil {
		return fmt.Errorf("confine: act as %d:%d: setgroups: %w", uid, gid, err)
	}
	if err := syscall.Setresgid(0, gid, 0); err != nil {
		return fmt.Errorf("confine: act as %d:%d: setresgid: %w", uid, gid, err)
	}
	if err := syscall.Setresuid(0, uid, 0); err != nil {
		return fmt.Errorf("confine: act as %d:%d: setresuid: %w", uid, gid, err)
	}
	// Changing ids resets the dumpable flag to the system's default.
	return SetNonDumpable()
}

func ids(uid, gid int) (int, int) {
	if uid == 0 {
		uid = NobodyID
	}
	if gid == 0 {
		gid = NobodyID
	}
	return uid, gid
}

func absPaths(paths []string) ([]string, error) {
	out := make([]string, 0, len(paths))
	for _, p := range paths {
		if p == "" {
			continue
		}
		abs, err := filepath.Abs(p)
		if err != nil {
			return nil, fmt.Errorf("confine: root %q: %w", p, err)
		}
		out = append(out, abs)
	}
	return out, nil
}

// precheck finds name in env's PATH the way the trampoline will, so that a
// missing program fails Start with the error exec.Command gives. A name with
// a slash is left to the trampoline (it may be relative to cmd.Dir).
func precheck(name string, env []string) error {
	if strings.Contains(name, "/") {
		return nil
	}
	path := ""
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "PATH="); ok {
			path = v
		}
	}
	for _, dir := range filepath.SplitList(path) {
		if dir == "" || !filepath.IsAbs(dir) {
			continue
		}
		if fi, err := os.Stat(filepath.Join(dir, name)); err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0 {
			return nil
		}
	}
	return &exec.Error{Name: name, Err: exec.ErrNotFound}
}

// mergeEnv returns base with the variables of extra added, each replacing
// base's variable of the same name, so that a name appears once.
func mergeEnv(base, extra []string) []string {
	out := slices.Clone(base)
	for _, kv := range extra {
		name, _, _ := strings.Cut(kv, "=")
		i := slices.IndexFunc(out, func(o string) bool { return strings.HasPrefix(o, name+"=") })
		if i >= 0 {
			out[i] = kv
		} else {
			out = append(out, kv)
		}
	}
	return out
}

// BaseEnv is the environment every confined process starts from. Nothing in
// it comes from sandboxd's own environment, so AWS_*, ECS_* and the token
// cannot leak.
func BaseEnv() []string {
	return []string{
		"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
		"HOME=/tmp",
		"LANG=C.UTF-8",
		"LC_ALL=C.UTF-8",
		"TMPDIR=/tmp",
		"SHELL=/bin/sh",
	}
}

// Scrub returns env without the variables that must never reach a confined
// process: AWS_*, ECS_*, SANDBOXD_*, and anything whose name contains TOKEN,
// SECRET or PASSWORD or ends in _KEY (case-insensitive). The trampoline
// applies it again to the final environment (comparing ASCII letters
// without case), so a variable a caller appends to cmd.Env is scrubbed too.
func Scrub(env []string) []string {
	out := env[:0:0]
	for _, kv := range env {
		name, _, _ := strings.Cut(kv, "=")
		up := strings.ToUpper(name)
		if strings.HasPrefix(up, "AWS_") || strings.HasPrefix(up, "ECS_") || strings.HasPrefix(up, "SANDBOXD_") ||
			strings.Contains(up, "TOKEN") || strings.Contains(up, "SECRET") || strings.Contains(up, "PASSWORD") ||
			strings.HasSuffix(up, "_KEY") {
			continue
		}
		out = append(out, kv)
	}
	return out
}

// SetNonDumpable marks the calling process non-dumpable (PR_SET_DUMPABLE 0).
// sandboxd calls it first thing at start. Afterwards processes of its own
// uid, confined or not, can neither ptrace it nor open its /proc/<pid>/mem,
// environ, maps or fd (the kernel makes them root's), and it writes no core
// dump. It does not hide /proc/<pid>/cmdline or stat, and root (or
// CAP_SYS_PTRACE) still reads everything. Children start dumpable again at
// exec.
func SetNonDumpable() error {
	if err := unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0); err != nil {
		return fmt.Errorf("confine: prctl(PR_SET_DUMPABLE, 0): %w", err)
	}
	return nil
}

// PrepareRoots makes the writable roots usable by confined processes when
// sandboxd runs as root: it changes the owner of each directory itself (not
// its contents) to uid:gid (zero means NobodyID). When sandboxd is not root
// it does nothing and returns nil.
//
// Trade-off: only the directories themselves change owner. Files that were
// there before, or that a root sandboxd not acting as uid (ActAs) writes
// later, stay their owner's: a confined process can create and delete files
// in the root but cannot modify those. The parents of each root must be
// searchable by uid (a root under a 0700 directory stays out of reach).
func PrepareRoots(writable []string, uid, gid int) error {
	if os.Geteuid() != 0 {
		return nil
	}
	uid, gid = ids(uid, gid)
	for _, dir := range writable {
		if dir == "" {
			continue
		}
		if err := os.Chown(dir, uid, gid); err != nil {
			return fmt.Errorf("confine: prepare root %s: %w", dir, err)
		}
	}
	return nil
}

var warnOnce sync.Once

// warnWithoutLandlock logs the one line that says files are not confined.
func warnWithoutLandlock() {
	if LandlockABI() > 0 {
		return
	}
	var u unix.Utsname
	_ = unix.Uname(&u)
	slog.Warn("confine: Landlock is not available on this kernel; confined processes can write wherever file permissions let their uid (seccomp, rlimits and the uid still apply)",
		"kernel", unix.ByteSliceToString(u.Release[:]))
}

// Status describes the confinement this machine gives processes under p,
// for sandboxd's startup log, e.g. "landlock ABI 7; seccomp x86_64;
// children run as 65534:65534".
func (p *Policy) Status() string {
	var b strings.Builder
	if abi := LandlockABI(); abi > 0 {
		b.WriteString("landlock ABI " + strconv.Itoa(abi))
	} else {
		b.WriteString("landlock unavailable")
	}
	if a, err := nativeArch(); err == nil {
		b.WriteString("; seccomp " + a.Name)
	} else {
		b.WriteString("; seccomp unavailable: " + err.Error())
	}
	if uid, gid := p.Identity(); isRoot() && p.KeepRoot {
		b.WriteString("; children keep uid 0 without capabilities")
	} else if isRoot() {
		fmt.Fprintf(&b, "; children run as %d:%d", uid, gid)
	} else {
		fmt.Fprintf(&b, "; children keep sandboxd's uid %d", uid)
	}
	return b.String()
}
