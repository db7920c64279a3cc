package confine

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// wirePolicy is what Command hands the trampoline, as JSON in policyEnv.
type wirePolicy struct {
	ReadOnly []string `json:"ro,omitempty"`
	Writable []string `json:"rw,omitempty"`
	Limits   Limits   `json:"limits"`
	// Landlock says sandboxd's kernel has Landlock: the trampoline must
	// enforce it, not fall back to nothing.
	Landlock bool `json:"landlock"`
	// NoLandlock skips Landlock; only this package's tests set it (through
	// Policy.noLandlock), to tell its protection from another's.
	NoLandlock bool `json:"nolandlock,omitempty"`
	// NoSeccomp skips the seccomp filter; only this package's benchmarks
	// set it (through Policy.noSeccomp), to measure its cost.
	NoSeccomp bool  `json:"noseccomp,omitempty"`
	Guard     guard `json:"guard"`
	// Seccomp is the filter to load, compiled by sandboxd for Guard (see
	// compiledFilter).
	Seccomp []byte `json:"bpf,omitempty"`
	// UID and GID, when not zero, are the identity the root trampoline
	// drops to.
	UID int `json:"uid,omitempty"`
	GID int `json:"gid,omitempty"`
}

// guard identifies sandboxd, which confined processes may not signal.
type guard struct {
	PID  int   `json:"pid"`
	PGID int   `json:"pgid"`
	TIDs []int `json:"tids,omitempty"`
}

func currentGuard() guard {
	g := guard{PID: os.Getpid(), PGID: syscall.Getpgrp()}
	if f, err := os.Open("/proc/self/task"); err == nil {
		names, _ := f.Readdirnames(maxGuardTIDs)
		f.Close()
		for _, n := range names {
			if tid, err := strconv.Atoi(n); err == nil && tid != g.PID {
				g.TIDs = append(g.TIDs, tid)
			}
		}
	}
	return g
}

const maxGuardTIDs = 64

func init() {
	if len(os.Args) == 0 || (os.Args[0] != trampolineArg0 && os.Args[0] != warmArg0) {
		return
	}
	// Everything below is per thread (no_new_privs, Landlock, seccomp) and
	// must happen on the thread that execs.
	runtime.LockOSThread()
	var code int
	var err error
	if os.Args[0] == warmArg0 {
		code, err = warmTrampoline()
	} else {
		code, err = trampoline(os.Args[1:])
	}
	fmt.Fprintf(os.Stderr, "agentsfleet-confine: %v\n", err)
	os.Exit(code)
}

// trampoline confines the process and execs argv. It returns only on
// failure, with the exit status to use.
func trampoline(argv []string) (int, error) {
	if len(argv) == 0 || argv[0] == "" {
		return ExitConfineFailure, errors.New("no program to run")
	}
	raw, ok := os.LookupEnv(policyEnv)
	if !ok {
		return ExitConfineFailure, fmt.Errorf("%s is not set (was cmd.Env replaced instead of appended to?); refusing to run %s unconfined", policyEnv, argv[0])
	}
	os.Unsetenv(policyEnv)
	var p wirePolicy
	if err := json.Unmarshal([]byte(raw), &p); err != nil {
		return ExitConfineFailure, fmt.Errorf("decode policy: %v; refusing to run %s unconfined", err, argv[0])
	}
	if p.UID != 0 {
		if err := dropPrivileges(p.UID, p.GID, p.Guard.PID); err != nil {
			return ExitConfineFailure, fmt.Errorf("%v; refusing to run %s as root", err, argv[0])
		}
	}
	env := os.Environ()
	if len(env) > 0 && env[0] == trampolineProcs {
		env = env[1:] // Command's, for the trampoline only
	}
	env = Scrub(env)

	// Look the program up before confining, as the confined uid, with the
	// final PATH.
	path, code, err := lookPath(argv[0])
	if err != nil {
		return code, err
	}

	if err := confineSelf(&p); err != nil {
		return ExitConfineFailure, fmt.Errorf("%v; refusing to run %s unconfined", err, argv[0])
	}
	return execLimited(path, argv, env, p.Limits.withDefaults().AddressSpace)
}

// lookPath finds name in $PATH, or returns the exit status and message of
// a shell that could not.
func lookPath(name string) (string, int, error) {
	path, err := exec.LookPath(name)
	if err != nil && !errors.Is(err, exec.ErrDot) {
		code := 126
		if errors.Is(err, exec.ErrNotFound) || errors.Is(err, os.ErrNotExist) {
			code = 127
		}
		return "", code, fmt.Errorf("%s: %v", name, unwrapExecError(err))
	}
	return path, 0, nil
}

func unwrapExecError(err error) error {
	var ee *exec.Error
	if errors.As(err, &ee) {
		if errors.Is(ee.Err, exec.ErrNotFound) {
			return errors.New("not found")
		}
		return ee.Err
	}
	return err
}

// dropPrivileges turns the root trampoline into uid:gid with no
// supplementary groups. It happens here rather than through
// SysProcAttr.Credential so that the child can still chdir into cmd.Dir as
// root, and a directory the uid cannot use gets a clear error instead of
// "fork/exec /proc/self/exe: permission denied".
func dropPrivileges(uid, gid, parent int) error {
	if syscall.Geteuid() != 0 {
		// Started as another uid already (a caller set Credential): only
		// accept the one asked for.
		groups, _ := syscall.Getgroups()
		if syscall.Getuid() != uid || syscall.Geteuid() != uid || syscall.Getgid() != gid || syscall.Getegid() != gid || len(groups) != 0 {
			return fmt.Errorf("started as uid %d gid %d groups %v, not %d:%d", syscall.Geteuid(), syscall.Getegid(), groups, uid, gid)
		}
		return nil
	}
	// Raw calls change this thread only, where syscall.Setresuid would
	// stop every thread of the runtime to change them all (a quarter of a
	// millisecond). That is enough: the execve that follows runs on this
	// (locked) thread and leaves no other, and until then nothing but the
	// runtime runs on the others. no_new_privs, Landlock and seccomp are
	// per thread too.
	if _, _, e := syscall.RawSyscall(syscall.SYS_SETGROUPS, 0, 0, 0); e != 0 {
		return fmt.Errorf("setgroups: %w", e)
	}
	if _, _, e := syscall.RawSyscall(syscall.SYS_SETRESGID, uintptr(gid), uintptr(gid), uintptr(gid)); e != 0 {
		return fmt.Errorf("setresgid(%d): %w", gid, e)
	}
	if _, _, e := syscall.RawSyscall(syscall.SYS_SETRESUID, uintptr(uid), uintptr(uid), uintptr(uid)); e != 0 {
		return fmt.Errorf("setresuid(%d): %w", uid, e)
	}
	groups, _ := syscall.Getgroups()
	if syscall.Getuid() != uid || syscall.Geteuid() != uid || syscall.Getgid() != gid || syscall.Getegid() != gid || len(groups) != 0 {
		return fmt.Errorf("still uid %d gid %d groups %v after dropping to %d:%d", syscall.Geteuid(), syscall.Getegid(), groups, uid, gid)
	}
	// Changing credentials cleared the parent-death signal.
	if err := unix.Prctl(unix.PR_SET_PDEATHSIG, uintptr(syscall.SIGKILL), 0, 0, 0); err != nil {
		return fmt.Errorf("prctl(PR_SET_PDEATHSIG): %w", err)
	}
	if parent > 0 && os.Getppid() != parent {
		return errors.New("sandboxd exited")
	}
	if err := unix.Access(".", unix.X_OK); err != nil {
		wd, _ := os.Getwd()
		return fmt.Errorf("the working directory %s is not usable by uid %d: %w (see confine.PrepareRoots)", wd, uid, err)
	}
	return nil
}

// confineSelf applies p to the calling thread and process, in the order the
// package comment gives; RLIMIT_AS waits for execLimited.
func confineSelf(p *wirePolicy) error {
	if err := setLimits(p.Limits); err != nil {
		return err
	}
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("prctl(PR_SET_CHILD_SUBREAPER): %w", err)
	}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("prctl(PR_SET_NO_NEW_PRIVS): %w", err)
	}
	if err := restrictFiles(p); err != nil {
		return err
	}
	if p.NoSeccomp {
		return nil
	}
	return loadSeccomp(p.Seccomp)
}

// execLimited sets RLIMIT_AS and execs path. The address-space limit comes
// last because the trampoline's Go runtime has already mapped more than a
// small limit allows: from the limit on nothing may allocate, so execve is
// called directly, and a failure is reported with preallocated bytes.
func execLimited(path string, argv, env []string, as uint64) (int, error) {
	pathp, err := syscall.BytePtrFromString(path)
	if err != nil {
		return 127, fmt.Errorf("%s: %w", argv[0], err)
	}
	argvp, err := syscall.SlicePtrFromStrings(argv)
	if err != nil {
		return 126, fmt.Errorf("%s: %w", argv[0], err)
	}
	envp, err := syscall.SlicePtrFromStrings(env)
	if err != nil {
		return 126, fmt.Errorf("%s: %w", argv[0], err)
	}
	var cur syscall.Rlimit
	if err := syscall.Getrlimit(unix.RLIMIT_AS, &cur); err != nil {
		return ExitConfineFailure, fmt.Errorf("getrlimit(RLIMIT_AS): %w; refusing to run %s unconfined", err, argv[0])
	}
	lim := syscall.Rlimit{Cur: min(as, cur.Max), Max: min(as, cur.Max)}
	msg := make([]byte, 0, 256+len(argv[0]))
	msg = append(msg, "agentsfleet-confine: exec "+argv[0]+": "...)

	if _, _, e := syscall.RawSyscall6(unix.SYS_PRLIMIT64, 0, unix.RLIMIT_AS, uintptr(unsafe.Pointer(&lim)), 0, 0, 0); e != 0 {
		return ExitConfineFailure, fmt.Errorf("setrlimit(RLIMIT_AS, %d): %w; refusing to run %s unconfined", as, e, argv[0])
	}
	_, _, e := syscall.RawSyscall(unix.SYS_EXECVE, uintptr(unsafe.Pointer(pathp)), uintptr(unsafe.Pointer(&argvp[0])), uintptr(unsafe.Pointer(&envp[0])))
	code := 126
	if e == syscall.ENOENT {
		code = 127
	}
	text := e.Error() // a constant from the errno table
	if len(text) > 200 {
		text = text[:200]
	}
	msg = append(msg, text...)
	msg = append(msg, '\n')
	syscall.RawSyscall(syscall.SYS_WRITE, 2, uintptr(unsafe.Pointer(&msg[0])), uintptr(len(msg)))
	syscall.RawSyscall(syscall.SYS_EXIT_GROUP, uintptr(code), 0, 0)
	panic("unreachable")
}

// setLimits sets every rlimit but RLIMIT_AS (see execLimited).
func setLimits(l Limits) error {
	l = l.withDefaults()
	for _, r := range []struct {
		name     string
		resource int
		soft     uint64
		hard     uint64
	}{
		{"RLIMIT_CORE", unix.RLIMIT_CORE, 0, 0},
		{"RLIMIT_NPROC", unix.RLIMIT_NPROC, l.Processes, l.Processes},
		{"RLIMIT_NOFILE", unix.RLIMIT_NOFILE, l.OpenFiles, l.OpenFiles},
		{"RLIMIT_FSIZE", unix.RLIMIT_FSIZE, l.FileSize, l.FileSize},
		{"RLIMIT_CPU", unix.RLIMIT_CPU, l.CPUSeconds, l.CPUSeconds + 1},
	} {
		// An unprivileged process cannot raise a hard limit: where the
		// current one is lower, it stays (the tighter limit wins).
		var cur syscall.Rlimit
		if err := syscall.Getrlimit(r.resource, &cur); err != nil {
			return fmt.Errorf("getrlimit(%s): %w", r.name, err)
		}
		lim := syscall.Rlimit{Max: min(r.hard, cur.Max)}
		lim.Cur = min(r.soft, lim.Max)
		// syscall.Setrlimit, not unix: for RLIMIT_NOFILE it also stops
		// syscall.Exec from restoring the soft limit Go found at start.
		if err := syscall.Setrlimit(r.resource, &lim); err != nil {
			return fmt.Errorf("setrlimit(%s, %d): %w", r.name, r.soft, err)
		}
	}
	return nil
}
