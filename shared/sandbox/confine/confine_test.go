//go:build linux

package confine

import (
	"bufio"
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

func requireRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root: only root drops confined processes to another uid")
	}
}

func requireLandlock(t *testing.T) {
	t.Helper()
	if LandlockABI() == 0 {
		t.Skip("needs Landlock: this kernel has none (or it is disabled)")
	}
}

// roots makes a 0755 base (t.TempDir is 0700, out of reach of uid 65534)
// holding a writable work directory, prepared for the confined uid.
func roots(t *testing.T) (base, work string) {
	t.Helper()
	base = t.TempDir()
	if err := os.Chmod(base, 0o755); err != nil {
		t.Fatal(err)
	}
	work = filepath.Join(base, "work")
	if err := os.Mkdir(work, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := PrepareRoots([]string{work}, 0, 0); err != nil {
		t.Fatal(err)
	}
	return base, work
}

type result struct {
	stdout, stderr string
	code           int // -1 when killed by a signal
	signal         syscall.Signal
}

// run runs name confined under p in dir and waits, at most 30 seconds.
func run(t *testing.T, p *Policy, dir, name string, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd, err := p.CommandContext(ctx, name, args...)
	if err != nil {
		t.Fatal(err)
	}
	return wait(t, ctx, cmd, dir)
}

func wait(t *testing.T, ctx context.Context, cmd *exec.Cmd, dir string) result {
	t.Helper()
	var stdout, stderr bytes.Buffer
	cmd.Dir, cmd.Stdout, cmd.Stderr = dir, &stdout, &stderr
	cmd.WaitDelay = 2 * time.Second
	err := cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("%v timed out: stdout %q, stderr %q", cmd.Args, stdout.String(), stderr.String())
	}
	res := result{stdout: stdout.String(), stderr: stderr.String()}
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee):
		res.code = ee.ExitCode()
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			res.signal = ws.Signal()
		}
	default:
		t.Fatalf("%v: %v", cmd.Args, err)
	}
	return res
}

// helperPolicy may run the helper binary.
func helperPolicy() *Policy { return &Policy{ReadOnly: []string{helperDir}} }

func TestConfinedProcessState(t *testing.T) {
	t.Parallel()
	res := run(t, helperPolicy(), "/", helperPath, helperArg, "ids")
	if res.code != 0 {
		t.Fatalf("helper ids: exit %d, stderr %q", res.code, res.stderr)
	}
	for _, want := range []string{"NoNewPrivs: 1", "Seccomp: 2", "SigBlk: 0000000000000000"} {
		if !strings.Contains(res.stdout, want) {
			t.Errorf("confined /proc/self/status: got %q, want a line %q", res.stdout, want)
		}
	}
	var uid, gid, pid, pgid, sid int
	var groups string
	if _, err := fmt.Sscanf(res.stdout, "uid=%d gid=%d groups=%s pid=%d pgid=%d sid=%d", &uid, &gid, &groups, &pid, &pgid, &sid); err != nil {
		t.Fatalf("parse %q: %v", res.stdout, err)
	}
	if pgid != pid || sid != pid {
		t.Errorf("pid %d pgid %d sid %d: want its own session and process group", pid, pgid, sid)
	}
	if os.Geteuid() == 0 {
		if uid != NobodyID || gid != NobodyID || groups != "[]" {
			t.Errorf("as root: got uid=%d gid=%d groups=%s, want %d, %d, []", uid, gid, groups, NobodyID, NobodyID)
		}
	} else if uid != os.Getuid() {
		t.Errorf("got uid %d, want sandboxd's %d", uid, os.Getuid())
	}
}

func TestConfinedCustomIdentity(t *testing.T) {
	t.Parallel()
	requireRoot(t)
	p := helperPolicy()
	p.UID, p.GID = 12345, 23456
	res := run(t, p, "/", helperPath, helperArg, "ids")
	if !strings.HasPrefix(res.stdout, "uid=12345 gid=23456 groups=[] ") {
		t.Fatalf("got %q, want uid=12345 gid=23456 groups=[]", res.stdout)
	}
}

func TestEnvironmentIsScrubbed(t *testing.T) {
	// Not parallel: it sets sandboxd's (this process's) environment.
	for k, v := range map[string]string{
		"AWS_SECRET_ACCESS_KEY":          "aws-secret",
		"AWS_REGION":                     "eu-west-1",
		"ECS_CONTAINER_METADATA_URI_V4":  "http://169.254.170.2/v4/x",
		"SANDBOXD_TOKEN":                 "sandboxd-token",
		"AWS_CONTAINER_CREDENTIALS_FULL": "creds",
	} {
		t.Setenv(k, v)
	}
	p := &Policy{Env: []string{"FOO=bar", "GITHUB_TOKEN=gh", "aws_session_token=x"}}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cmd, err := p.CommandContext(ctx, "env")
	if err != nil {
		t.Fatal(err)
	}
	cmd.Env = append(cmd.Env, "EXTRA=1", "ECS_AGENT_URI=http://x", "MY_API_KEY=k")
	res := wait(t, ctx, cmd, "/")
	if res.code != 0 {
		t.Fatalf("env: exit %d, stderr %q", res.code, res.stderr)
	}
	for _, line := range strings.Split(strings.TrimSpace(res.stdout), "\n") {
		name, _, _ := strings.Cut(line, "=")
		up := strings.ToUpper(name)
		if strings.HasPrefix(up, "AWS_") || strings.HasPrefix(up, "ECS_") || strings.HasPrefix(up, "SANDBOXD_") ||
			strings.Contains(up, "TOKEN") || strings.HasSuffix(up, "_KEY") || name == policyEnv {
			t.Errorf("confined environment has %s", line)
		}
	}
	for _, want := range []string{"FOO=bar", "EXTRA=1", "HOME=/tmp", "PATH=/usr/local/sbin:"} {
		if !strings.Contains(res.stdout, want) {
			t.Errorf("confined environment %q lacks %s", res.stdout, want)
		}
	}
}

func TestReplacedEnvironmentFailsClosed(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name string
		env  func([]string) []string
		want string
	}{
		{"replaced", func([]string) []string { return []string{"PATH=/usr/bin:/bin"} }, "is not set"},
		{"corrupted", func(env []string) []string { return append(env, policyEnv+"={nope") }, "decode policy"},
		// Every edit of a valid policy that loses a protection must stop
		// the trampoline, not weaken it.
		{"no filter", editPolicy("bpf ", drop), "no seccomp filter"},
		{"odd filter", editPolicy("bpf ", func(l string) string { return l[:len(l)-3] + "\n" }), "bad bpf line"},
		{"no address-space limit", editPolicy("as ", drop), "no address-space limit"},
		{"unknown setting", editPolicy("seccomp", func(string) string { return "seccomp-off\n" }), "unknown line"},
		{"relative rule", editPolicy("rule ", func(l string) string {
			access, _, _ := strings.Cut(strings.TrimPrefix(l, "rule "), " ")
			return "rule " + access + " " + hex.EncodeToString([]byte("tmp")) + "\n"
		}), "bad rule path"},
		// One instruction that jumps past the end: the kernel refuses the
		// program.
		{"bad filter program", editPolicy("bpf ", func(string) string {
			return "bpf " + hex.EncodeToString([]byte{0x05, 0, 0, 0, 9, 0, 0, 0}) + "\n"
		}), "seccomp(SECCOMP_SET_MODE_FILTER)"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if tt.name == "relative rule" {
				requireLandlock(t)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			cmd, err := (&Policy{}).CommandContext(ctx, "sh", "-c", "echo ran unconfined")
			if err != nil {
				t.Fatal(err)
			}
			cmd.Env = tt.env(cmd.Env)
			res := wait(t, ctx, cmd, "/")
			if res.code != ExitConfineFailure || res.stdout != "" {
				t.Fatalf("got exit %d, stdout %q; want %d and nothing run", res.code, res.stdout, ExitConfineFailure)
			}
			if !strings.HasPrefix(res.stderr, "agentsfleet-confine: ") || !strings.Contains(res.stderr, tt.want) || !strings.Contains(res.stderr, "refusing to run sh unconfined") {
				t.Fatalf("stderr %q: want one agentsfleet-confine line saying %q", res.stderr, tt.want)
			}
		})
	}
}

// editPolicy returns an environment edit that replaces each line of the
// encoded policy that starts with prefix by f(line).
func editPolicy(prefix string, f func(line string) string) func([]string) []string {
	return func(env []string) []string {
		out := slices.Clone(env)
		for i, kv := range out {
			enc, ok := strings.CutPrefix(kv, policyEnv+"=")
			if !ok {
				continue
			}
			var b strings.Builder
			for line := range strings.Lines(enc) {
				if strings.HasPrefix(line, prefix) {
					line = f(line)
				}
				b.WriteString(line)
			}
			out[i] = policyEnv + "=" + b.String()
		}
		return out
	}
}

func drop(string) string { return "" }

func TestCommandNotFound(t *testing.T) {
	t.Parallel()
	cmd, err := (&Policy{}).Command("no-such-program-confine-test")
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); !errors.Is(err, exec.ErrNotFound) {
		t.Fatalf("Start() = %v, want exec.ErrNotFound", err)
	}
	res := run(t, &Policy{}, "/", "/no/such/program")
	if res.code != 127 || !strings.Contains(res.stderr, "/no/such/program") {
		t.Errorf("absolute missing program: exit %d, stderr %q; want 127 naming it", res.code, res.stderr)
	}
	res = run(t, &Policy{}, "/", "sh", "-c", "no-such-program-confine-test")
	if res.code != 127 || !strings.Contains(res.stderr, "not found") {
		t.Errorf("sh -c missing: exit %d, stderr %q; want sh's own 127", res.code, res.stderr)
	}
}

func TestExitStatusOutputAndDir(t *testing.T) {
	t.Parallel()
	_, work := roots(t)
	res := run(t, &Policy{Writable: []string{work}}, work, "sh", "-c", "pwd; echo oops >&2; exit 7")
	if res.code != 7 || strings.TrimSpace(res.stdout) != work || strings.TrimSpace(res.stderr) != "oops" {
		t.Fatalf("got exit %d, stdout %q, stderr %q; want 7, %q, oops", res.code, res.stdout, res.stderr, work)
	}
}

func TestRefusedSystemCalls(t *testing.T) {
	t.Parallel()
	parse := func(out string) map[string]string {
		m := map[string]string{}
		for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
			if name, errno, ok := strings.Cut(line, " "); ok {
				m[name] = errno
			}
		}
		return m
	}
	res := run(t, helperPolicy(), "/", helperPath, helperArg, "syscalls")
	if res.code != 0 {
		t.Fatalf("helper syscalls: exit %d, stderr %q", res.code, res.stderr)
	}
	confined := parse(res.stdout)
	a, err := nativeArch()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range probes() {
		got, ok := confined[p.name]
		if !ok {
			if _, exists := a.SyscallNames[p.name]; exists {
				t.Errorf("%s: no result", p.name)
			}
			continue
		}
		want := "EPERM"
		if p.name == "clone3" || p.name == "pidfd_send_signal" {
			want = "ENOSYS"
		}
		if got != want {
			t.Errorf("confined %s: got %s, want %s", p.name, got, want)
		}
	}

	// The same calls unconfined succeed or fail otherwise: the results above
	// come from the filter.
	out, err := exec.Command(helperPath, helperArg, "syscalls", "control").Output()
	if err != nil {
		t.Fatal(err)
	}
	control := parse(string(out))
	for name, want := range map[string]string{"unshare": "OK", "prctl": "OK", "setns": "EBADF", "process_vm_readv": "OK", "pidfd_send_signal": "EBADF"} {
		if control[name] != want {
			t.Errorf("unconfined %s: got %s, want %s", name, control[name], want)
		}
	}
}

// Nor can they signal it, or lower its limits, through any of its threads:
// with the same uid, as when sandboxd is not root, the seccomp filter is what refuses it.
func TestSandboxdCannotBeSignalled(t *testing.T) {
	t.Parallel()
	probe := func(seccomp string) map[string][]string {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		cmd := exec.CommandContext(ctx, helperPath, helperArg, "sandboxd-signals", seccomp)
		cmd.Env = []string{"PATH=/usr/bin:/bin"}
		if os.Geteuid() == 0 {
			cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: NobodyID, Gid: NobodyID, Groups: []uint32{}}}
		}
		var stderr strings.Builder
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("sandboxd stand-in (seccomp %s): %v, output %q %s", seccomp, err, out, stderr.String())
		}
		t.Logf("seccomp %s: %s", seccomp, strings.TrimSpace(stderr.String()))
		var got map[string][]string
		if err := json.Unmarshal(out, &got); err != nil {
			t.Fatalf("sandboxd stand-in output %q: %v", out, err)
		}
		return got
	}
	calls := []string{"kill", "tkill", "tgkill", "prlimit64", "rt_sigqueueinfo", "fcntl F_SETOWN", "setpriority", "sched_setaffinity"}
	// Control: without the filter each call reaches it, so the refusals
	// below are the filter's. (Its pid and at least one thread besides.)
	control := probe("off")
	for _, call := range calls {
		if got := control[call]; len(got) < 2 || slices.ContainsFunc(got, func(r string) bool { return r != "ok" }) {
			t.Fatalf("control, %s without the filter: %v, want ok for the pid and every thread", call, got)
		}
	}
	got := probe("on")
	for _, call := range calls {
		if len(got[call]) < 2 || slices.ContainsFunc(got[call], func(r string) bool { return r != "EPERM" }) {
			t.Errorf("%s at sandboxd's pid and threads: %v, want EPERM for each", call, got[call])
		}
	}
}

func TestSandboxdIsUnreadable(t *testing.T) {
	t.Parallel()
	// A stand-in for sandboxd, holding a token in its environment. As root
	// it runs as NobodyID, so that its confined children share its uid, as
	// when sandboxd is not root: then the kernel's ptrace checks are what
	// stand between them and it.
	start := func(dumpable, landlock string) map[string]string {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		cmd := exec.CommandContext(ctx, helperPath, helperArg, "sandboxd", dumpable, landlock)
		cmd.Env = []string{"PATH=/usr/bin:/bin", "SANDBOXD_TOKEN=tok-5e3cret"}
		if os.Geteuid() == 0 {
			cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: NobodyID, Gid: NobodyID, Groups: []uint32{}}}
		}
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("sandboxd stand-in (%s, landlock %s): %v, output %q", dumpable, landlock, err, out)
		}
		var got map[string]string
		if err := json.Unmarshal(out, &got); err != nil {
			t.Fatalf("sandboxd stand-in output %q: %v", out, err)
		}
		return got
	}
	tests := []struct {
		dumpable, landlock  string
		environ, mem, trace string
	}{
		// Non-dumpability alone protects it (a kernel without Landlock).
		{"nondumpable", "off", "EACCES", "EACCES", "EPERM"},
		// Control: without it the token is readable, so the EACCES above
		// is SetNonDumpable's doing; ptrace stays refused by seccomp.
		{"dumpable", "off", "tok-5e3cret", "EIO", "EPERM"},
		// Landlock alone protects it too: a domain may not ptrace-read a
		// process outside it.
		{"dumpable", "on", "EACCES", "EACCES", "EPERM"},
		{"nondumpable", "on", "EACCES", "EACCES", "EPERM"},
	}
	for _, tt := range tests {
		t.Run(tt.dumpable+"/landlock-"+tt.landlock, func(t *testing.T) {
			t.Parallel()
			if tt.landlock == "on" {
				requireLandlock(t)
			}
			got := start(tt.dumpable, tt.landlock)
			if !strings.Contains(got["environ"], tt.environ) || (tt.environ != "tok-5e3cret" && strings.Contains(got["environ"], "tok-5e3cret")) {
				t.Errorf("reading its /proc/<pid>/environ: got %q, want %s", got["environ"], tt.environ)
			}
			if got["mem"] != tt.mem {
				t.Errorf("reading its /proc/<pid>/mem: got %q, want %s", got["mem"], tt.mem)
			}
			if got["ptrace"] != tt.trace {
				t.Errorf("PTRACE_ATTACH to it: got %q, want %s", got["ptrace"], tt.trace)
			}
		})
	}
}

// TestActAs: a root sandboxd that acts as its commands' user opens files as
// that user, on every thread; its commands, cold or warm, have that user's
// ids only, no capabilities, and cannot take root back, and their
// environment is whole (a trampoline started as a set-uid program would
// lose TMPDIR); and they cannot signal sandboxd or read its environment
// even without seccomp and Landlock, because its real and saved ids stay
// root's.
func TestActAs(t *testing.T) {
	t.Parallel()
	requireRoot(t)
	secret := filepath.Join(helperDir, "root-only")
	if err := os.WriteFile(secret, []byte("root only"), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(helperPath, helperArg, "act-as", secret)
	cmd.Env = []string{"PATH=/usr/bin:/bin", "SANDBOXD_TOKEN=tok-4ct4s"}
	b, err := cmd.Output()
	if err != nil {
		t.Fatalf("helper act-as: %v, output %q", err, b)
	}
	var got map[string]string
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatalf("helper output %q: %v", b, err)
	}
	nobody := strconv.Itoa(NobodyID)
	wantThreads := fmt.Sprintf("Uid: 0 %s 0 %s Gid: 0 %s 0 %s Groups:;", nobody, nobody, nobody, nobody)
	if got["threads"] != wantThreads {
		t.Errorf("the ids of sandboxd's threads: got %q, want every thread %q", got["threads"], wantThreads)
	}
	if got["root-file"] != "EACCES" {
		t.Errorf("sandboxd reading a file only root may read: %s, want EACCES", got["root-file"])
	}
	want := fmt.Sprintf("TMPDIR=/tmp Uid: %s %s %s %s Gid: %s %s %s %s Groups: CapPrm: 0000000000000000 CapEff: 0000000000000000",
		nobody, nobody, nobody, nobody, nobody, nobody, nobody, nobody)
	for _, start := range []string{"cold", "warm"} {
		if g := strings.Join(strings.Fields(got[start]), " "); g != want {
			t.Errorf("a command started %s: %q, want %q", start, g, want)
		}
	}
	if g := strings.Join(strings.Fields(got["reach"]), " "); g != "Operation not permitted Permission denied" {
		t.Errorf("a command without seccomp or Landlock signalling sandboxd and reading its environ: %q, want both refused", got["reach"])
	}
}

// TestParentEnvironNeedsItsUID: tini, the image's PID 1 and sandboxd's
// parent, keeps the token in its environment and is dumpable. A command
// cannot read that environment when tini runs as another uid (root, as in
// the image, with commands under --user), even without Landlock, which
// Fargate's kernel may lack. The control shows why the image does not run
// tini and sandboxd as the commands' uid: then the kernel lets them read it.
func TestParentEnvironNeedsItsUID(t *testing.T) {
	t.Parallel()
	if os.Geteuid() != 0 {
		t.Skip("needs root: runs a stand-in for tini as root and as the commands' uid")
	}
	const token = "tok-7a1nit"
	for _, tt := range []struct {
		name     string
		uid      uint32
		readable bool
	}{
		{"root", 0, false},
		{"commands-uid", NobodyID, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tini := exec.Command("sleep", "60")
			tini.Env = []string{"SANDBOXD_TOKEN=" + token}
			tini.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: tt.uid, Gid: tt.uid, Groups: []uint32{}}}
			if err := tini.Start(); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = tini.Process.Kill(); _ = tini.Wait() })
			p := &Policy{noLandlock: true}
			cmd, err := p.Command("cat", fmt.Sprintf("/proc/%d/environ", tini.Process.Pid))
			if err != nil {
				t.Fatal(err)
			}
			out, _ := cmd.CombinedOutput()
			if got := strings.Contains(string(out), token); got != tt.readable {
				t.Fatalf("a command (uid %d) reading the environment of a stand-in for tini (uid %d): %q; want the token readable: %v",
					NobodyID, tt.uid, out, tt.readable)
			}
		})
	}
}

// landlockBase makes a 0755 directory outside /tmp (which is writable to
// every confined process, so nothing under it can show a refusal) whose
// parents the confined uid can search.
func landlockBase(t *testing.T) string {
	t.Helper()
	wd, _ := os.Getwd()
	for _, parent := range []string{"/var/tmp", wd} {
		if !searchable(parent) {
			continue
		}
		dir, err := os.MkdirTemp(parent, ".confine-test-")
		if err != nil {
			continue
		}
		t.Cleanup(func() { os.RemoveAll(dir) })
		if err := os.Chmod(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		return dir
	}
	t.Skip("no directory outside /tmp that the confined uid can reach (tried /var/tmp and the package directory)")
	return ""
}

// searchable reports whether every directory down to dir lets others search
// it (only matters as root, when the confined uid is another one).
func searchable(dir string) bool {
	if strings.HasPrefix(dir+"/", "/tmp/") || strings.HasPrefix(dir+"/", "/dev/shm/") {
		return false
	}
	for d := dir; ; d = filepath.Dir(d) {
		fi, err := os.Stat(d)
		if err != nil || !fi.IsDir() || (os.Geteuid() == 0 && fi.Mode().Perm()&0o001 == 0) {
			return false
		}
		if d == "/" {
			return true
		}
	}
}

func TestLandlockConfinesFiles(t *testing.T) {
	t.Parallel()
	requireLandlock(t)
	t.Run("checked", func(t *testing.T) { t.Parallel(); testLandlockConfinesFiles(t, false) })
	t.Run("unchecked-reads", func(t *testing.T) { t.Parallel(); testLandlockConfinesFiles(t, true) })
}

// testLandlockConfinesFiles tries a confined shell's reads and writes in
// and out of the roots. With uncheckedReads it may read anywhere file
// permissions let it (and truncate: see Policy.UncheckedReads), and every
// other change outside the writable roots is still refused.
func testLandlockConfinesFiles(t *testing.T, uncheckedReads bool) {
	base := landlockBase(t)
	work := filepath.Join(base, "work")
	if err := os.Mkdir(work, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := PrepareRoots([]string{work}, 0, 0); err != nil {
		t.Fatal(err)
	}
	// World-writable, so that file permissions allow what Landlock refuses.
	data := filepath.Join(base, "data")
	outside := filepath.Join(base, "outside")
	for _, d := range []string{data, outside} {
		if err := os.Mkdir(d, 0o777); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(d, 0o777); err != nil {
			t.Fatal(err)
		}
		for _, f := range []string{"f", "t"} {
			if err := os.WriteFile(filepath.Join(d, f), []byte("content\n"), 0o666); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(filepath.Join(d, f), 0o666); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := os.Symlink(filepath.Join(outside, "f"), filepath.Join(work, "link")); err != nil {
		t.Fatal(err)
	}
	tmpName := fmt.Sprintf("/tmp/confine-test-%d", time.Now().UnixNano())
	script := strings.Join([]string{
		`check() { name=$1; shift; if ( eval "$*" ) >/dev/null 2>&1; then echo "$name ok"; else echo "$name denied"; fi; }`,
		`check write-work 'echo x > work/new'`,
		`check rename-work 'mkdir work/d && mv work/new work/d/new'`,
		`check write-outside 'echo x > outside/new'`,
		`check append-outside 'echo x >> outside/f'`,
		`check write-data 'echo x > data/new'`,
		`check read-data 'cat data/f'`,
		`check read-outside 'cat outside/f'`,
		`check read-link-outside 'cat work/link'`,
		`check list-outside 'ls outside'`,
		`check write-tmp 'echo x > ` + tmpName + ` && rm ` + tmpName + `'`,
		`check dev-null 'echo x > /dev/null'`,
		`check dev-stdout 'echo x > /dev/stdout'`,
		`check dev-urandom 'head -c 4 /dev/urandom'`,
		`check proc-self 'cat /proc/self/status'`,
		`check read-etc 'cat /etc/passwd'`,
		`check remove-outside 'rm -f outside/f'`,
		`check mkdir-outside 'mkdir outside/d'`,
		`check symlink-outside 'ln -s /etc outside/s'`,
		`check link-in 'ln outside/f work/hard'`,
		`check move-in 'mv outside/f work/moved'`,
		`check move-out 'echo x > work/out && mv work/out outside/out'`,
		// truncate(1) opens for writing; truncate(2) does not.
		`check truncate-outside 'truncate -s 0 outside/t'`,
		`command -v python3 >/dev/null || echo "truncate2-outside skipped"`,
		`command -v python3 >/dev/null && check truncate2-outside 'python3 -c "import os; os.truncate(\"outside/t\", 0)"'`,
	}, "\n")
	p := &Policy{ReadOnly: []string{data}, Writable: []string{work}, UncheckedReads: uncheckedReads}
	res := run(t, p, base, "sh", "-c", script)
	got := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(res.stdout), "\n") {
		k, v, _ := strings.Cut(line, " ")
		got[k] = v
	}
	outsideReads := "denied"
	if uncheckedReads {
		outsideReads = "ok"
	}
	for name, want := range map[string]string{
		"write-work": "ok", "rename-work": "ok", "write-tmp": "ok", "read-data": "ok",
		"dev-null": "ok", "dev-stdout": "ok", "dev-urandom": "ok", "proc-self": "ok", "read-etc": "ok",
		"write-outside": "denied", "append-outside": "denied", "write-data": "denied",
		"remove-outside": "denied", "mkdir-outside": "denied", "symlink-outside": "denied",
		"link-in": "denied", "move-in": "denied", "move-out": "denied",
		"truncate-outside": "denied",
		"read-outside":     outsideReads, "read-link-outside": outsideReads, "list-outside": outsideReads,
		"truncate2-outside": outsideReads,
	} {
		if name == "truncate2-outside" && got[name] == "skipped" {
			continue // no python3 to call truncate(2) with
		}
		if got[name] != want {
			t.Errorf("%s: got %q, want %s (output %q, stderr %q)", name, got[name], want, res.stdout, res.stderr)
		}
	}
	for _, f := range []string{filepath.Join(outside, "new"), filepath.Join(data, "new"), filepath.Join(outside, "d"), filepath.Join(outside, "s"), filepath.Join(outside, "out")} {
		if _, err := os.Stat(f); err == nil {
			t.Errorf("%s was created", f)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(outside, "f")); string(b) != "content\n" {
		t.Errorf("outside/f became %q", b)
	}
}

func TestLimitsAreSet(t *testing.T) {
	t.Parallel()
	p := &Policy{Limits: Limits{Processes: 100, OpenFiles: 200, FileSize: 3 << 20, AddressSpace: 1 << 30, CPUSeconds: 30}}
	res := run(t, p, "/", "cat", "/proc/self/limits")
	for _, want := range []string{
		`Max processes\s+100\s+100\s`,
		`Max open files\s+200\s+200\s`,
		`Max file size\s+3145728\s+3145728\s`,
		`Max address space\s+1073741824\s+1073741824\s`,
		`Max cpu time\s+30\s+31\s`,
		`Max core file size\s+0\s+0\s`,
	} {
		if !regexp.MustCompile(want).MatchString(res.stdout) {
			t.Errorf("limits %q: no line matching %s", res.stdout, want)
		}
	}
}

func TestFileSizeLimit(t *testing.T) {
	t.Parallel()
	_, work := roots(t)
	p := &Policy{Writable: []string{work}, Limits: Limits{FileSize: 1 << 20}}
	res := run(t, p, work, "sh", "-c", "head -c 2097152 /dev/zero > big; echo status=$?")
	if !strings.Contains(res.stdout, "status=153") { // 128 + SIGXFSZ
		t.Errorf("writing 2 MiB under a 1 MiB limit: got %q, want head killed by SIGXFSZ (153)", res.stdout)
	}
	if fi, err := os.Stat(filepath.Join(work, "big")); err != nil || fi.Size() != 1<<20 {
		t.Errorf("big: %v, size %v; want exactly 1 MiB", err, fi)
	}
}

func TestAddressSpaceLimit(t *testing.T) {
	t.Parallel()
	if raceEnabled {
		t.Skip("the race detector maps shadow memory that no small address-space limit leaves room for")
	}
	// A Go binary maps a lot of address space up front: measure what the
	// helper needs by itself and give it 256 MiB more.
	res := run(t, helperPolicy(), "/", helperPath, helperArg, "vmsize")
	base, err := strconv.ParseUint(strings.TrimSpace(res.stdout), 10, 64)
	if err != nil {
		t.Fatalf("helper vmsize: %q %q", res.stdout, res.stderr)
	}
	p := helperPolicy()
	p.Limits.AddressSpace = base + 256<<20
	if res := run(t, p, "/", helperPath, helperArg, "alloc", "64"); res.code != 0 {
		t.Fatalf("allocating 64 MiB with 256 MiB to spare: exit %d, stderr %.300q", res.code, res.stderr)
	}
	res = run(t, p, "/", helperPath, helperArg, "alloc", "1024")
	if res.code == 0 || !(strings.Contains(res.stderr, "out of memory") || strings.Contains(res.stderr, "address space")) {
		t.Errorf("allocating 1 GiB with 256 MiB to spare: exit %d, stderr %.300q; want out of memory", res.code, res.stderr)
	}
}

func TestCPULimit(t *testing.T) {
	t.Parallel()
	p := &Policy{Limits: Limits{CPUSeconds: 1}}
	res := run(t, p, "/", "sh", "-c", "while :; do :; done")
	if res.signal != syscall.SIGXCPU && res.signal != syscall.SIGKILL {
		t.Errorf("busy loop under 1 CPU second: got exit %d signal %v, want SIGXCPU", res.code, res.signal)
	}
}

func TestPrepareRoots(t *testing.T) {
	t.Parallel()
	_, work := roots(t)
	fi, err := os.Stat(work)
	if err != nil {
		t.Fatal(err)
	}
	st := fi.Sys().(*syscall.Stat_t)
	wantUID := uint32(os.Getuid())
	if os.Geteuid() == 0 {
		wantUID = NobodyID
	}
	if st.Uid != wantUID {
		t.Fatalf("work owner: got %d, want %d", st.Uid, wantUID)
	}
}

func TestStatus(t *testing.T) {
	t.Parallel()
	s := (&Policy{UID: 12345, GID: 23456}).Status()
	want := "children run as 12345:23456"
	if os.Geteuid() != 0 {
		want = fmt.Sprintf("children keep sandboxd's uid %d", os.Getuid())
	}
	if !strings.Contains(s, "seccomp ") || !strings.Contains(s, "landlock") || !strings.Contains(s, want) {
		t.Fatalf("Status() = %q, want it to name seccomp, landlock and %q", s, want)
	}
	t.Log(s)
}

// --- Killing.

// startLines starts cmd and returns a reader of its stdout lines.
func startLines(t *testing.T, cmd *exec.Cmd, dir string) *bufio.Scanner {
	t.Helper()
	cmd.Dir = dir
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.WaitDelay = 2 * time.Second
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { KillGroup(cmd); cmd.Wait() })
	return bufio.NewScanner(out)
}

func expectLine(t *testing.T, sc *bufio.Scanner, want string) {
	t.Helper()
	done := make(chan bool, 1)
	go func() { done <- sc.Scan() && sc.Text() == want }()
	select {
	case ok := <-done:
		if !ok {
			t.Fatalf("want line %q, got %q (err %v)", want, sc.Text(), sc.Err())
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("no line %q within 10s", want)
	}
}

// waitGone waits until pid is dead or a zombie.
func waitGone(t *testing.T, pid int, what string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		p, ok := readStat(pid)
		if !ok || p.state == 'Z' || p.state == 'X' {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("%s (pid %d) still alive 5s after KillGroup", what, pid)
}

func waitExit(t *testing.T, cmd *exec.Cmd) syscall.WaitStatus {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Wait did not return within 10s of KillGroup")
	}
	return cmd.ProcessState.Sys().(syscall.WaitStatus)
}

// ignores reports whether process pid ignores sig (its SigIgn mask).
func ignores(t *testing.T, pid int, sig syscall.Signal) bool {
	t.Helper()
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.Lines(string(b)) {
		if mask, ok := strings.CutPrefix(line, "SigIgn:"); ok {
			m, err := strconv.ParseUint(strings.TrimSpace(mask), 16, 64)
			if err != nil {
				t.Fatalf("SigIgn of %d: %v", pid, err)
			}
			return m&(1<<(uint(sig)-1)) != 0
		}
	}
	t.Fatalf("no SigIgn in /proc/%d/status", pid)
	return false
}

func TestKillGroupKillsWhatIgnoresSIGTERM(t *testing.T) {
	t.Parallel()
	cmd, err := (&Policy{}).Command("sh", "-c", `trap '' TERM; echo ready; while :; do sleep 1; done`)
	if err != nil {
		t.Fatal(err)
	}
	sc := startLines(t, cmd, "/")
	expectLine(t, sc, "ready")
	// The shell ignores SIGTERM, so the kernel drops it as it is sent:
	// nothing to wait for after the kill.
	if !ignores(t, cmd.Process.Pid, syscall.SIGTERM) {
		t.Fatal("the shell does not ignore SIGTERM: the test proves nothing")
	}
	if err := syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Process.Signal(syscall.Signal(0)); err != nil {
		t.Fatalf("the shell died of SIGTERM (%v): the test proves nothing", err)
	}
	if err := KillGroup(cmd); err != nil {
		t.Fatal(err)
	}
	if ws := waitExit(t, cmd); ws.Signal() != syscall.SIGKILL {
		t.Fatalf("wait status %v, want killed by SIGKILL", ws)
	}
}

func TestKillGroupReachesGrandchildThatLeftTheSession(t *testing.T) {
	t.Parallel()
	_, cmd, work := escapingGrandchild(t)
	checkEscapedGrandchildKilled(t, cmd, startLines(t, cmd, work), work)
}

// escapingGrandchild returns a command, under a policy with a writable
// work folder, whose subshell starts a grandchild and exits at once, so
// that the grandchild outlives its parent; the grandchild then leaves the
// session and process group and writes its pid to work/gc.pid, and the
// command prints "ready" and sleeps.
func escapingGrandchild(t *testing.T) (*Policy, *exec.Cmd, string) {
	t.Helper()
	_, work := roots(t)
	p := helperPolicy()
	p.Writable = []string{work}
	cmd, err := p.Command("sh", "-c", "( "+helperPath+" "+helperArg+" setsid-sleep gc.pid & ); "+
		"while [ ! -s gc.pid ]; do sleep 0.02; done; echo ready; exec sleep 1000")
	if err != nil {
		t.Fatal(err)
	}
	return p, cmd, work
}

func TestKillGroupAfterTheCommandExited(t *testing.T) {
	t.Parallel()
	_, work := roots(t)
	p := &Policy{Writable: []string{work}}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cmd, err := p.CommandContext(ctx, "sh", "-c", "sleep 1000 & echo $! > bg.pid")
	if err != nil {
		t.Fatal(err)
	}
	cmd.Dir = work
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(work, "bg.pid"))
	if err != nil {
		t.Fatal(err)
	}
	bg, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	if _, ok := readStat(bg); !ok {
		t.Fatalf("background process %d is gone already", bg)
	}
	if err := KillGroup(cmd); err != nil {
		t.Fatal(err)
	}
	waitGone(t, bg, "the background process left in the session")
}

// TestKillGroupWhileTheCommandIsAZombie: the leader has exited but is not
// reaped yet (what a caller sees after waitid with WNOWAIT).
func TestKillGroupWhileTheCommandIsAZombie(t *testing.T) {
	t.Parallel()
	_, work := roots(t)
	cmd, err := (&Policy{Writable: []string{work}}).Command("sh", "-c", "sleep 1000 & echo $! > bg.pid")
	if err != nil {
		t.Fatal(err)
	}
	cmd.Dir = work
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var info unix.Siginfo
	if err := unix.Waitid(unix.P_PID, cmd.Process.Pid, &info, unix.WEXITED|unix.WNOWAIT, nil); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(work, "bg.pid"))
	if err != nil {
		t.Fatal(err)
	}
	bg, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	if err := KillGroup(cmd); err != nil {
		t.Fatal(err)
	}
	waitGone(t, bg, "the background process of a zombie leader")
	if err := cmd.Wait(); err != nil {
		t.Fatalf("Wait after KillGroup on the zombie: %v", err)
	}
}

func TestKillGroupNoProcess(t *testing.T) {
	t.Parallel()
	if err := KillGroup(nil); err != nil {
		t.Fatal(err)
	}
	if err := KillGroup(&exec.Cmd{}); err != nil {
		t.Fatal(err)
	}
}

// TestForkBombIsBounded runs alone (not parallel): the process limit counts
// every process of the uid.
func TestForkBombIsBounded(t *testing.T) {
	limit := uint64(24)
	if os.Geteuid() != 0 {
		// Not root: the command keeps our uid, whose threads count too.
		limit += uint64(countTasks(os.Getuid()))
	}
	p := &Policy{Limits: Limits{Processes: limit}}

	// Check the limit took before lighting anything.
	res := run(t, p, "/", "cat", "/proc/self/limits")
	if !regexp.MustCompile(fmt.Sprintf(`Max processes\s+%d\s+%d\s`, limit, limit)).MatchString(res.stdout) {
		t.Fatalf("process limit not in place (%q): not running the fork bomb", res.stdout)
	}

	cmd, err := p.Command("sh", "-c", `b() { b | b & }; b; echo lit; sleep 1000`)
	if err != nil {
		t.Fatal(err)
	}
	sc := startLines(t, cmd, "/")
	go func() {
		for sc.Scan() {
		}
	}()
	root := cmd.Process.Pid
	most := 0
	for end := time.Now().Add(1500 * time.Millisecond); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		if n := len(treeOf(root, scanProcs())); n > most {
			most = n
		}
	}
	if uint64(most) > limit {
		t.Errorf("the bomb reached %d processes, over the limit of %d", most, limit)
	}
	t.Logf("the bomb peaked at %d processes (limit %d)", most, limit)
	if err := KillGroup(cmd); err != nil {
		t.Fatal(err)
	}
	waitExit(t, cmd)
	deadline := time.Now().Add(5 * time.Second)
	for {
		alive := 0
		for _, p := range scanProcs() {
			if p.sid == root && p.state != 'Z' {
				alive++
			}
		}
		if alive == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d processes of the bomb alive 5s after KillGroup", alive)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := exec.Command("true").Run(); err != nil {
		t.Fatalf("sandboxd cannot start a process after the bomb: %v", err)
	}
}

// countTasks counts the threads of uid, as RLIMIT_NPROC does.
func countTasks(uid int) int {
	n := 0
	for _, p := range scanProcs() {
		fi, err := os.Stat("/proc/" + strconv.Itoa(p.pid))
		if err != nil || int(fi.Sys().(*syscall.Stat_t).Uid) != uid {
			continue
		}
		tasks, _ := os.ReadDir("/proc/" + strconv.Itoa(p.pid) + "/task")
		n += len(tasks)
	}
	return n
}

// openPTY opens a pseudo-terminal pair the way exec_command sessions do.
func openPTY(t *testing.T) (master, slave *os.File) {
	t.Helper()
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("no pseudo-terminals here: %v", err)
	}
	t.Cleanup(func() { m.Close() })
	if err := unix.IoctlSetPointerInt(int(m.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		t.Fatal(err)
	}
	n, err := unix.IoctlGetInt(int(m.Fd()), unix.TIOCGPTN)
	if err != nil {
		t.Fatal(err)
	}
	s, err := os.OpenFile("/dev/pts/"+strconv.Itoa(n), os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	if err := unix.IoctlSetWinsize(int(s.Fd()), unix.TIOCSWINSZ, &unix.Winsize{Row: 33, Col: 101}); err != nil {
		t.Fatal(err)
	}
	return m, s
}

func TestControllingTerminal(t *testing.T) {
	t.Parallel()
	master, slave := openPTY(t)
	p := &Policy{}
	// The confined uid must be able to open its terminal again by name.
	uid, gid := p.Identity()
	if err := os.Chown(slave.Name(), uid, gid); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// Reopening /dev/tty and asking its size exercises Landlock's device
	// rules (open and ioctl) on top of the inherited descriptors.
	cmd, err := p.CommandContext(ctx, "sh", "-c", "stty size < /dev/tty; tty")
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = slave, slave, slave
	cmd.SysProcAttr.Setctty = true
	cmd.SysProcAttr.Ctty = 0
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	checkTerminalOutput(t, cmd, master, slave)
}

// checkTerminalOutput waits for a started `stty size < /dev/tty; tty` on
// slave and checks it saw the terminal's size and name through master.
func checkTerminalOutput(t *testing.T, cmd *exec.Cmd, master, slave *os.File) {
	t.Helper()
	slave.Close()
	var out bytes.Buffer
	done := make(chan struct{})
	go func() { io.Copy(&out, master); close(done) }()
	err := cmd.Wait()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
	}
	if err != nil {
		t.Fatalf("sh on a terminal: %v, output %q", err, out.String())
	}
	got := strings.ReplaceAll(out.String(), "\r", "")
	if !strings.HasPrefix(got, "33 101\n/dev/pts/") {
		t.Fatalf("got %q, want the terminal's size then its name", got)
	}
}

// checkEscapedGrandchildKilled takes a command that printed "ready" on sc
// after starting a grandchild that left its session (pid in work/gc.pid),
// checks the grandchild really escaped its session and group but stayed in
// the command's tree, and that KillGroup kills it.
func checkEscapedGrandchildKilled(t *testing.T, cmd *exec.Cmd, sc *bufio.Scanner, work string) {
	t.Helper()
	expectLine(t, sc, "ready")
	b, err := os.ReadFile(filepath.Join(work, "gc.pid"))
	if err != nil {
		t.Fatal(err)
	}
	gc, _ := strconv.Atoi(string(b))
	root := cmd.Process.Pid
	st, ok := readStat(gc)
	if !ok {
		t.Fatalf("grandchild %d is gone before KillGroup", gc)
	}
	// Without the subreaper the grandchild would belong to init, and
	// without the tree walk a group or session kill would miss it.
	if st.ppid != root {
		t.Errorf("grandchild's parent is %d, want the command (%d), its subreaper", st.ppid, root)
	}
	if st.sid == root || st.pgrp == root {
		t.Fatalf("grandchild still in the command's session/group (sid %d, pgrp %d): the test proves nothing", st.sid, st.pgrp)
	}
	if err := KillGroup(cmd); err != nil {
		t.Fatal(err)
	}
	waitExit(t, cmd)
	waitGone(t, gc, "the grandchild that left the session")
}
