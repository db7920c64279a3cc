//go:build linux

package confine

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The test binary doubles as the helper that confined commands run: a copy
// of it in a 0755 directory (the go build cache is 0700, out of reach of
// uid 65534), started as "<helper> confine-helper MODE ARGS…".
const helperArg = "confine-helper"

var (
	helperDir  string // 0755, holds helperPath
	helperPath string
)

func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == helperArg {
		os.Exit(helperMain(os.Args[2:]))
	}
	code, err := testMain(m)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Exit(code)
}

func testMain(m *testing.M) (int, error) {
	dir, err := os.MkdirTemp("", "confine-test-")
	if err != nil {
		return 0, err
	}
	defer os.RemoveAll(dir)
	if err := os.Chmod(dir, 0o755); err != nil {
		return 0, err
	}
	self, err := os.Executable()
	if err != nil {
		return 0, err
	}
	helperDir, helperPath = dir, filepath.Join(dir, "helper")
	if err := copyFile(self, helperPath, 0o755); err != nil {
		return 0, err
	}
	// As sandboxd does: a warm trampoline whose filter predates a thread
	// is not used (Start), and parallel tests start threads.
	ReserveThreads(32)
	return m.Run(), nil
}

func copyFile(src, dst string, mode os.FileMode) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, mode)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

func helperMain(args []string) int {
	if len(args) == 0 {
		fmt.Fprintln(os.Stderr, "helper: no mode")
		return 2
	}
	switch mode, rest := args[0], args[1:]; mode {
	case "ids":
		return helperIDs()
	case "syscalls":
		return helperSyscalls(rest)
	case "vmsize":
		// The address space this binary maps by itself, in bytes.
		status, _ := os.ReadFile("/proc/self/status")
		for _, line := range strings.Split(string(status), "\n") {
			if f := strings.Fields(line); len(f) == 3 && f[0] == "VmPeak:" {
				kb, _ := strconv.ParseUint(f[1], 10, 64)
				fmt.Println(kb << 10)
				return 0
			}
		}
		return 1
	case "alloc":
		mib, _ := strconv.Atoi(rest[0])
		b := make([]byte, mib<<20)
		for i := 0; i < len(b); i += 4096 {
			b[i] = 1
		}
		fmt.Println("allocated", len(b)>>20, "MiB")
		return 0
	case "ptrace":
		pid, _ := strconv.Atoi(rest[0])
		err := unix.PtraceAttach(pid)
		if err == nil {
			unix.PtraceDetach(pid)
			fmt.Println("attached")
			return 0
		}
		fmt.Println(errnoName(err))
		return 1
	case "read":
		b, err := os.ReadFile(rest[0])
		if err != nil {
			fmt.Println(errnoName(err))
			return 1
		}
		fmt.Printf("read %d bytes: %q\n", len(b), b)
		return 0
	case "act-as":
		return helperActAs(rest)
	case "shed":
		return helperShed(rest)
	case "many-threads":
		// A sandboxd with more threads than a filter names: what it logs.
		var log strings.Builder
		slog.SetDefault(slog.New(slog.NewTextHandler(&log, nil)))
		ReserveThreads(maxGuardTIDs + 8)
		g := currentGuard()
		fmt.Printf("named %d\n%s", len(g.TIDs), log.String())
		return 0
	case "sandboxd":
		return helperSandboxd(rest)
	case "sandboxd-signals":
		return helperSandboxdSignals(rest)
	case "signals":
		return helperSignals(rest)
	case "setsid-sleep":
		// Leave the session and process group, say where we are, linger.
		if _, err := unix.Setsid(); err != nil {
			fmt.Println("setsid:", err)
			return 1
		}
		if err := os.WriteFile(rest[0], []byte(strconv.Itoa(os.Getpid())), 0o644); err != nil {
			fmt.Println(err)
			return 1
		}
		time.Sleep(time.Hour)
		return 0
	}
	fmt.Fprintln(os.Stderr, "helper: unknown mode", args[0])
	return 2
}

func errnoName(err error) string {
	var errno syscall.Errno
	if errors.As(err, &errno) {
		return unix.ErrnoName(errno)
	}
	return err.Error()
}

// helperIDs prints what a confined process is: ids, session, and the
// kernel's view of its confinement.
func helperIDs() int {
	groups, _ := unix.Getgroups()
	sid, _ := unix.Getsid(0)
	fmt.Printf("uid=%d gid=%d groups=%v pid=%d pgid=%d sid=%d\n",
		unix.Getuid(), unix.Getgid(), groups, unix.Getpid(), unix.Getpgrp(), sid)
	status, _ := os.ReadFile("/proc/self/status")
	for _, line := range strings.Split(string(status), "\n") {
		if strings.HasPrefix(line, "NoNewPrivs:") || strings.HasPrefix(line, "Seccomp:") || strings.HasPrefix(line, "SigBlk:") {
			fmt.Println(strings.Join(strings.Fields(line), " "))
		}
	}
	return 0
}

// probe is one system call to try and the arguments to try it with. safe
// marks the ones harmless to make unconfined, as root: the control run.
type probe struct {
	name string
	args func() [6]uintptr
	safe bool
}

func probes() []probe {
	self := uintptr(os.Getpid())
	path := func(s string) uintptr { p, _ := unix.BytePtrFromString(s); return uintptr(unsafe.Pointer(p)) }
	zero := func() [6]uintptr { return [6]uintptr{} }
	return []probe{
		{"ptrace", func() [6]uintptr { return [6]uintptr{unix.PTRACE_PEEKDATA, self} }, true},
		{"process_vm_readv", func() [6]uintptr { return [6]uintptr{self} }, true},
		{"process_vm_writev", func() [6]uintptr { return [6]uintptr{self} }, true},
		{"kcmp", func() [6]uintptr { return [6]uintptr{self, self, 1 /* KCMP_FILES */} }, true},
		{"pidfd_getfd", func() [6]uintptr { return [6]uintptr{^uintptr(0)} }, true},
		{"unshare", zero, true},
		{"setns", func() [6]uintptr { return [6]uintptr{^uintptr(0)} }, true},
		{"perf_event_open", zero, true},
		{"keyctl", func() [6]uintptr { return [6]uintptr{9999} }, true},
		{"add_key", zero, true},
		{"request_key", zero, true},
		{"io_uring_setup", zero, true},
		{"userfaultfd", func() [6]uintptr { return [6]uintptr{1 << 20} }, true},
		{"settimeofday", zero, true},
		{"chroot", func() [6]uintptr { return [6]uintptr{path("/nonexistent-confine-test")} }, true},
		{"umount2", func() [6]uintptr { return [6]uintptr{path("/nonexistent-confine-test")} }, true},
		{"mount", zero, false},
		{"pivot_root", zero, false},
		{"fsopen", zero, false},
		{"open_tree", zero, false},
		{"bpf", func() [6]uintptr { return [6]uintptr{^uintptr(0)} }, false},
		{"kexec_load", func() [6]uintptr { return [6]uintptr{0, 0, 0, 0xdead0000} }, false},
		{"kexec_file_load", func() [6]uintptr { return [6]uintptr{^uintptr(0), ^uintptr(0), 0, 0, 0xdead0000} }, false},
		{"init_module", zero, false},
		{"finit_module", func() [6]uintptr { return [6]uintptr{^uintptr(0)} }, false},
		{"delete_module", zero, false},
		{"reboot", zero, false},
		{"swapon", zero, false},
		{"swapoff", zero, false},
		{"acct", func() [6]uintptr { return [6]uintptr{path("/nonexistent-confine-test")} }, false},
		{"quotactl", zero, false},
		{"open_by_handle_at", func() [6]uintptr { return [6]uintptr{^uintptr(0)} }, false},
		{"clock_settime", zero, false},
		{"iopl", func() [6]uintptr { return [6]uintptr{0} }, false},
		{"ioperm", zero, false},
		{"syslog", func() [6]uintptr { return [6]uintptr{10 /* SYSLOG_ACTION_SIZE_BUFFER */} }, false},
		{"prctl", func() [6]uintptr { return [6]uintptr{unix.PR_SET_CHILD_SUBREAPER, 0} }, true},
		{"socket", func() [6]uintptr { return [6]uintptr{afVSOCK, unix.SOCK_STREAM} }, true},
		{"personality", func() [6]uintptr { return [6]uintptr{0x0040000 /* ADDR_NO_RANDOMIZE */} }, false},
		{"clone3", zero, true},
		{"pidfd_send_signal", func() [6]uintptr { return [6]uintptr{^uintptr(0)} }, true},
	}
}

// helperSyscalls makes each probe (all, or only the safe ones with
// "control") and prints "name errno" lines, "name OK" on success.
func helperSyscalls(args []string) int {
	control := len(args) > 0 && args[0] == "control"
	a, err := nativeArch()
	if err != nil {
		fmt.Println(err)
		return 1
	}
	for _, p := range probes() {
		if control && !p.safe {
			continue
		}
		nr, ok := a.SyscallNames[p.name]
		if !ok {
			continue
		}
		v := p.args()
		_, _, errno := unix.Syscall6(uintptr(nr), v[0], v[1], v[2], v[3], v[4], v[5])
		if errno == 0 {
			fmt.Println(p.name, "OK")
		} else {
			fmt.Println(p.name, unix.ErrnoName(errno))
		}
	}
	return 0
}

// helperSandboxd plays sandboxd: a process holding a token in its
// environment, "nondumpable" or "dumpable", that runs confined helpers
// against itself, with Landlock "on" or "off", and prints what they got as
// JSON.
func helperSandboxd(args []string) int {
	if len(args) < 2 {
		return 2
	}
	if args[0] == "nondumpable" {
		if err := SetNonDumpable(); err != nil {
			fmt.Println(err)
			return 1
		}
	}
	self := strconv.Itoa(os.Getpid())
	p := &Policy{ReadOnly: []string{filepath.Dir(os.Args[0])}, noLandlock: args[1] == "off"}
	out := map[string]string{}
	for key, argv := range map[string][]string{
		"environ": {"read", "/proc/" + self + "/environ"},
		"mem":     {"read", "/proc/" + self + "/mem"},
		"ptrace":  {"ptrace", self},
	} {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		cmd, err := p.CommandContext(ctx, os.Args[0], append([]string{helperArg}, argv...)...)
		if err != nil {
			cancel()
			fmt.Println(err)
			return 1
		}
		b, _ := cmd.CombinedOutput()
		cancel()
		out[key] = strings.TrimSpace(string(b))
	}
	b, _ := json.Marshal(out)
	fmt.Println(string(b))
	return 0
}

// helperSandboxdSignals stands in for sandboxd: it starts one thread of its
// own (as the Go runtime does when it needs one), then runs a confined
// "signals" probe at each of its threads, with seccomp on or (control)
// off, and prints the probe's JSON.
func helperSandboxdSignals(args []string) int {
	if len(args) != 1 {
		return 2
	}
	if err := SetNonDumpable(); err != nil {
		fmt.Println(err)
		return 1
	}
	stop := make(chan struct{})
	defer close(stop)
	started := make(chan struct{})
	go func() {
		runtime.LockOSThread()
		close(started)
		<-stop
	}()
	<-started
	// As sandboxd does: threads started together, whose consecutive ids
	// the filter tests as ranges.
	ReserveThreads(4 * minRange)
	p := &Policy{ReadOnly: []string{filepath.Dir(os.Args[0])}, noSeccomp: args[0] == "off"}
	g := currentGuard()
	ranges := 0
	for _, conj := range idTests(g.TIDs) {
		if len(conj) == 2 {
			ranges++
		}
	}
	fmt.Fprintf(os.Stderr, "%d threads, %d ranges of consecutive ids\n", len(g.TIDs), ranges)
	targets := []string{strconv.Itoa(g.PID)}
	for _, tid := range g.TIDs {
		targets = append(targets, strconv.Itoa(tid))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cmd, err := p.CommandContext(ctx, os.Args[0], append([]string{helperArg, "signals"}, targets...)...)
	if err != nil {
		fmt.Println(err)
		return 1
	}
	b, err := cmd.Output()
	if err != nil {
		fmt.Println("probe:", err)
		return 1
	}
	os.Stdout.Write(b)
	return 0
}

// helperSignals tries, at sandboxd's pid (args[0]) and each of its thread
// ids (the rest), every call that
// reaches another process of the same uid without ptrace, harmlessly:
// signal 0, reading its limits, naming it a pipe's owner (no signal is
// sent without O_ASYNC). It prints, for each call, the results in order:
// "ok" or the errno's name.
func helperSignals(args []string) int {
	r, w, err := os.Pipe()
	if err != nil {
		fmt.Println(err)
		return 1
	}
	defer r.Close()
	defer w.Close()
	res := func(err error) string {
		if err == nil {
			return "ok"
		}
		return errnoName(err)
	}
	out := map[string][]string{}
	pid, _ := strconv.Atoi(args[0])
	for _, a := range args {
		id, _ := strconv.Atoi(a)
		out["kill"] = append(out["kill"], res(unix.Kill(id, 0)))
		_, _, e := unix.Syscall(unix.SYS_TKILL, uintptr(id), 0, 0)
		out["tkill"] = append(out["tkill"], res(errOrNil(e)))
		out["tgkill"] = append(out["tgkill"], res(unix.Tgkill(pid, id, 0)))
		var old unix.Rlimit
		out["prlimit64"] = append(out["prlimit64"], res(unix.Prlimit(id, unix.RLIMIT_NOFILE, nil, &old)))
		// siginfo_t with si_code SI_QUEUE, as sigqueue(3) sends it.
		var info [128]byte
		binary.NativeEndian.PutUint32(info[8:], uint32(0xffffffff))
		_, _, e = unix.Syscall(unix.SYS_RT_SIGQUEUEINFO, uintptr(id), 0, uintptr(unsafe.Pointer(&info[0])))
		out["rt_sigqueueinfo"] = append(out["rt_sigqueueinfo"], res(errOrNil(e)))
		_, err := unix.FcntlInt(r.Fd(), unix.F_SETOWN, id)
		out["fcntl F_SETOWN"] = append(out["fcntl F_SETOWN"], res(err))
		// Its own priority and CPUs again: allowed, they change nothing.
		prio, err := unix.Getpriority(unix.PRIO_PROCESS, id)
		if err == nil {
			err = unix.Setpriority(unix.PRIO_PROCESS, id, 20-prio) // the raw call returns 20 - nice
		}
		out["setpriority"] = append(out["setpriority"], res(err))
		var cpus unix.CPUSet
		if err = unix.SchedGetaffinity(id, &cpus); err == nil {
			err = unix.SchedSetaffinity(id, &cpus)
		}
		out["sched_setaffinity"] = append(out["sched_setaffinity"], res(err))
	}
	b, _ := json.Marshal(out)
	fmt.Println(string(b))
	return 0
}

func errOrNil(e syscall.Errno) error {
	if e == 0 {
		return nil
	}
	return e
}

// helperActAs is a root sandboxd that calls ActAs(NobodyID, NobodyID) and
// reports, as JSON: the ids of each of its threads, what reading rest[0]
// (a file only root may read) gives, what a confined command started cold
// and one started warm say of their own ids and capabilities, and what
// such a command meets when it signals this process or reads its
// environment, with neither seccomp nor Landlock to stop it: only ids.
func helperActAs(rest []string) int {
	out := map[string]string{}
	if err := ActAs(0, 0); err != nil {
		fmt.Println(err)
		return 1
	}
	tasks, _ := os.ReadDir("/proc/self/task")
	threads := map[string]bool{}
	for _, task := range tasks {
		status, _ := os.ReadFile("/proc/self/task/" + task.Name() + "/status")
		threads[statusLines(string(status), "Uid:", "Gid:", "Groups:")] = true
	}
	for ids := range threads {
		out["threads"] += ids + ";"
	}
	if _, err := os.ReadFile(rest[0]); err != nil {
		out["root-file"] = errnoName(err)
	} else {
		out["root-file"] = "read"
	}
	p := &Policy{}
	show := `echo TMPDIR=$TMPDIR; grep -E '^(Uid|Gid|Groups|CapPrm|CapEff):' /proc/self/status | tr -s '\t' ' '`
	for _, start := range []string{"cold", "warm"} {
		cmd, err := p.Command("/bin/sh", "-c", show)
		if err != nil {
			fmt.Println(err)
			return 1
		}
		var b strings.Builder
		cmd.Stdout, cmd.Stderr, cmd.Dir = &b, &b, "/"
		if start == "warm" {
			err = Start(cmd)
		} else {
			err = cmd.Start()
		}
		if err == nil {
			err = cmd.Wait()
		}
		out[start] = strings.TrimSpace(b.String())
		if err != nil {
			out[start] += " " + err.Error()
		}
	}
	bare := &Policy{noSeccomp: true, noLandlock: true}
	pid := strconv.Itoa(os.Getpid())
	cmd, err := bare.Command("/bin/sh", "-c", "kill -0 "+pid+" 2>&1 | sed 's/.*: //'; cat /proc/"+pid+"/environ 2>&1 | sed 's/.*: //'")
	if err != nil {
		fmt.Println(err)
		return 1
	}
	cmd.Dir = "/"
	b, _ := cmd.CombinedOutput()
	out["reach"] = strings.TrimSpace(string(b))
	j, _ := json.Marshal(out)
	fmt.Println(string(j))
	return 0
}

// statusLines returns the lines of a /proc status file that start with
// one of names, joined, with their whitespace squeezed.
func statusLines(status string, names ...string) string {
	var keep []string
	for _, line := range strings.Split(status, "\n") {
		for _, name := range names {
			if strings.HasPrefix(line, name) {
				keep = append(keep, strings.Join(strings.Fields(line), " "))
			}
		}
	}
	return strings.Join(keep, " ")
}
