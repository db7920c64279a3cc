//go:build linux

package confine

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// The root mode of local runs (Policy.KeepRoot, ShedCapabilities): a
// command that keeps uid 0 must not be able to use any capability. Each
// break test below tries one from a shell and must fail; the control runs
// the same shell as root, unconfined, and must succeed, so that a refusal
// is the confinement's and not the test machine's.

func requireKeepRoot(t *testing.T) {
	t.Helper()
	requireRoot(t)
	requireLandlock(t)
}

// zeroCaps is what /proc/self/status shows of a process without any
// capability.
const zeroCaps = "CapInh: 0000000000000000 CapPrm: 0000000000000000 CapEff: 0000000000000000 CapBnd: 0000000000000000 CapAmb: 0000000000000000"

func TestKeepRootDropsEveryCapability(t *testing.T) {
	t.Parallel()
	requireKeepRoot(t)
	p := &Policy{KeepRoot: true, UID: 12345, GID: 12345}
	if uid, gid := p.Identity(); uid != 0 || gid != 0 {
		t.Errorf("Identity() = %d:%d, want 0:0", uid, gid)
	}
	show := `id -u; id -g; grep -E '^(Cap(Inh|Prm|Eff|Bnd|Amb)|NoNewPrivs):' /proc/self/status | tr -s '\t' ' '`
	want := "0\n0\n" + strings.ReplaceAll(zeroCaps, " Cap", "\nCap") + "\nNoNewPrivs: 1"
	for _, start := range []string{"cold", "warm"} {
		t.Run(start, func(t *testing.T) {
			// Twice: the second warm start takes a trampoline started
			// ahead of time.
			for range 2 {
				cmd, err := p.Command("/bin/sh", "-c", show)
				if err != nil {
					t.Fatal(err)
				}
				var out strings.Builder
				cmd.Stdout, cmd.Stderr, cmd.Dir = &out, &out, "/"
				if start == "warm" {
					err = Start(cmd)
				} else {
					err = cmd.Start()
				}
				if err == nil {
					err = cmd.Wait()
				}
				if got := strings.TrimSpace(out.String()); err != nil || got != want {
					t.Fatalf("a command started %s under KeepRoot: %v\n%s\nwant\n%s", start, err, got, want)
				}
			}
		})
	}
}

func TestKeepRootNeedsLandlock(t *testing.T) {
	t.Parallel()
	requireRoot(t)
	p := &Policy{KeepRoot: true, noLandlock: true}
	if _, err := p.Command("true"); err == nil || !strings.Contains(err.Error(), "needs Landlock") {
		t.Fatalf("Command under KeepRoot without Landlock: %v, want an error saying it needs Landlock", err)
	}
}

// TestKeepRootPolicyFailsClosed: a KeepRoot policy that loses its Landlock
// ruleset on the way stops the trampoline.
func TestKeepRootPolicyFailsClosed(t *testing.T) {
	t.Parallel()
	requireKeepRoot(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cmd, err := (&Policy{KeepRoot: true}).CommandContext(ctx, "sh", "-c", "echo ran")
	if err != nil {
		t.Fatal(err)
	}
	cmd.Env = editPolicy("landlock ", drop)(cmd.Env)
	res := wait(t, ctx, cmd, "/")
	if res.code != ExitConfineFailure || res.stdout != "" || !strings.Contains(res.stderr, "nocaps without landlock") {
		t.Fatalf("got exit %d, stdout %q, stderr %q; want %d, nothing run, and why", res.code, res.stdout, res.stderr, ExitConfineFailure)
	}
}

// capabilityProbes is a shell script that tries, in the current directory,
// what only a capability allows, and prints "NAME: ok" or "NAME: ERROR"
// for each: reading and changing the mode of a file of another user
// (CAP_DAC_OVERRIDE, CAP_FOWNER), giving a file to another user
// (CAP_CHOWN), making a device node (CAP_MKNOD), writing a file root owns
// outside the writable roots (Landlock: root owns it, so no capability is
// needed), and, with python3, binding a privileged port
// (CAP_NET_BIND_SERVICE) and changing uid (CAP_SETUID). $1 is a privileged
// port that is free, or empty; $2 a root process that is not the command's
// (signalling it needs nothing but the uid, unless Landlock scopes
// signals).
const capabilityProbes = `
probe() { name=$1; shift; if out=$("$@" 2>&1); then echo "$name: ok"; else echo "$name: $(echo "$out" | tail -n 1)"; fi; }
probe read-0600 cat other/secret
probe chmod chmod 0666 other/secret
probe chown chown 65534:65534 mine
probe mknod mknod node c 1 3
probe write-outside sh -c 'echo x >> ../outside.txt'
if [ -x /usr/bin/python3 ]; then
  [ -n "$1" ] && probe bind /usr/bin/python3 -c "import socket; socket.socket().bind(('127.0.0.1', $1))"
  probe setuid /usr/bin/python3 -c 'import os; os.setuid(65534)'
fi
probe kill kill -0 "$2"
grep -E '^Cap(Inh|Prm|Eff|Bnd|Amb):' /proc/self/status | tr -s '\t' ' ' | tr '\n' ' '
`

// probeDir makes a fresh directory for capabilityProbes: base/work (a
// writable root) holding other/secret (0600, of uid 65534), mine (root's),
// and base/outside.txt, root's, outside the roots (and outside /tmp, which
// every command may write).
func probeDir(t *testing.T) (base, work string) {
	t.Helper()
	base = landlockBase(t)
	work = filepath.Join(base, "work")
	other := filepath.Join(work, "other")
	for _, d := range []string{work, other} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for name, mode := range map[string]os.FileMode{filepath.Join(other, "secret"): 0o600, filepath.Join(work, "mine"): 0o644, filepath.Join(base, "outside.txt"): 0o644} {
		if err := os.WriteFile(name, []byte("root's\n"), mode); err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range []string{other, filepath.Join(other, "secret")} {
		if err := os.Chown(name, NobodyID, NobodyID); err != nil {
			t.Fatal(err)
		}
	}
	return base, work
}

// freePrivilegedPort returns a port below 1024 that nobody listens on, or
// "" when unprivileged processes may bind such ports here.
func freePrivilegedPort(t *testing.T) string {
	t.Helper()
	if b, err := os.ReadFile("/proc/sys/net/ipv4/ip_unprivileged_port_start"); err == nil {
		if n, _ := strconv.Atoi(strings.TrimSpace(string(b))); n <= 80 {
			return ""
		}
	}
	for port := 80; port < 1024; port++ {
		if ln, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port)); err == nil {
			ln.Close()
			return strconv.Itoa(port)
		}
	}
	return ""
}

// parseProbes reads capabilityProbes' output: each probe's result, and the
// capability line under "caps".
func parseProbes(out string) map[string]string {
	got := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		if strings.HasPrefix(line, "Cap") {
			got["caps"] = strings.TrimSpace(line)
			continue
		}
		if name, res, ok := strings.Cut(line, ": "); ok {
			got[name] = res
		}
	}
	return got
}

func TestKeepRootCannotUseCapabilities(t *testing.T) {
	t.Parallel()
	requireKeepRoot(t)
	port := freePrivilegedPort(t)
	// A root process of the machine's, not the command's.
	daemon := exec.Command("sleep", "60")
	if err := daemon.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = daemon.Process.Kill(); _ = daemon.Wait() })
	pid := strconv.Itoa(daemon.Process.Pid)
	python := fileExists("/usr/bin/python3")

	t.Run("control", func(t *testing.T) {
		t.Parallel()
		_, work := probeDir(t)
		cmd := exec.Command("/bin/bash", "-c", capabilityProbes, "probes", port, pid)
		cmd.Dir = work
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("the probes as root, unconfined: %v\n%s", err, out)
		}
		got := parseProbes(string(out))
		for _, name := range probeNames(port != "", python) {
			if got[name] != "ok" {
				t.Errorf("%s as root, unconfined: %q, want ok (the break test below would prove nothing)", name, got[name])
			}
		}
	})
	t.Run("keep-root", func(t *testing.T) {
		t.Parallel()
		_, work := probeDir(t)
		p := &Policy{KeepRoot: true, Writable: []string{work}}
		res := run(t, p, work, "/bin/bash", "-c", capabilityProbes, "probes", port, pid)
		if res.code != 0 {
			t.Fatalf("the probes under KeepRoot: exit %d\n%s%s", res.code, res.stdout, res.stderr)
		}
		got := parseProbes(res.stdout)
		want := map[string]string{
			"read-0600":     "Permission denied",
			"chmod":         "Operation not permitted",
			"chown":         "Operation not permitted",
			"mknod":         "Operation not permitted",
			"write-outside": "Permission denied",
			"bind":          "Permission denied",
			"setuid":        "Operation not permitted",
		}
		if LandlockABI() >= 6 {
			want["kill"] = "Operation not permitted"
		}
		for _, name := range probeNames(port != "", python) {
			if w, ok := want[name]; ok && !strings.Contains(got[name], w) {
				t.Errorf("%s from a command that keeps uid 0: %q, want it refused: %s", name, got[name], w)
			}
		}
		if got["caps"] != zeroCaps {
			t.Errorf("its capabilities: %q, want %q", got["caps"], zeroCaps)
		}
		for _, f := range []string{"mine", "other/secret"} {
			var st unix.Stat_t
			if err := unix.Stat(filepath.Join(work, f), &st); err != nil {
				t.Fatal(err)
			}
			if f == "mine" && st.Uid != 0 || f == "other/secret" && st.Mode&0o777 != 0o600 {
				t.Errorf("%s: owner %d mode %o after the probes: changed", f, st.Uid, st.Mode&0o777)
			}
		}
	})
}

func probeNames(bind, python bool) []string {
	names := []string{"read-0600", "chmod", "chown", "mknod", "write-outside", "kill"}
	if python {
		names = append(names, "setuid")
		if bind {
			names = append(names, "bind")
		}
	}
	return names
}

func fileExists(name string) bool {
	_, err := os.Stat(name)
	return err == nil
}

// TestShedCapabilities runs the helper as a root sandboxd in local mode:
// it sheds its capabilities (executing itself again) and reports what it
// and every one of its threads hold, what it kept of its environment, and
// what it meets when it gives a file away.
func TestShedCapabilities(t *testing.T) {
	t.Parallel()
	requireRoot(t)
	file := filepath.Join(t.TempDir(), "mine")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(helperPath, helperArg, "shed", file)
	cmd.Env = []string{"PATH=/usr/bin:/bin", "KEPT=yes"}
	b, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("helper shed: %v, output %q", err, b)
	}
	var got map[string]string
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatalf("helper output %q: %v", b, err)
	}
	want := map[string]string{
		"pid":        strconv.Itoa(cmd.Process.Pid), // the same process, executed again
		"held":       "",
		"threads":    "none held",
		"uid":        "0 0",
		"securebits": "0xef",
		"env":        "KEPT=yes EXTRA=given marker=",
		"chown":      "EPERM",
	}
	for k, w := range want {
		if got[k] != w {
			t.Errorf("%s: got %q, want %q", k, got[k], w)
		}
	}
}

// helperShed is the helper's "shed" mode (see TestShedCapabilities).
func helperShed(rest []string) int {
	if err := ShedCapabilities([]string{"EXTRA=given"}); err != nil {
		fmt.Println(err)
		return 1
	}
	out := map[string]string{"pid": strconv.Itoa(os.Getpid()), "uid": fmt.Sprint(os.Getuid(), os.Geteuid())}
	held, err := Capabilities(os.Getpid())
	if err != nil {
		fmt.Println(err)
		return 1
	}
	out["held"] = held
	// Start threads, and look at all of them.
	ReserveThreads(8)
	out["threads"] = "none held"
	tasks, _ := os.ReadDir("/proc/self/task")
	for _, task := range tasks {
		status, _ := os.ReadFile("/proc/self/task/" + task.Name() + "/status")
		if caps := statusLines(string(status), "CapInh:", "CapPrm:", "CapEff:", "CapBnd:", "CapAmb:"); caps != zeroCaps {
			out["threads"] = "thread " + task.Name() + ": " + caps
		}
	}
	bits, err := unix.PrctlRetInt(unix.PR_GET_SECUREBITS, 0, 0, 0, 0)
	out["securebits"] = fmt.Sprintf("%#x", bits)
	if err != nil {
		out["securebits"] = err.Error()
	}
	out["env"] = fmt.Sprintf("KEPT=%s EXTRA=%s marker=%s", os.Getenv("KEPT"), os.Getenv("EXTRA"), os.Getenv(shedEnv))
	out["chown"] = "ok"
	if err := os.Chown(rest[0], NobodyID, NobodyID); err != nil {
		out["chown"] = errnoName(err)
	}
	b, _ := json.Marshal(out)
	fmt.Println(string(b))
	return 0
}

func TestPolicyEnvReplacesTheBase(t *testing.T) {
	t.Parallel()
	p := &Policy{Env: []string{"PATH=/opt/tools/bin:/usr/bin:/bin", "HOME=/home/someone", "FOO=bar"}}
	res := run(t, p, "/", "/usr/bin/env")
	if res.code != 0 {
		t.Fatalf("env: exit %d, stderr %q", res.code, res.stderr)
	}
	count := map[string]int{}
	for _, line := range strings.Split(strings.TrimSpace(res.stdout), "\n") {
		name, _, _ := strings.Cut(line, "=")
		count[name]++
	}
	for _, want := range []string{"PATH=/opt/tools/bin:/usr/bin:/bin\n", "HOME=/home/someone\n", "FOO=bar\n", "LANG=C.UTF-8\n"} {
		if !strings.Contains(res.stdout+"\n", want) {
			t.Errorf("confined environment %q lacks %s", res.stdout, want)
		}
	}
	for name, n := range count {
		if n != 1 {
			t.Errorf("confined environment has %s %d times, want once", name, n)
		}
	}
}

func TestStatusKeepRoot(t *testing.T) {
	t.Parallel()
	requireRoot(t)
	if s := (&Policy{KeepRoot: true}).Status(); !strings.Contains(s, "children keep uid 0 without capabilities") {
		t.Fatalf("Status() = %q, want it to say children keep uid 0 without capabilities", s)
	}
}
