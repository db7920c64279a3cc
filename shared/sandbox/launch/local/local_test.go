package local_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
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

	"github.com/agentsfleet/agentsfleet/shared/sandbox/client"
	"github.com/agentsfleet/agentsfleet/shared/sandbox/launch"
	"github.com/agentsfleet/agentsfleet/shared/sandbox/launch/local"
	"github.com/agentsfleet/agentsfleet/shared/sandbox/sandboxtest"
	"github.com/agentsfleet/agentsfleet/shared/tool"
	"github.com/agentsfleet/agentsfleet/shared/web/egress"
)

// nobody is the uid a workdir is given to, when the tests run as root, to
// be another user's.
const nobody = 65534

// sandboxdBin is the sandboxd the tests run, built once by TestMain.
var sandboxdBin string

func TestMain(m *testing.M) {
	code, err := testMain(m)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Exit(code)
}

func testMain(m *testing.M) (int, error) {
	dir, err := os.MkdirTemp("", "local-sandboxd-")
	if err != nil {
		return 0, err
	}
	defer os.RemoveAll(dir)
	// Reachable by the uid commands run as when the tests run as root.
	if err := os.Chmod(dir, 0o755); err != nil {
		return 0, err
	}
	goCmd, err := exec.LookPath("go")
	if err != nil {
		return 0, fmt.Errorf("build sandboxd: %w", err)
	}
	sandboxdBin = filepath.Join(dir, "sandboxd")
	// -buildvcs=false: the repository may be another user's (git then refuses it).
	build := exec.Command(goCmd, "build", "-buildvcs=false", "-o", sandboxdBin, "github.com/agentsfleet/agentsfleet/sandboximage/sandboxd")
	if out, err := build.CombinedOutput(); err != nil {
		return 0, fmt.Errorf("build sandboxd (it needs cgo): %v\n%s", err, out)
	}
	return m.Run(), nil
}

// fixture is a Config over a fresh workdir (another user's, nobody's,
// when the tests run as root, since root's own takes Landlock) and state
// folder, both reachable by that user.
func fixture(t *testing.T) local.Config {
	t.Helper()
	base := sandboxtest.Base(t)
	work := filepath.Join(base, "work")
	sandboxtest.Mkdir(t, work)
	if os.Geteuid() == 0 {
		if err := os.Chown(work, nobody, nobody); err != nil {
			t.Fatal(err)
		}
	}
	return local.Config{Workdir: work, StateDir: filepath.Join(base, "state"), Binary: sandboxdBin}
}

// newLauncher returns a Launcher for cfg that is closed when the test ends.
func newLauncher(t *testing.T, cfg local.Config) *local.Launcher {
	t.Helper()
	if cfg.Log == nil {
		cfg.Log = testLog{t}
	}
	l, err := local.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

// testLog sends sandboxd's log to the test's, shown when it fails.
type testLog struct{ t *testing.T }

func (w testLog) Write(b []byte) (int, error) {
	w.t.Log(strings.TrimSuffix(string(b), "\n"))
	return len(b), nil
}

func spec(run string) launch.Spec {
	return launch.Spec{RunID: run, Fleet: "triage-bot", ToolTimeout: time.Minute}
}

func acquire(t *testing.T, l *local.Launcher, s launch.Spec) *launch.Sandbox {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	sb, err := l.Acquire(ctx, s)
	if err != nil {
		t.Fatalf("Acquire %s: %v", s.RunID, err)
	}
	return sb
}

// call runs the tool and fails the test on a Go error.
func call(t *testing.T, sb *launch.Sandbox, name string, args any) tool.Result {
	t.Helper()
	raw, err := json.Marshal(args)
	if err != nil {
		t.Fatal(err)
	}
	res, err := sb.Client.Call(context.Background(), name, raw, "")
	if err != nil {
		t.Fatalf("%s %s on %s: %v", name, raw, sb.ID, err)
	}
	return res
}

func bash(t *testing.T, sb *launch.Sandbox, command string) string {
	t.Helper()
	return call(t, sb, "bash", map[string]any{"command": command}).Output
}

// gone reports, within 10 seconds, whether process pid no longer exists
// (or is a zombie nobody waits for).
func gone(pid int) bool {
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if s := state(pid); s == 0 || s == 'Z' {
			return true
		}
	}
	return false
}

// state is the state letter of process pid (R, S, T, Z…), 0 when there is
// no such process.
func state(pid int) byte {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	if i := strings.LastIndexByte(string(stat), ')'); i > 0 && i+2 < len(stat) {
		return stat[i+2]
	}
	return 0
}

func TestAcquireCallRelease(t *testing.T) {
	t.Parallel()
	cfg := fixture(t)
	sandboxtest.Write(t, filepath.Join(cfg.Workdir, "a.txt"), "hello\n")
	l := newLauncher(t, cfg)
	s := spec("run-1")
	s.ToolTimeout = 1500 * time.Millisecond // sandboxd --timeout 2
	sb := acquire(t, l, s)
	pid := l.PID("run-1")
	if pid == 0 || sb.ID != "sandboxd-"+strconv.Itoa(pid) {
		t.Fatalf("sandbox %q, PID %d: want the id to name the process", sb.ID, pid)
	}
	if got := l.Places(s); got.Workdir != cfg.Workdir || got.Agent != filepath.Join(cfg.StateDir, "agents", s.Fleet) {
		t.Errorf("Places = %+v, want the workdir %s and the fleet's folder under %s", got, cfg.Workdir, cfg.StateDir)
	}
	sandboxtest.WantText(t, call(t, sb, "read", map[string]any{"path": "a.txt"}), "1\thello")
	if out := bash(t, sb, "echo hi from $(pwd)"); out != "hi from "+cfg.Workdir+"\n[exit code 0]" {
		t.Errorf("bash: %q", out)
	}
	// The fleet's folder is /agent, kept under the state folder.
	agent := filepath.Join(cfg.StateDir, "agents", "triage-bot")
	if res := call(t, sb, "apply_patch", map[string]any{"input": "*** Begin Patch\n*** Add File: " + filepath.Join(agent, "notes.md") + "\n+remember\n*** End Patch"}); res.IsError {
		t.Fatalf("apply_patch in the fleet's folder: %q", res.Output)
	}
	if b, err := os.ReadFile(filepath.Join(agent, "notes.md")); err != nil || string(b) != "remember\n" {
		t.Errorf("the fleet's folder holds %q %v", b, err)
	}
	// The tool timeout is the fleet's, in whole seconds.
	if res := call(t, sb, "bash", map[string]any{"command": "sleep 10"}); !res.IsError || !strings.Contains(res.Output, "timed out after 2 seconds") {
		t.Errorf("bash sleep 10 with a tool timeout of 1.5s: %q, want it timed out after 2 seconds", res.Output)
	}
	// A second Acquire of the run gets the same sandbox.
	if again := acquire(t, l, s); again != sb || l.PID("run-1") != pid {
		t.Fatalf("second Acquire: %s (pid %d), want the same sandbox %s", again.ID, l.PID("run-1"), sb.ID)
	}
	// A command still running when the run is released goes with it.
	res := call(t, sb, "exec_command", map[string]any{"cmd": "echo pid $$; exec sleep 300", "yield_time_ms": 500})
	var session int
	if m := regexp.MustCompile(`pid (\d+)`).FindStringSubmatch(res.Output); m != nil {
		session, _ = strconv.Atoi(m[1])
	}
	if session == 0 {
		t.Fatalf("exec_command: %q, want its pid", res.Output)
	}
	if err := l.Release(context.Background(), "run-1"); err != nil {
		t.Fatal(err)
	}
	if !gone(pid) || !gone(session) {
		t.Fatalf("after Release: sandboxd %d gone %v, its command %d gone %v; want both gone", pid, gone(pid), session, gone(session))
	}
	if l.PID("run-1") != 0 {
		t.Errorf("PID after Release: %d, want 0", l.PID("run-1"))
	}
	if _, err := sb.Client.Call(context.Background(), "read", json.RawMessage(`{"path":"a.txt"}`), ""); !errors.Is(err, client.ErrUnavailable) {
		t.Errorf("a call after Release: %v, want ErrUnavailable", err)
	}
	if err := l.Release(context.Background(), "run-1"); err != nil {
		t.Errorf("a second Release: %v, want nil", err)
	}
	// A later Acquire starts a new one.
	if fresh := acquire(t, l, s); fresh == sb || fresh.ID == sb.ID {
		t.Errorf("Acquire after Release: %s, want a new sandbox", fresh.ID)
	}
}

// TestKilledSandboxIsReplaced: a sandbox whose process was killed fails
// the client's next call with ErrUnavailable, and the next Acquire starts a
// new one; so does one that stopped answering.
func TestKilledSandboxIsReplaced(t *testing.T) {
	t.Parallel()
	l := newLauncher(t, fixture(t))
	s := spec("run-kill")
	sb := acquire(t, l, s)
	pid := l.PID(s.RunID)
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if !gone(pid) {
		t.Fatalf("sandboxd %d survived SIGKILL", pid)
	}
	if _, err := sb.Client.Call(context.Background(), "bash", json.RawMessage(`{"command":"true"}`), ""); !errors.Is(err, client.ErrUnavailable) {
		t.Fatalf("a call to a killed sandbox: %v, want ErrUnavailable", err)
	}
	fresh := acquire(t, l, s)
	if fresh == sb || l.PID(s.RunID) == pid || l.PID(s.RunID) == 0 {
		t.Fatalf("Acquire after the kill: %s, want a new sandbox", fresh.ID)
	}
	if out := bash(t, fresh, "echo alive"); out != "alive\n[exit code 0]" {
		t.Fatalf("the new sandbox: %q", out)
	}
	// Stopped, it still lives but does not answer.
	stopped := l.PID(s.RunID)
	if err := syscall.Kill(stopped, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(30 * time.Second); state(stopped) != 'T'; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("sandboxd %d not stopped 30 s after SIGSTOP: state %q", stopped, state(stopped))
		}
	}
	again := acquire(t, l, s)
	if again == fresh || !gone(stopped) {
		t.Fatalf("Acquire of a sandbox that does not answer: %s (the old one %s gone: %v), want a new one", again.ID, fresh.ID, gone(stopped))
	}
}

// TestRootWorkdirInAClosedHome is the person who works as root (a
// container, a VM) on a folder root owns inside a home no other user can
// enter: sandboxd keeps uid 0 for its commands, without any capability.
func TestRootWorkdirInAClosedHome(t *testing.T) {
	t.Parallel()
	if os.Geteuid() != 0 {
		t.Skip("needs root: the workdir is root's")
	}
	home := filepath.Join(t.TempDir(), "root-home")
	work := filepath.Join(home, "project")
	other := filepath.Join(work, "other")
	sandboxtest.Mkdir(t, other)
	if err := os.Chmod(home, 0o700); err != nil {
		t.Fatal(err)
	}
	sandboxtest.Write(t, filepath.Join(work, "mine"), "root's\n")
	sandboxtest.Write(t, filepath.Join(other, "secret"), "nobody's\n")
	for _, name := range []string{other, filepath.Join(other, "secret")} {
		if err := os.Chown(name, nobody, nobody); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chmod(filepath.Join(other, "secret"), 0o600); err != nil {
		t.Fatal(err)
	}
	l := newLauncher(t, local.Config{Workdir: work, StateDir: filepath.Join(home, ".agentsfleet"), Binary: sandboxdBin})
	sb, err := l.Acquire(context.Background(), spec("run-root"))
	if err != nil && strings.Contains(err.Error(), "needs Landlock") {
		t.Skipf("this kernel has no Landlock: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	held, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", l.PID("run-root")))
	if err != nil {
		t.Fatal(err)
	}
	if m := regexp.MustCompile(`(?m)^Cap(Prm|Eff|Bnd|Amb|Inh):\s+0*[1-9a-f]`).Find(held); m != nil {
		t.Errorf("sandboxd holds capabilities: %q", m)
	}
	out := bash(t, sb, `id -u; grep -E '^Cap(Inh|Prm|Eff|Bnd|Amb):' /proc/self/status | tr -s '\t' ' '; echo made > made.txt
for probe in "cat other/secret" "chown 65534 mine" "mknod node c 1 3"; do $probe 2>&1 | sed 's/.*: //'; done`)
	want := "0\nCapInh: 0000000000000000\nCapPrm: 0000000000000000\nCapEff: 0000000000000000\nCapBnd: 0000000000000000\nCapAmb: 0000000000000000\n" +
		"Permission denied\nOperation not permitted\nOperation not permitted\n"
	if !strings.HasPrefix(out, want) {
		t.Errorf("bash as root without capabilities:\n%s\nwant\n%s", out, want)
	}
	if fi, err := os.Stat(filepath.Join(work, "made.txt")); err != nil {
		t.Error(err)
	} else if st := fi.Sys().(*syscall.Stat_t); st.Uid != 0 {
		t.Errorf("a file bash wrote belongs to uid %d, want root's", st.Uid)
	}
}

// TestWorkdirOfAnotherUser: run as root on a workdir another user owns,
// the commands and file tools act as that user, and what they write is
// that user's, the fleet's folder too.
func TestWorkdirOfAnotherUser(t *testing.T) {
	t.Parallel()
	if os.Geteuid() != 0 {
		t.Skip("needs root: only root runs commands as another user")
	}
	cfg := fixture(t) // the workdir is nobody's
	l := newLauncher(t, cfg)
	sb := acquire(t, l, spec("run-other"))
	if out := bash(t, sb, "id -u; id -g; echo made > made.txt"); out != fmt.Sprintf("%d\n%d\n[exit code 0]", nobody, nobody) {
		t.Errorf("bash: %q, want it to run as %d:%d", out, nobody, nobody)
	}
	if res := call(t, sb, "apply_patch", map[string]any{"input": "*** Begin Patch\n*** Add File: patched.txt\n+new\n*** End Patch"}); res.IsError {
		t.Fatalf("apply_patch: %q", res.Output)
	}
	for _, name := range []string{filepath.Join(cfg.Workdir, "made.txt"), filepath.Join(cfg.Workdir, "patched.txt"), filepath.Join(cfg.StateDir, "agents", "triage-bot")} {
		fi, err := os.Stat(name)
		if err != nil {
			t.Fatal(err)
		}
		if st := fi.Sys().(*syscall.Stat_t); st.Uid != nobody || st.Gid != nobody {
			t.Errorf("%s belongs to %d:%d, want %d:%d", name, st.Uid, st.Gid, nobody, nobody)
		}
	}
}

// TestPathAndEnv: the commands find the person's tools on PATH and get
// the variables Config.Env names, and nothing else of this process's
// environment; sandboxd itself gets no variable that may hold a secret.
func TestPathAndEnv(t *testing.T) {
	// Not parallel: it sets this process's environment.
	cfg := fixture(t)
	tools := filepath.Join(filepath.Dir(cfg.Workdir), "tools")
	sandboxtest.Write(t, filepath.Join(tools, "bin", "mytool"), "#!/bin/sh\necho mytool ran\n")
	if err := os.Chmod(filepath.Join(tools, "bin", "mytool"), 0o755); err != nil {
		t.Fatal(err)
	}
	cfg.Data = tools // readable, and so executable, to the commands
	t.Setenv("PATH", filepath.Join(tools, "bin")+":"+os.Getenv("PATH"))
	t.Setenv("FLEET_GREETING", "hello")
	t.Setenv("NOT_NAMED", "not for commands")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "aws-must-not-leak")
	t.Setenv("GITHUB_TOKEN", "gh-must-not-leak")
	cfg.Env = []string{"FLEET_GREETING"}
	l := newLauncher(t, cfg)
	sb := acquire(t, l, spec("run-env"))
	out := bash(t, sb, `mytool; echo "greeting=$FLEET_GREETING not-named=$NOT_NAMED home=$HOME"; env`)
	for _, want := range []string{"mytool ran\n", "greeting=hello not-named= home=/tmp\n", "PATH=" + os.Getenv("PATH") + "\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("bash printed\n%s\nwant %q", out, want)
		}
	}
	for _, leak := range []string{"must-not-leak", "NOT_NAMED"} {
		if strings.Contains(out, leak) {
			t.Errorf("the commands' environment has %s:\n%s", leak, out)
		}
	}
	// The person's Go, where it lies in a system directory: `go test` in a
	// Go repository needs it.
	if goCmd, err := exec.LookPath("go"); err == nil && (strings.HasPrefix(goCmd, "/usr/") || strings.HasPrefix(goCmd, "/opt/")) {
		if out := bash(t, sb, "go version"); !strings.HasPrefix(out, "go version go") {
			t.Errorf("go version: %q, want the person's go found on PATH", out)
		}
	}
	if os.Geteuid() == 0 { // only root may read a non-dumpable process's environment
		environ, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", l.PID("run-env")))
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(environ), "must-not-leak") {
			t.Errorf("sandboxd was started with a secret in its environment:\n%q", environ)
		}
	}
}

func TestEnvRefusesSecrets(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"GITHUB_TOKEN", "aws_region", "ECS_AGENT_URI", "SANDBOXD_TOKEN", "OPENAI_API_KEY", "DB_PASSWORD", "CLIENT_SECRET", "LD_PRELOAD", "PATH,HOME", ""} {
		cfg := fixture(t)
		cfg.Env = []string{name}
		if _, err := local.New(cfg); err == nil || !strings.Contains(err.Error(), fmt.Sprintf("%q", name)) {
			t.Errorf("Config.Env %q: %v, want New to refuse it by name", name, err)
		}
	}
}

// TestConcurrentAcquires: runs get their own sandboxes at once, and
// concurrent Acquires of one run get one sandbox.
func TestConcurrentAcquires(t *testing.T) {
	t.Parallel()
	l := newLauncher(t, fixture(t))
	const runs, perRun = 6, 3
	got := make([][perRun]*launch.Sandbox, runs)
	var wg sync.WaitGroup
	for i := range runs {
		for j := range perRun {
			wg.Go(func() {
				sb, err := l.Acquire(context.Background(), spec(fmt.Sprintf("run-%d", i)))
				if err != nil {
					t.Error(err)
					return
				}
				got[i][j] = sb
			})
		}
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	ids := map[string]bool{}
	var pids []int
	for i, sbs := range got {
		for _, sb := range sbs[1:] {
			if sb != sbs[0] {
				t.Errorf("run-%d: concurrent Acquires got %s and %s, want one sandbox", i, sbs[0].ID, sb.ID)
			}
		}
		ids[sbs[0].ID] = true
		pids = append(pids, l.PID(fmt.Sprintf("run-%d", i)))
		wg.Go(func() {
			if out := bash(t, sbs[0], "echo ok"); out != "ok\n[exit code 0]" {
				t.Errorf("run-%d: %q", i, out)
			}
		})
	}
	wg.Wait()
	if len(ids) != runs {
		t.Errorf("%d runs got %d sandboxes, want one each", runs, len(ids))
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	for _, pid := range pids {
		if !gone(pid) {
			t.Errorf("sandboxd %d still runs after Close", pid)
		}
	}
	if _, err := l.Acquire(context.Background(), spec("run-late")); !errors.Is(err, launch.ErrStart) {
		t.Errorf("Acquire after Close: %v, want ErrStart", err)
	}
}

// TestStartFailures: a sandbox that cannot start gives an error wrapping
// launch.ErrStart with what sandboxd said.
func TestStartFailures(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	script := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte("#!/bin/sh\n"+body+"\n"), 0o755); err != nil {
			t.Fatal(err)
		}
		return p
	}
	for _, tt := range []struct {
		name   string
		binary string
		spec   launch.Spec
		want   []string
	}{
		{"exits", script("exits", "echo 'first line' >&2; echo 'sandboxd serve: something is wrong' >&2; exit 2"), spec("r"),
			[]string{"run r", "exited before it listened (exit status 2)", "first line\nsandboxd serve: something is wrong"}},
		{"never listens", script("silent", "exec sleep 30"), spec("r"), []string{"did not listen within 300ms"}},
		{"prints nonsense", script("nonsense", "echo 10.1.2.3:80; exec sleep 30"), spec("r"), []string{`printed "10.1.2.3:80", not a loopback address`}},
		{"no run id", sandboxdBin, launch.Spec{Fleet: "f"}, []string{"no id"}},
		{"a fleet name that is a path", sandboxdBin, launch.Spec{RunID: "r", Fleet: "../../etc"}, []string{`fleet "../../etc": not a fleet name`}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			cfg := fixture(t)
			cfg.Binary, cfg.StartTimeout = tt.binary, 300*time.Millisecond
			l := newLauncher(t, cfg)
			_, err := l.Acquire(context.Background(), tt.spec)
			if !errors.Is(err, launch.ErrStart) {
				t.Fatalf("Acquire: %v, want ErrStart", err)
			}
			for _, want := range tt.want {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("Acquire: %v\nwant it to say %q", err, want)
				}
			}
			if l.PID(tt.spec.RunID) != 0 {
				t.Errorf("a failed start left process %d", l.PID(tt.spec.RunID))
			}
		})
	}
	if os.Geteuid() == 0 {
		// sandboxd's own refusal: a workdir its user cannot enter.
		closed := filepath.Join(t.TempDir(), "closed", "work")
		sandboxtest.Mkdir(t, closed)
		if err := os.Chmod(filepath.Dir(closed), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(closed, nobody, nobody); err != nil {
			t.Fatal(err)
		}
		l := newLauncher(t, local.Config{Workdir: closed, StateDir: filepath.Join(sandboxtest.Base(t), "state"), Binary: sandboxdBin})
		_, err := l.Acquire(context.Background(), spec("r"))
		if !errors.Is(err, launch.ErrStart) || !strings.Contains(err.Error(), fmt.Sprintf("cannot be entered by uid %d", nobody)) {
			t.Errorf("Acquire over a workdir its owner cannot reach: %v, want ErrStart with sandboxd's reason", err)
		}
	}
}

func TestNoSandboxd(t *testing.T) {
	// Not parallel: it sets PATH.
	cfg := fixture(t)
	cfg.Binary = ""
	t.Setenv("PATH", t.TempDir())
	_, err := local.New(cfg)
	self, _ := os.Executable()
	if !errors.Is(err, local.ErrNoSandboxd) || !strings.Contains(err.Error(), filepath.Join(filepath.Dir(self), "sandboxd")) || !strings.Contains(err.Error(), "sandboxd on PATH") {
		t.Fatalf("New without sandboxd: %v, want ErrNoSandboxd naming where it looked", err)
	}
	cfg.Binary = filepath.Join(t.TempDir(), "missing")
	if _, err := local.New(cfg); !errors.Is(err, local.ErrNoSandboxd) || !strings.Contains(err.Error(), cfg.Binary) {
		t.Fatalf("New with a missing Config.Binary: %v, want ErrNoSandboxd naming it", err)
	}
	// On PATH: found there.
	t.Setenv("PATH", filepath.Dir(sandboxdBin))
	cfg.Binary = ""
	if _, err := local.New(cfg); err != nil {
		t.Fatalf("New with sandboxd on PATH: %v", err)
	}
}

// A generic sandbox (Start, for a pool) has an empty fleet's folder of its
// own, which Connect names in Places; Stop ends its process and removes
// the folder, and Close ends those not stopped.
func TestWarmStartConnectStop(t *testing.T) {
	t.Parallel()
	cfg := fixture(t)
	l := newLauncher(t, cfg)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	w, err := l.Start(ctx, launch.Kind{Size: "small"})
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	if !strings.HasPrefix(w.ID, "local-") || len(w.Nonce) != 32 || !strings.HasPrefix(w.URL, "http://127.0.0.1:") {
		t.Errorf("Start = %+v, want a local-<pid> on loopback with a nonce", w)
	}
	sb, err := l.Connect(ctx, w)
	if err != nil {
		t.Fatalf("Connect: %v", err)
	}
	agent := sb.Places.Agent
	if sb.Places.Workdir != cfg.Workdir || filepath.Dir(filepath.Dir(agent)) != filepath.Join(cfg.StateDir, "sandboxes") {
		t.Errorf("Places = %+v, want the workdir %s and a folder of its own under %s/sandboxes", sb.Places, cfg.Workdir, cfg.StateDir)
	}
	if entries, err := os.ReadDir(agent); err != nil || len(entries) != 0 {
		t.Errorf("the warm sandbox's fleet's folder %s: %v, %v; want it empty", agent, entries, err)
	}
	if out := bash(t, sb, "echo kept > "+agent+"/note.txt && cat "+agent+"/note.txt"); !strings.Contains(out, "kept") {
		t.Errorf("writing its fleet's folder: %q", out)
	}
	if fleetDir := l.Places(spec("r")).Agent; fleetDir == agent {
		t.Errorf("the warm sandbox serves the fleet's folder %s, want one of its own", fleetDir)
	}

	// Records that do not match, or sandboxes of no one here, are refused.
	forged := w
	forged.Nonce = strings.Repeat("f", 32)
	if _, err := l.Connect(ctx, forged); err == nil {
		t.Error("Connect with another nonce worked, want a refusal")
	}
	if _, err := l.Connect(ctx, launch.Warm{ID: "local-1", URL: w.URL, Nonce: w.Nonce}); err == nil {
		t.Error("Connect to an id this launcher did not start worked, want a refusal")
	}

	pid, _ := strconv.Atoi(strings.TrimPrefix(w.ID, "local-"))
	if err := l.Stop(ctx, w); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	if !gone(pid) {
		t.Errorf("sandboxd %d still runs after Stop", pid)
	}
	if _, err := os.Stat(filepath.Dir(agent)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the warm sandbox's folder after Stop: %v, want it removed", err)
	}
	if _, err := l.Connect(ctx, w); err == nil {
		t.Error("Connect after Stop worked")
	}
	if err := l.Stop(ctx, w); err != nil {
		t.Errorf("a second Stop = %v, want nil", err)
	}

	// A run's sandbox names the fleet's folder it serves too.
	if sb := acquire(t, l, spec("r")); sb.Places != l.Places(spec("r")) {
		t.Errorf("Acquire's Places = %+v, want %+v", sb.Places, l.Places(spec("r")))
	}

	// Close ends the warm ones left, and refuses later starts.
	var pids []int
	for range 2 {
		w, err := l.Start(ctx, launch.Kind{Size: "small"})
		if err != nil {
			t.Fatalf("Start: %v", err)
		}
		p, _ := strconv.Atoi(strings.TrimPrefix(w.ID, "local-"))
		pids = append(pids, p)
	}
	if got := l.Warm(); len(got) != 2 {
		t.Errorf("Warm() = %v, want the 2 started", got)
	}
	l.Close()
	for _, p := range pids {
		if !gone(p) {
			t.Errorf("warm sandboxd %d still runs after Close", p)
		}
	}
	if entries, _ := os.ReadDir(filepath.Join(cfg.StateDir, "sandboxes")); len(entries) != 0 {
		t.Errorf("%d warm sandbox folders left after Close, want none", len(entries))
	}
	if _, err := l.Start(ctx, launch.Kind{Size: "small"}); !errors.Is(err, launch.ErrStart) {
		t.Errorf("Start after Close = %v, want ErrStart", err)
	}
}

// TestBrowserCommandLine: the sandboxes of runs that need a browser, and
// warm ones started with one, get sandboxd --browser with Config.Browser;
// the others do not. sandboxd runs behind a wrapper that notes its
// arguments; the Chromium is a stand-in, which sandboxd checks is a
// program but starts only at the first browser_open.
func TestBrowserCommandLine(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	chromium := filepath.Join(dir, "chromium")
	wrapper := filepath.Join(dir, "sandboxd")
	for name, body := range map[string]string{
		chromium: "exit 0",
		wrapper: `printf '%s\n' "$@" > ` + dir + `/args.$$
exec ` + sandboxdBin + ` "$@"`,
	} {
		if err := os.WriteFile(name, []byte("#!/bin/sh\n"+body+"\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	args := func(pid int) []string {
		t.Helper()
		b, err := os.ReadFile(filepath.Join(dir, "args."+strconv.Itoa(pid)))
		if err != nil {
			t.Fatalf("sandboxd's arguments: %v", err)
		}
		return strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
	}
	browserArgs := func(a []string) string {
		if i := slices.Index(a, "--browser"); i >= 0 && i+1 < len(a) {
			return a[i+1]
		}
		return ""
	}

	cfg := fixture(t)
	cfg.Binary, cfg.Browser = wrapper, chromium
	l := newLauncher(t, cfg)
	if !l.Browser() || !launch.CanBrowse(l) {
		t.Fatal("Browser() = false with a Config.Browser")
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	withBrowser := spec("b")
	withBrowser.Browser = true
	acquire(t, l, withBrowser)
	if got := browserArgs(args(l.PID("b"))); got != chromium {
		t.Errorf("a browser run's sandboxd --browser %q, want %q", got, chromium)
	}
	acquire(t, l, spec("p"))
	if a := args(l.PID("p")); slices.Contains(a, "--browser") {
		t.Errorf("a plain run's sandboxd got --browser: %q", a)
	}
	w, err := l.Start(ctx, launch.Kind{Size: "small", Browser: true})
	if err != nil {
		t.Fatalf("Start with a browser: %v", err)
	}
	pid, _ := strconv.Atoi(strings.TrimPrefix(w.ID, "local-"))
	if got := browserArgs(args(pid)); got != chromium || !w.Browser {
		t.Errorf("a warm browser sandbox: --browser %q, Warm %+v; want %q and Browser", got, w, chromium)
	}

	plain := fixture(t)
	none := newLauncher(t, plain)
	if none.Browser() {
		t.Error("Browser() = true without a Config.Browser")
	}
	if _, err := none.Acquire(ctx, withBrowser); !errors.Is(err, launch.ErrStart) || !errors.Is(err, launch.ErrNoBrowser) {
		t.Errorf("Acquire of a browser sandbox without Chromium = %v, want ErrStart and ErrNoBrowser", err)
	}
	if none.PID("b") != 0 {
		t.Error("a refused browser run left a sandboxd")
	}
	plain.Browser = filepath.Join(dir, "no-such-chromium")
	if _, err := local.New(plain); err == nil || !strings.Contains(err.Error(), "Config.Browser") || !strings.Contains(err.Error(), "no-such-chromium") {
		t.Errorf("New with a Browser that does not exist = %v, want an error naming it", err)
	}
}

// TestTestAllowAddrReachesSandboxdAlone: Config.TestAllowAddr is in
// sandboxd's environment, for its browser's egress policy, and never in
// its commands'.
func TestTestAllowAddrReachesSandboxdAlone(t *testing.T) {
	t.Parallel()
	cfg := fixture(t)
	cfg.TestAllowAddr = "127.0.0.1:9"
	l := newLauncher(t, cfg)
	sb := acquire(t, l, spec("allow"))
	environ, err := os.ReadFile("/proc/" + strconv.Itoa(l.PID("allow")) + "/environ")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(strings.Split(string(environ), "\x00"), egress.AllowEnv+"=127.0.0.1:9") {
		t.Errorf("sandboxd's environment lacks %s=127.0.0.1:9", egress.AllowEnv)
	}
	if out := bash(t, sb, "env"); strings.Contains(out, egress.AllowEnv) {
		t.Errorf("a command sees %s:\n%s", egress.AllowEnv, out)
	}
}
