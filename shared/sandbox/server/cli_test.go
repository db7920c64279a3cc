package server_test

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/agentsfleet/agentsfleet/sandboximage"
	sandboxclient "github.com/agentsfleet/agentsfleet/shared/sandbox/client"
	"github.com/agentsfleet/agentsfleet/shared/sandbox/confine"
	"github.com/agentsfleet/agentsfleet/shared/sandbox/pin"
	"github.com/agentsfleet/agentsfleet/shared/sandbox/server"
	"github.com/agentsfleet/agentsfleet/shared/sandbox/wire"
)

// runCall runs sandboxd call with args and returns stdout, stderr and the
// exit status.
func runCall(t *testing.T, dir string, args ...string) (string, string, int) {
	t.Helper()
	return runCallEnv(t, dir, nil, args...)
}

// runCallEnv is runCall with env added to the test's environment.
func runCallEnv(t *testing.T, dir string, env []string, args ...string) (string, string, int) {
	t.Helper()
	cmd := sandboxd(t, append([]string{"call"}, args...)...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if _, ok := err.(*exec.ExitError); err != nil && !ok {
		t.Fatal(err)
	}
	return stdout.String(), stderr.String(), cmd.ProcessState.ExitCode()
}

func TestCallEntryPoint(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	if err := os.WriteFile(filepath.Join(f.work, "a.txt"), []byte("one\ntwo\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(f.data, "d.txt"), []byte("data\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name       string
		dir        string
		args       []string
		wantOut    string
		wantStatus int
		wantStderr string
	}{
		{"normal result", f.work, []string{"read", `{"path":"a.txt"}`}, "1\tone\n2\ttwo", 0, ""},
		{"workdir flag", f.base, []string{"--workdir", f.work, "read", `{"path":"a.txt","limit":1}`}, "1\tone\n[more lines follow: continue with offset 2]", 0, ""},
		{"data flag", f.work, []string{"--data", f.data, "read", `{"path":"` + filepath.Join(f.data, "d.txt") + `"}`}, "1\tdata", 0, ""},
		{"no data flag", f.work, []string{"read", `{"path":"` + filepath.Join(f.data, "d.txt") + `"}`}, filepath.Join(f.data, "d.txt") + " is outside the agent's data", 3, ""},
		{"error result", f.work, []string{"read", `{"path":"missing"}`}, "read: missing does not exist", 3, ""},
		{"bash exit code", f.work, []string{"bash", `{"command":"echo out; exit 4"}`}, "out\n[exit code 4]", 3, ""},
		{"bash timeout", f.work, []string{"--timeout", "1", "bash", `{"command":"sleep 30"}`}, "[timed out after 1 second: the command and every process it started were killed]", 3, ""},
		{"unknown tool", f.work, []string{"nope", `{}`}, "", 2, `unknown tool "nope"`},
		{"not an object", f.work, []string{"read", `["a.txt"]`}, "", 2, "must be a JSON object"},
		{"missing JSON", f.work, []string{"read"}, "", 2, "want TOOL and 'JSON'"},
		{"bad flag", f.work, []string{"--nope", "read", `{}`}, "", 2, "flag provided but not defined"},
		{"bad timeout", f.work, []string{"--timeout", "0", "read", `{}`}, "", 2, "--timeout must be a positive"},
		{"missing workdir", f.work, []string{"--workdir", filepath.Join(f.base, "nope"), "read", `{}`}, "", 2, "no such file"},
		{"user not a number", f.work, []string{"--user", "agent", "read", `{}`}, "", 2, `--user "agent": want UID or UID:GID`},
		{"user with a bad gid", f.work, []string{"--user", "10001:x", "read", `{}`}, "", 2, `--user "10001:x": want UID or UID:GID`},
		{"user root", f.work, []string{"--user", "0", "read", `{}`}, "", 2, "commands never run as root"},
		{"user group root", f.work, []string{"--user", "10001:0", "read", `{}`}, "", 2, "commands never run as root"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			stdout, stderr, status := runCall(t, tt.dir, tt.args...)
			if status != tt.wantStatus || (tt.wantOut != "" && !strings.HasSuffix(stdout, tt.wantOut)) || (tt.wantOut == "" && stdout != "") || !strings.Contains(stderr, tt.wantStderr) {
				t.Fatalf("sandboxd call %q: exit %d, stdout %q, stderr %q; want exit %d, stdout %q, stderr containing %q",
					tt.args, status, stdout, stderr, tt.wantStatus, tt.wantOut, tt.wantStderr)
			}
		})
	}
	if out, _, _ := runCall(t, f.work, "read", `{"path":"a.txt"}`); out != "1\tone\n2\ttwo" {
		t.Fatalf("call prints %q, want exactly the result text", out)
	}
}

// TestCallUser: a root sandboxd runs its commands as --user; any other
// sandboxd accepts only its own ids there.
func TestCallUser(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	if os.Geteuid() != 0 {
		own := fmt.Sprintf("%d:%d", os.Getuid(), os.Getgid())
		if out, stderr, status := runCall(t, f.work, "--user", own, "bash", `{"command":"id -u"}`); status != 0 {
			t.Fatalf("--user %s (its own ids): exit %d, %q %q", own, status, out, stderr)
		}
		_, stderr, status := runCall(t, f.work, "--user", "12345:12346", "bash", `{"command":"id -u"}`)
		if status != server.ExitUsage || !strings.Contains(stderr, "needs sandboxd to run as root") {
			t.Fatalf("--user of another uid without root: exit %d, stderr %q; want 2 saying it needs root", status, stderr)
		}
		return
	}
	// A workdir that user cannot enter is refused up front, saying why.
	closed := filepath.Join(t.TempDir(), "work")
	if err := os.Mkdir(closed, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(filepath.Dir(closed), 0o700); err != nil {
		t.Fatal(err)
	}
	_, stderr, status := runCall(t, f.work, "--workdir", closed, "list", `{}`)
	if status != server.ExitUsage || !strings.Contains(stderr, fmt.Sprintf("the workdir %s cannot be entered by uid %d", closed, confine.NobodyID)) {
		t.Errorf("a workdir the user cannot enter: exit %d, stderr %q; want 2 saying so", status, stderr)
	}
	for args, want := range map[string]string{
		"":            fmt.Sprintf("%d %d", confine.NobodyID, confine.NobodyID),
		"12345":       "12345 12345",
		"12345:12346": "12345 12346",
	} {
		call := []string{"bash", `{"command":"echo $(id -u) $(id -g)"}`}
		if args != "" {
			call = append([]string{"--user", args}, call...)
		}
		out, stderr, status := runCall(t, f.work, call...)
		if status != 0 || out != want+"\n[exit code 0]" {
			t.Errorf("--user %q: exit %d, %q %q; want the command to run as %s", args, status, out, stderr, want)
		}
	}
}

func TestServeEndToEnd(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	p := startServe(t, []string{wire.TokenEnv + "=" + testToken, "AWS_SECRET_ACCESS_KEY=aws-must-not-leak"},
		"--workdir", f.work, "--data", f.data, "--idle-timeout", "0")
	c := p.client()
	if got := get(t, "http://"+p.addr+wire.HealthPath); got != http.StatusOK {
		t.Fatalf("healthz = %d", got)
	}
	if status, _ := (&client{base: c.base, token: "wrong-token-0123456789"}).call(t, "read", `{}`); status != http.StatusUnauthorized {
		t.Fatalf("wrong token: %d, want 401", status)
	}
	// The token reaches no command: not in its environment, not through
	// /proc, not through read.
	pid := strconv.Itoa(p.cmd.Process.Pid)
	for _, cmd := range []string{"env", "cat /proc/" + pid + "/environ", "cat /proc/$PPID/environ", "tr '\\0' '\\n' < /proc/" + pid + "/environ"} {
		res := c.result(t, "bash", fmt.Sprintf(`{"command":%q}`, cmd))
		if strings.Contains(res.Output, testToken) || strings.Contains(res.Output, "must-not-leak") {
			t.Fatalf("%s printed the token:\n%s", cmd, res.Output)
		}
	}
	for _, path := range []string{"/proc/" + pid + "/environ", "/proc/self/environ", "/proc/" + pid + "/root" + f.secret} {
		res := c.result(t, "read", fmt.Sprintf(`{"path":%q}`, path))
		if !res.IsError || strings.Contains(res.Output, testToken) {
			t.Fatalf("read %s = %q, want refused", path, res.Output)
		}
	}
	// Even a reader allowed to see sandboxd's /proc (root) finds the token
	// overwritten in the environment block it was started with.
	if environ, err := os.ReadFile("/proc/" + pid + "/environ"); err == nil {
		if bytes.Contains(environ, []byte(testToken)) || !bytes.Contains(environ, []byte(wire.TokenEnv+"=xxxx")) {
			t.Fatalf("sandboxd's /proc environ still holds the token:\n%q", environ)
		}
	} else if os.Geteuid() != 0 {
		t.Logf("/proc/%s/environ is closed to this test's user (non-dumpable), as it should be: %v", pid, err)
	}
	// Tool calls over the wire.
	if res := c.result(t, "bash", `{"command":"echo state > s.txt"}`); res.IsError {
		t.Fatalf("bash: %q", res.Output)
	}
	fresh := p.client()
	fresh.http = &http.Client{Transport: &http.Transport{}}
	if res := fresh.result(t, "read", `{"path":"s.txt"}`); res.Output != "1\tstate" {
		t.Fatalf("a new client reads %q, want the state the first wrote", res.Output)
	}
	// sandboxd health against it, then SIGTERM stops it with status 0.
	if out, err := sandboxd(t, "health", "--addr", p.addr).CombinedOutput(); err != nil {
		t.Fatalf("sandboxd health: %v %s", err, out)
	}
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if status := p.waitExit(t, 10*time.Second); status != 0 {
		t.Fatalf("after SIGTERM: exit %d, want 0\n%s", status, p.log())
	}
}

// TestServeActsAsItsCommandsUser: a root sandboxd serves as its commands'
// user (confine.ActAs): its file tools meet that user's permissions, the
// files apply_patch writes are that user's, its commands are that user,
// and root stays its real and saved id, which keeps them from it.
func TestServeActsAsItsCommandsUser(t *testing.T) {
	t.Parallel()
	if os.Geteuid() != 0 {
		t.Skip("needs root: sandboxd acts as another user only when it runs as root")
	}
	f := newFixture(t)
	if err := os.WriteFile(filepath.Join(f.work, "root-only.txt"), []byte("root only\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	p := startServe(t, []string{wire.TokenEnv + "=" + testToken}, "--workdir", f.work, "--idle-timeout", "0", "--user", "12345:12346")
	c := p.client()
	if err := os.Chown(f.work, 12345, 12346); err != nil {
		t.Fatal(err)
	}
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", p.cmd.Process.Pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`(?m)^Uid:\s+0\s+12345\s+0\s+12345$`, `(?m)^Gid:\s+0\s+12346\s+0\s+12346$`, `(?m)^Groups:\s*$`} {
		if !regexp.MustCompile(want).Match(status) {
			t.Errorf("sandboxd's /proc status has no line %s:\n%s", want, status)
		}
	}
	if res := c.result(t, "read", `{"path":"root-only.txt"}`); !res.IsError || !strings.Contains(res.Output, "permission denied") {
		t.Errorf("read of a file only root may read: %q, want permission denied", res.Output)
	}
	if res := c.result(t, "apply_patch", `{"input":"*** Begin Patch\n*** Add File: new.txt\n+new\n*** End Patch"}`); res.IsError {
		t.Fatalf("apply_patch: %q", res.Output)
	}
	if fi, err := os.Stat(filepath.Join(f.work, "new.txt")); err != nil {
		t.Error(err)
	} else if st := fi.Sys().(*syscall.Stat_t); st.Uid != 12345 || st.Gid != 12346 {
		t.Errorf("apply_patch wrote a file owned by %d:%d, want 12345:12346", st.Uid, st.Gid)
	}
	res := c.result(t, "bash", fmt.Sprintf(`{"command":"id -u; id -g; kill -0 %d"}`, p.cmd.Process.Pid))
	if !strings.HasPrefix(res.Output, "12345\n12346\n") || !res.IsError {
		t.Errorf("bash: %q, want uid 12345, gid 12346 and kill refused", res.Output)
	}
}

// Its commands cannot stop sandboxd by signalling any of its threads, not
// even threads it starts while serving (each running command has one
// waiting for it). When the test runs as root, sandboxd runs as
// confine.NobodyID, so that its commands share its uid, as when sandboxd is
// started by another user than root: then the seccomp filter is what stands
// between them and it.
func TestServeSurvivesItsCommands(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(f.base, "sandboxd")
	if b, err := os.ReadFile(self); err != nil || os.WriteFile(bin, b, 0o755) != nil {
		t.Fatalf("copy the test binary: %v", err)
	}
	cmd := exec.Command(bin, mainArg, "serve", "--listen", "127.0.0.1:0", "--workdir", f.work, "--idle-timeout", "0")
	cmd.Env = append(os.Environ(), wire.TokenEnv+"="+testToken)
	if os.Geteuid() == 0 {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: confine.NobodyID, Gid: confine.NobodyID, Groups: []uint32{}}}
	}
	p := runServe(t, cmd)
	c := p.client()
	pid := strconv.Itoa(p.cmd.Process.Pid)
	probe := fmt.Sprintf(`{"command":"n=0; for t in $(ls /proc/%s/task); do kill -0 $t 2>/dev/null && n=$((n+1)); done; echo reachable $n"}`, pid)
	for round := range 4 {
		// Commands running at once, each with a thread of sandboxd
		// waiting for it, while the probe lists and tries every thread.
		// Each says it began, then runs until the probe is done (30 s at
		// most).
		var wg sync.WaitGroup
		for i := range 8 {
			wg.Go(func() {
				c.result(t, "bash", fmt.Sprintf(`{"command":"touch began-%d-%d; for i in $(seq 3000); do [ -e probed-%d ] && break; sleep 0.01; done"}`, round, i, round))
			})
		}
		for i := range 8 {
			awaitFile(t, filepath.Join(f.work, fmt.Sprintf("began-%d-%d", round, i)), fmt.Sprintf("round %d: command %d", round, i))
		}
		if res := c.result(t, "bash", probe); res.Output != "reachable 0\n[exit code 0]" {
			t.Errorf("round %d: %q: a command can signal sandboxd", round, res.Output)
		}
		if err := os.WriteFile(filepath.Join(f.work, fmt.Sprintf("probed-%d", round)), nil, 0o644); err != nil {
			t.Fatal(err)
		}
		wg.Wait()
	}
	kill := fmt.Sprintf(`{"command":"for t in $(ls /proc/%s/task); do kill -9 $t; prlimit --pid $t --nofile=1:1; done 2>/dev/null; true"}`, pid)
	c.result(t, "bash", kill)
	if got := get(t, "http://"+p.addr+wire.HealthPath); got != http.StatusOK {
		t.Fatalf("after kill -9 and prlimit at each of its threads: healthz %d\n%s", got, p.log())
	}
	if res := c.result(t, "read", `{"path":"/etc/hostname"}`); res.IsError {
		t.Fatalf("after prlimit at each of its threads, read fails: %q", res.Output)
	}
}

func TestServeIdleExit(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	p := startServe(t, []string{wire.TokenEnv + "=" + testToken}, "--workdir", f.work, "--idle-timeout", "300ms")
	if status := p.waitExit(t, 10*time.Second); status != 0 {
		t.Fatalf("idle exit status %d, want 0\n%s", status, p.log())
	}
	if !strings.Contains(p.log(), `"reason":"idle"`) {
		t.Fatalf("no idle line in the log:\n%s", p.log())
	}
}

func TestServeRefusesToStartWithoutAToken(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	for _, env := range [][]string{nil, {wire.TokenEnv + "=short"}} {
		cmd := sandboxd(t, "serve", "--listen", "127.0.0.1:0", "--workdir", f.work)
		cmd.Env = append(os.Environ(), env...)
		out, err := cmd.CombinedOutput()
		if cmd.ProcessState == nil || cmd.ProcessState.ExitCode() != 2 || !strings.Contains(string(out), wire.TokenEnv) {
			t.Fatalf("serve with %v: %v %s, want exit 2 naming %s", env, err, out, wire.TokenEnv)
		}
	}
}

// A writable root the commands' user cannot write to is named in the log
// when serve starts: bash and apply_patch would fail there.
func TestServeWarnsOfAnUnwritableRoot(t *testing.T) {
	t.Parallel()
	if os.Geteuid() != 0 {
		t.Skip("needs root: only a root sandboxd acts as another user")
	}
	f := newFixture(t)
	agent := filepath.Join(f.base, "agent") // root's, 0755
	if err := os.Mkdir(agent, 0o755); err != nil {
		t.Fatal(err)
	}
	p := startServe(t, []string{wire.TokenEnv + "=" + testToken}, "--workdir", f.work, "--agent", agent, "--idle-timeout", "0")
	if log := p.log(); !strings.Contains(log, "not writable by the commands' user") || !strings.Contains(log, agent) || strings.Contains(log, `"dir":"`+f.work+`"`) {
		t.Fatalf("serve's log does not name %s alone as unwritable:\n%s", agent, log)
	}
}

// A certificate or key that cannot be loaded stops serve before it
// listens, saying which.
func TestServeRefusesABadCertificate(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	missing := filepath.Join(f.base, "missing.pem")
	cmd := sandboxd(t, "serve", "--listen", "127.0.0.1:0", "--workdir", f.work, "--tls-cert", missing, "--tls-key", missing)
	cmd.Env = append(os.Environ(), wire.TokenEnv+"="+testToken)
	out, err := cmd.CombinedOutput()
	if cmd.ProcessState == nil || cmd.ProcessState.ExitCode() != 2 || !strings.Contains(string(out), "TLS certificate") || !strings.Contains(string(out), missing) {
		t.Fatalf("serve with a missing certificate: %v %s, want exit 2 naming the file", err, out)
	}
}

// TestServeTLSFromTokenEndToEnd: sandboxd serve --tls-from-token, a
// process of its own, serves the certificate pin.Certificate makes of its
// token in this process, byte for byte; the runner's pinned client reads
// and runs bash through it; sandboxd health --tls finds it up; and a
// client pinned to another token is refused before any tool runs.
func TestServeTLSFromTokenEndToEnd(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	if err := os.WriteFile(filepath.Join(f.work, "a.txt"), []byte("one\ntwo\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	p := startServe(t, []string{wire.TokenEnv + "=" + testToken}, "--tls-from-token", "--workdir", f.work, "--idle-timeout", "0")
	if !strings.Contains(p.log(), `"tls":true,"tls_from_token":true`) {
		t.Errorf("the listening line does not say TLS from the token:\n%s", p.log())
	}

	want, err := pin.Certificate(testToken)
	if err != nil {
		t.Fatal(err)
	}
	conn, err := tls.Dial("tcp", p.addr, &tls.Config{InsecureSkipVerify: true}) //nolint:gosec // only to look at the certificate
	if err != nil {
		t.Fatal(err)
	}
	cs := conn.ConnectionState()
	conn.Close()
	if cs.Version != tls.VersionTLS13 || len(cs.PeerCertificates) != 1 || !bytes.Equal(cs.PeerCertificates[0].Raw, want.Certificate[0]) {
		t.Errorf("sandboxd serves %s with %d certificates, not TLS 1.3 with pin.Certificate of its token alone", tls.VersionName(cs.Version), len(cs.PeerCertificates))
	}

	ctx := context.Background()
	c, err := sandboxclient.Pinned(sandboxclient.Config{URL: "https://" + p.addr, Token: testToken, CallTimeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Health(ctx); err != nil {
		t.Fatalf("Health = %v", err)
	}
	for _, tt := range []struct{ name, args, want string }{
		{"read", `{"path":"a.txt"}`, "1\tone\n2\ttwo"},
		{"bash", `{"command":"echo state > s.txt && cat s.txt"}`, "state\n[exit code 0]"},
		{"read", `{"path":"s.txt"}`, "1\tstate"},
	} {
		res, err := c.Call(ctx, tt.name, json.RawMessage(tt.args), "")
		if err != nil || res.IsError || res.Output != tt.want {
			t.Errorf("%s %s = %+v, %v; want %q", tt.name, tt.args, res, err, tt.want)
		}
	}
	// sandboxd's log reaches us through a pipe: wait for the three lines.
	calls := 0
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if calls = strings.Count(p.log(), `"msg":"tool"`); calls >= 3 || time.Now().After(deadline) {
			break
		}
	}

	other, err := sandboxclient.Pinned(sandboxclient.Config{URL: "https://" + p.addr, Token: "other-token-0123456789abcdef"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := other.Call(ctx, "bash", json.RawMessage(`{"command":"echo reached"}`), ""); !errors.Is(err, pin.ErrWrongKey) {
		t.Errorf("a client of another token: %v, want pin.ErrWrongKey", err)
	}
	if out, err := sandboxd(t, "health", "--tls", "--addr", p.addr).CombinedOutput(); err != nil {
		t.Errorf("sandboxd health --tls: %v %s", err, out)
	}
	if err := sandboxd(t, "health", "--addr", p.addr).Run(); err == nil {
		t.Error("sandboxd health without --tls passes against a TLS sandboxd")
	}
	// A last read of the right client: the log is in order, so once its
	// line is there, a call that got through before it is logged too.
	if _, err := c.Call(ctx, "read", json.RawMessage(`{"path":"a.txt"}`), ""); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(30 * time.Second); strings.Count(p.log(), `"tool":"read"`) < 3; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the last read not logged after 30 s:\n%s", p.log())
		}
	}
	if got := strings.Count(p.log(), `"msg":"tool"`); got != calls+1 || calls != 3 {
		t.Errorf("sandboxd logged %d tool calls, then %d with one more; want 3 and no more:\n%s", calls, got, p.log())
	}
}

// TestServeTLSRules: --tls-from-token goes alone; without TLS, serve
// listens on loopback only unless --plain-http says the network is
// trusted. A missing workdir shows where a serve got past these rules
// without listening on every address of this machine.
func TestServeTLSRules(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	missing := filepath.Join(f.base, "missing")
	serve := func(args ...string) (int, string) {
		cmd := sandboxd(t, append([]string{"serve"}, args...)...)
		cmd.Env = append(os.Environ(), wire.TokenEnv+"="+testToken)
		out, _ := cmd.CombinedOutput()
		return cmd.ProcessState.ExitCode(), string(out)
	}
	const plainRefused = "is not a loopback address, and plain HTTP would send the token across the network in clear text"
	for _, tt := range []struct {
		name string
		args []string
		want string
	}{
		{"from the token and from files", []string{"--listen", "127.0.0.1:0", "--workdir", f.work, "--tls-from-token", "--tls-cert", "c.pem", "--tls-key", "k.pem"},
			"--tls-from-token and --tls-cert/--tls-key are two ways to serve TLS: give one"},
		{"plain HTTP with TLS", []string{"--listen", "127.0.0.1:0", "--workdir", f.work, "--tls-from-token", "--plain-http"},
			"--plain-http allows serving without TLS"},
		{"plain on every address", []string{"--listen", ":0", "--workdir", f.work}, plainRefused},
		{"plain on 0.0.0.0", []string{"--listen", "0.0.0.0:0", "--workdir", f.work}, plainRefused},
		{"plain on [::]", []string{"--listen", "[::]:0", "--workdir", f.work}, plainRefused},
		{"plain on a name", []string{"--listen", "sandbox.internal:0", "--workdir", f.work}, plainRefused},
		{"the image's CMD without TLS", append(slices.DeleteFunc(slices.Clone(sandboximage.ServeArgs()[1:]),
			func(a string) bool { return a == "--tls-from-token" }), "--workdir", missing), plainRefused},
		// Past the rules (the workdir is what fails):
		{"plain on every address, trusted", []string{"--listen", ":0", "--plain-http", "--workdir", missing}, "roots: workdir"},
		{"TLS from the token on every address", []string{"--listen", ":0", "--tls-from-token", "--workdir", missing}, "roots: workdir"},
		{"plain on loopback", []string{"--listen", "127.0.0.1:0", "--workdir", missing}, "roots: workdir"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if status, out := serve(tt.args...); status != server.ExitUsage || !strings.Contains(out, tt.want) {
				t.Fatalf("serve %q: exit %d, %q; want exit 2 saying %q", tt.args, status, out, tt.want)
			}
		})
	}
	// The image's CMD gets past them too: it fails later, on what this
	// machine lacks (root, or /agent), never on TLS.
	status, out := serve(append(slices.Clone(sandboximage.ServeArgs()[1:]), "--workdir", missing)...)
	if status != server.ExitUsage || strings.Contains(out, plainRefused) || strings.Contains(out, "--tls") || strings.Contains(out, "loopback") {
		t.Errorf("the image's CMD: exit %d, %q; want exit 2 for another reason than TLS", status, out)
	}
	// A token sandboxd refuses gives no key either.
	cmd := sandboxd(t, "serve", "--listen", "127.0.0.1:0", "--workdir", f.work, "--tls-from-token")
	cmd.Env = append(os.Environ(), wire.TokenEnv+"=short")
	if out, _ := cmd.CombinedOutput(); cmd.ProcessState.ExitCode() != server.ExitUsage || !strings.Contains(string(out), wire.TokenEnv) {
		t.Errorf("--tls-from-token with a short token: exit %d, %q; want 2 naming %s", cmd.ProcessState.ExitCode(), out, wire.TokenEnv)
	}
}

func TestHealthFailsWithoutAServer(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	cmd := sandboxd(t, "health", "--addr", addr)
	if err := cmd.Run(); cmd.ProcessState.ExitCode() != 1 {
		t.Fatalf("health against a closed port: %v, want exit 1", err)
	}
}

// TestCallEnv: --env passes variables of sandboxd's environment to its
// commands; PATH replaces their system PATH, so that the person's own
// tools are found.
func TestCallEnv(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	bin := filepath.Join(f.data, "bin")
	if err := os.Mkdir(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(bin, "mytool"), []byte("#!/bin/sh\necho mytool ran\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	path := bin + ":/usr/bin:/bin"
	env := []string{"PATH=" + path, "FLEET_GREETING=hello there", "HOME=/home/someone"}
	show := `{"command":"echo \"greeting=$FLEET_GREETING home=$HOME path=$PATH\"; mytool"}`
	for _, tt := range []struct {
		name      string
		flags     []string
		want, ran string
	}{
		{"named", []string{"--env", "PATH", "--env", "FLEET_GREETING"},
			"greeting=hello there home=/tmp path=" + path + "\n", "mytool ran\n[exit code 0]"},
		{"home named too", []string{"--env", "PATH", "--env", "HOME", "--env", "NOT_SET_ANYWHERE"},
			"greeting= home=/home/someone path=" + path + "\n", "mytool ran\n[exit code 0]"},
		{"none named", nil,
			"greeting= home=/tmp path=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin\n", "not found\n[exit code 127]"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			args := append(append([]string{"--data", f.data}, tt.flags...), "bash", show)
			out, stderr, _ := runCallEnv(t, f.work, env, args...)
			if !strings.HasPrefix(out, tt.want) || !strings.HasSuffix(out, tt.ran) {
				t.Fatalf("sandboxd call %q:\n%s\nstderr %q\nwant\n%s…%s", args, out, stderr, tt.want, tt.ran)
			}
		})
	}
}

// TestEnvRefusesSecrets: a name that could carry a secret, or change how
// commands start, stops call and serve before anything runs, saying why.
func TestEnvRefusesSecrets(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	env := []string{"GITHUB_TOKEN=gh-secret", "AWS_REGION=eu-west-1"}
	for _, tt := range []struct{ name, want string }{
		{"GITHUB_TOKEN", "holds a secret (it contains TOKEN)"},
		{"github_token", "holds a secret (it contains TOKEN)"},
		{"AWS_REGION", "AWS variables"},
		{"aws_secret_access_key", "AWS variables"},
		{"ECS_CONTAINER_METADATA_URI_V4", "ECS variables"},
		{wire.TokenEnv, "sandboxd's own variables"},
		{"OPENAI_API_KEY", "contains KEY"},
		{"KEYRING_DIR", "contains KEY"},
		{"CLIENT_SECRET", "contains SECRET"},
		{"DB_PASSWORD", "contains PASSWORD"},
		{"GOOGLE_APPLICATION_CREDENTIALS", "contains CREDENTIAL"},
		{"LD_PRELOAD", "dynamic loader"},
		{"AGENTSFLEET_CONFINE_POLICY", "agentsfleet's own variables"},
		{"PATH,HOME", "not a variable name"},
		{"1PATH", "not a variable name"},
		{"", "not a variable name"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			out, stderr, status := runCallEnv(t, f.work, env, "--env", "PATH", "--env", tt.name, "bash", `{"command":"env"}`)
			if status != server.ExitUsage || out != "" || !strings.Contains(stderr, "--env "+tt.name+": ") || !strings.Contains(stderr, tt.want) {
				t.Fatalf("--env %q: exit %d, stdout %q, stderr %q; want exit 2, nothing run, and %q", tt.name, status, out, stderr, tt.want)
			}
			if strings.Contains(stderr, "gh-secret") {
				t.Fatalf("the refusal shows the value: %q", stderr)
			}
		})
	}
	cmd := sandboxd(t, "serve", "--listen", "127.0.0.1:0", "--workdir", f.work, "--env", "GITHUB_TOKEN")
	cmd.Env = append(os.Environ(), append(env, wire.TokenEnv+"="+testToken)...)
	out, _ := cmd.CombinedOutput()
	if cmd.ProcessState == nil || cmd.ProcessState.ExitCode() != server.ExitUsage || !strings.Contains(string(out), "--env GITHUB_TOKEN: ") {
		t.Fatalf("serve --env GITHUB_TOKEN: %s, want exit 2 saying why", out)
	}
}

// TestLocalRules: --user 0 needs --local (and root, and Landlock), and
// --local serves on loopback only, so that the image's CMD can never be
// local.
func TestLocalRules(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	serve := func(args ...string) (int, string) {
		cmd := sandboxd(t, append([]string{"serve"}, args...)...)
		cmd.Env = append(os.Environ(), wire.TokenEnv+"="+testToken)
		out, _ := cmd.CombinedOutput()
		return cmd.ProcessState.ExitCode(), string(out)
	}
	for _, tt := range []struct {
		name string
		args []string
		want string
	}{
		{"user 0 without --local", []string{"--listen", "127.0.0.1:0", "--workdir", f.work, "--user", "0"}, "commands never run as root (id 0), except"},
		{"user 0:0 without --local", []string{"--listen", "127.0.0.1:0", "--workdir", f.work, "--user", "0:0"}, "commands never run as root (id 0), except"},
		{"root with another group", []string{"--local", "--listen", "127.0.0.1:0", "--workdir", f.work, "--user", "0:10001"}, "uid 0 keeps root's group too"},
		{"a group of root's", []string{"--local", "--listen", "127.0.0.1:0", "--workdir", f.work, "--user", "10001:0"}, "commands never run as root (id 0)"},
		{"local on every address", []string{"--local", "--listen", ":0", "--workdir", f.work}, "--local listens on loopback only"},
		{"local on a public address", []string{"--local", "--listen", "0.0.0.0:0", "--workdir", f.work}, "--local listens on loopback only"},
		{"the image's CMD made local", append(slices.Clone(sandboximage.ServeArgs()[1:]), "--local", "--user", "0"), "--local listens on loopback only"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if status, out := serve(tt.args...); status != server.ExitUsage || !strings.Contains(out, tt.want) {
				t.Fatalf("serve %q: exit %d, %q; want exit 2 saying %q", tt.args, status, out, tt.want)
			}
		})
	}
	if os.Geteuid() != 0 {
		_, stderr, status := runCall(t, f.work, "--local", "--user", "0", "bash", `{"command":"id -u"}`)
		if status != server.ExitUsage || !strings.Contains(stderr, "needs sandboxd to run as root") {
			t.Fatalf("--local --user 0 without root: exit %d, %q; want 2 saying it needs root", status, stderr)
		}
	}
}

// localRoot makes what a person running as root has: a workdir root owns
// inside a home (0700) no other user can enter, holding mine (root's) and
// other/secret (uid 65534's, 0600).
func localRoot(t *testing.T) (work string) {
	t.Helper()
	if os.Geteuid() != 0 || confine.LandlockABI() == 0 {
		t.Skip("needs root and Landlock: --local --user 0 is a root sandboxd's mode, and needs Landlock")
	}
	home := filepath.Join(t.TempDir(), "home")
	work = filepath.Join(home, "project")
	other := filepath.Join(work, "other")
	for dir, mode := range map[string]os.FileMode{home: 0o700, work: 0o755, other: 0o755} {
		if err := os.MkdirAll(dir, mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(dir, mode); err != nil {
			t.Fatal(err)
		}
	}
	for name, mode := range map[string]os.FileMode{filepath.Join(work, "mine"): 0o644, filepath.Join(other, "secret"): 0o600} {
		if err := os.WriteFile(name, []byte("private\n"), mode); err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range []string{other, filepath.Join(other, "secret")} {
		if err := os.Chown(name, confine.NobodyID, confine.NobodyID); err != nil {
			t.Fatal(err)
		}
	}
	return work
}

// capabilityProbe tries from bash what only a capability allows, one line
// each: "NAME: ok" or "NAME: ERROR".
const capabilityProbe = `probe() { n=$1; shift; if o=$("$@" 2>&1); then echo "$n: ok"; else echo "$n: $(echo "$o" | tail -n 1)"; fi; }
echo "uid: $(id -u) $(id -g)"
probe read-0600 cat other/secret
probe chown chown 65534:65534 mine
probe mknod mknod node c 1 3
[ -x /usr/bin/python3 ] && probe bind /usr/bin/python3 -c "import socket; socket.socket().bind(('127.0.0.1', 80))"
grep -E '^Cap(Inh|Prm|Eff|Bnd|Amb):' /proc/self/status | tr -s '\t' ' '`

// wantProbes checks capabilityProbe's output: uid 0, every probe refused,
// no capability.
func wantProbes(t *testing.T, out string) {
	t.Helper()
	for _, want := range []string{
		"uid: 0 0\n",
		"read-0600: cat: other/secret: Permission denied\n",
		"chown: chown: changing ownership of 'mine': Operation not permitted\n",
		"mknod: mknod: node: Operation not permitted\n",
		"CapInh: 0000000000000000\nCapPrm: 0000000000000000\nCapEff: 0000000000000000\nCapBnd: 0000000000000000\nCapAmb: 0000000000000000\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("a command of --local --user 0 printed\n%s\nwant a line %q", out, want)
		}
	}
	if strings.Contains(out, "bind: ") && !strings.Contains(out, "bind: PermissionError: [Errno 13] Permission denied\n") {
		t.Errorf("binding port 80: %s, want permission denied", out)
	}
}

// TestCallLocalRoot: as root, on a folder root owns inside a home no other
// user can enter, --local --user 0 works where the default user fails; its
// commands keep uid 0 and cannot use a single capability.
func TestCallLocalRoot(t *testing.T) {
	t.Parallel()
	work := localRoot(t)
	// The control: as the default user, the workdir is out of reach.
	_, stderr, status := runCall(t, work, "list", `{}`)
	if status != server.ExitUsage || !strings.Contains(stderr, fmt.Sprintf("cannot be entered by uid %d", confine.NobodyID)) {
		t.Fatalf("call as the default user in a 0700 home: exit %d, %q; want 2, cannot be entered", status, stderr)
	}
	out, stderr, status := runCall(t, work, "--local", "--user", "0", "bash", fmt.Sprintf(`{"command":%q}`, capabilityProbe))
	if status != 0 {
		t.Fatalf("call --local --user 0 bash: exit %d\n%s\n%s", status, out, stderr)
	}
	wantProbes(t, out)
	// sandboxd's own file tools meet the same permissions.
	out, _, status = runCall(t, work, "--local", "--user", "0", "read", `{"path":"other/secret"}`)
	if status != server.ExitToolErr || !strings.Contains(out, "permission denied") {
		t.Errorf("read of another user's 0600 file: exit %d, %q; want an error result, permission denied", status, out)
	}
}

// TestServeLocalRoot: sandboxd serve --local --user 0 has no capability
// itself, prints the address it listens on, and its commands and file
// tools act as root without capabilities.
func TestServeLocalRoot(t *testing.T) {
	t.Parallel()
	work := localRoot(t)
	cmd := sandboxd(t, "serve", "--local", "--user", "0", "--listen", "127.0.0.1:0", "--print-addr", "--workdir", work, "--idle-timeout", "0")
	cmd.Env = append(os.Environ(), wire.TokenEnv+"="+testToken)
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout = w
	p := runServe(t, cmd)
	w.Close()
	line, err := bufio.NewReader(r).ReadString('\n')
	r.Close()
	if err != nil || line != p.addr+"\n" {
		t.Fatalf("--print-addr printed %q (%v), want the address it listens on, %q", line, err, p.addr)
	}
	// It executed itself again to shed its capabilities; the token it
	// carried over is erased again.
	if environ, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", p.cmd.Process.Pid)); err != nil || bytes.Contains(environ, []byte(testToken)) {
		t.Errorf("sandboxd's environ after shedding its capabilities: %v, holds the token: %v", err, bytes.Contains(environ, []byte(testToken)))
	}
	held, err := confine.Capabilities(p.cmd.Process.Pid)
	if err != nil || held != "" {
		t.Errorf("sandboxd --local --user 0 holds capabilities: %q %v", held, err)
	}
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", p.cmd.Process.Pid))
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`(?m)^Uid:\s+0\s+0\s+0\s+0$`).Match(status) {
		t.Errorf("sandboxd's ids: want root's throughout:\n%s", status)
	}
	if !strings.Contains(p.log(), "children keep uid 0 without capabilities") {
		t.Errorf("the log does not say the commands keep uid 0 without capabilities:\n%s", p.log())
	}
	c := p.client()
	wantProbes(t, c.result(t, "bash", fmt.Sprintf(`{"command":%q}`, capabilityProbe)).Output)
	if res := c.result(t, "read", `{"path":"other/secret"}`); !res.IsError || !strings.Contains(res.Output, "permission denied") {
		t.Errorf("read of another user's 0600 file: %q, want permission denied", res.Output)
	}
	if res := c.result(t, "apply_patch", `{"input":"*** Begin Patch\n*** Add File: new.txt\n+new\n*** End Patch"}`); res.IsError {
		t.Fatalf("apply_patch: %q", res.Output)
	}
	if res := c.result(t, "bash", `{"command":"echo made > made.txt"}`); res.IsError {
		t.Fatalf("bash: %q", res.Output)
	}
	for _, name := range []string{"new.txt", "made.txt"} {
		if fi, err := os.Stat(filepath.Join(work, name)); err != nil {
			t.Error(err)
		} else if st := fi.Sys().(*syscall.Stat_t); st.Uid != 0 || st.Gid != 0 {
			t.Errorf("%s is owned by %d:%d, want root's", name, st.Uid, st.Gid)
		}
	}
}

// TestServeLocalStopsWithItsParent: a --local sandboxd belongs to the
// launcher that started it; when that exits, sandboxd stops.
func TestServeLocalStopsWithItsParent(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	// sh stands in for the launcher: it starts sandboxd, says its pid, and
	// lingers until it is killed.
	parent := exec.Command("/bin/sh", "-c", `"$@" & echo "pid $!"; exec sleep 60`, "sh",
		self, mainArg, "serve", "--local", "--listen", "127.0.0.1:0", "--print-addr", "--workdir", f.work, "--idle-timeout", "0")
	parent.Env = append(os.Environ(), wire.TokenEnv+"="+testToken)
	out, err := parent.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := parent.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = parent.Process.Kill(); _ = parent.Wait() })
	var pid int
	sc := bufio.NewScanner(out)
	for (pid == 0) && sc.Scan() {
		fmt.Sscanf(sc.Text(), "pid %d", &pid)
	}
	for sc.Scan() && !strings.Contains(sc.Text(), ":") { // the address: it serves
	}
	if pid == 0 {
		t.Fatal("the stand-in launcher did not say sandboxd's pid")
	}
	t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGKILL) })
	if !alive(pid) {
		t.Fatalf("sandboxd %d is not running", pid)
	}
	if err := parent.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = parent.Wait()
	for deadline := time.Now().Add(10 * time.Second); alive(pid); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			st, _ := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
			t.Fatalf("sandboxd %d still runs 10s after its parent exited\n%s", pid, st)
		}
	}
}

// alive reports whether process pid exists and is not a zombie.
func alive(pid int) bool {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	i := bytes.LastIndexByte(stat, ')')
	return i < 0 || i+2 >= len(stat) || stat[i+2] != 'Z'
}
