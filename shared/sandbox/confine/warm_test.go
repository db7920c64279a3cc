//go:build linux

package confine

import (
	"bufio"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// prewarm waits until p has a warm trampoline ready, so that the next
// Start of a command of p takes the warm path.
func prewarm(t *testing.T, p *Policy) {
	t.Helper()
	cmd, err := p.Command("true")
	if err != nil {
		t.Fatal(err)
	}
	_, _, key, _, ok := warmable(cmd)
	if !ok {
		t.Fatal("a plain command is not warmable")
	}
	pl := poolFor(key)
	deadline := time.Now().Add(20 * time.Second)
	for len(pl.ready) == 0 {
		pl.fill()
		if time.Now().After(deadline) {
			t.Fatal("no warm trampoline after 20 s")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// startWarm starts cmd through a warm trampoline and fails the test if
// it went cold. Its stdout and stderr go to the returned pipe.
func startWarmed(t *testing.T, p *Policy, cmd *exec.Cmd) *os.File {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	if cmd.Stdout == nil {
		cmd.Stdout, cmd.Stderr = w, w
	}
	prewarm(t, p)
	before := warmStarts.Load()
	if err := Start(cmd); err != nil {
		t.Fatal(err)
	}
	w.Close()
	if warmStarts.Load() == before {
		t.Fatal("the command started cold")
	}
	t.Cleanup(func() { KillGroup(cmd); cmd.Wait(); r.Close() })
	return r
}

func TestWarmConfinedProcess(t *testing.T) {
	p := helperPolicy()
	p.Env = []string{"FOO=bar", "AWS_SECRET_ACCESS_KEY=leak", "MY_TOKEN=leak"}
	cmd, err := p.Command(helperPath, helperArg, "ids")
	if err != nil {
		t.Fatal(err)
	}
	cmd.Dir = helperDir
	cmd.Env = append(cmd.Env, "GITHUB_TOKEN=leak", "BAR=baz")
	out := startWarmed(t, p, cmd)
	b, _ := io.ReadAll(out)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("%v: %s", err, b)
	}
	got := string(b)
	pid := cmd.Process.Pid
	want := []string{"NoNewPrivs: 1", "Seccomp: 2", "pid=" + strconv.Itoa(pid) + " pgid=" + strconv.Itoa(pid) + " sid=" + strconv.Itoa(pid)}
	if os.Geteuid() == 0 {
		want = append(want, "uid=65534 gid=65534 groups=[]")
	}
	for _, w := range want {
		if !strings.Contains(got, w) {
			t.Errorf("output lacks %q:\n%s", w, got)
		}
	}

	// The environment: the base one, the policy's and the caller's, scrubbed.
	cmd, err = p.Command("env")
	if err != nil {
		t.Fatal(err)
	}
	cmd.Env = append(cmd.Env, "GITHUB_TOKEN=leak", "BAR=baz")
	cmd.Dir = "/tmp"
	out = startWarmed(t, p, cmd)
	b, _ = io.ReadAll(out)
	cmd.Wait()
	env := string(b)
	for _, w := range []string{"FOO=bar", "BAR=baz", "HOME=/tmp", "PATH="} {
		if !strings.Contains(env, w) {
			t.Errorf("environment lacks %s:\n%s", w, env)
		}
	}
	for _, bad := range []string{"leak", "GOMAXPROCS", policyEnv} {
		if strings.Contains(env, bad) {
			t.Errorf("environment has %s:\n%s", bad, env)
		}
	}
}

func TestWarmDirectory(t *testing.T) {
	p := &Policy{}
	cmd, _ := p.Command("pwd")
	cmd.Dir = "/tmp"
	out := startWarmed(t, p, cmd)
	b, _ := io.ReadAll(out)
	if err := cmd.Wait(); err != nil || string(b) != "/tmp\n" {
		t.Fatalf("pwd in /tmp: %v, %q", err, b)
	}

	prewarm(t, p)
	cmd, _ = p.Command("true")
	cmd.Dir = "/nonexistent-confine-test"
	if err := Start(cmd); err == nil || !strings.Contains(err.Error(), "no such file") {
		t.Fatalf("Start in a missing directory: %v", err)
	}

	if os.Geteuid() != 0 {
		return
	}
	// A directory the confined uid cannot enter: as the cold trampoline.
	dir := filepath.Join(t.TempDir(), "private")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	cmd, _ = p.Command("true")
	cmd.Dir = dir
	out = startWarmed(t, p, cmd)
	b, _ = io.ReadAll(out)
	err := cmd.Wait()
	if cmd.ProcessState.ExitCode() != ExitConfineFailure || !strings.Contains(string(b), "is not usable by uid") {
		t.Fatalf("in a 0700 directory: %v, %q", err, b)
	}
}

func TestWarmCommandNotFound(t *testing.T) {
	p := &Policy{}
	cmd, _ := p.Command("/nonexistent-confine-test/prog")
	out := startWarmed(t, p, cmd)
	b, _ := io.ReadAll(out)
	cmd.Wait()
	if cmd.ProcessState.ExitCode() != 127 {
		t.Fatalf("exit %d, %q; want 127", cmd.ProcessState.ExitCode(), b)
	}
}

func TestWarmKillGroupReachesGrandchildThatLeftTheSession(t *testing.T) {
	p, cmd, work := escapingGrandchild(t)
	cmd.Dir = work
	checkEscapedGrandchildKilled(t, cmd, bufio.NewScanner(startWarmed(t, p, cmd)), work)
}

func TestWarmControllingTerminal(t *testing.T) {
	master, slave := openPTY(t)
	p := &Policy{}
	uid, gid := p.Identity()
	if err := os.Chown(slave.Name(), uid, gid); err != nil {
		t.Fatal(err)
	}
	cmd, err := p.Command("sh", "-c", "stty size < /dev/tty; tty")
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = slave, slave, slave
	cmd.SysProcAttr.Setctty = true
	cmd.SysProcAttr.Ctty = 0
	startWarmed(t, p, cmd)
	checkTerminalOutput(t, cmd, master, slave)
}

// A command Start cannot hand a warm trampoline still starts, cold.
func TestStartFallsBackCold(t *testing.T) {
	p := &Policy{}
	prewarm(t, p)
	cmd, _ := p.Command("sh", "-c", "echo hi >&3")
	r, w, _ := os.Pipe()
	defer r.Close()
	cmd.ExtraFiles = []*os.File{w}
	before := warmStarts.Load()
	if err := Start(cmd); err != nil {
		t.Fatal(err)
	}
	w.Close()
	b, _ := io.ReadAll(r)
	if err := cmd.Wait(); err != nil || string(b) != "hi\n" {
		t.Fatalf("%v %q", err, b)
	}
	if warmStarts.Load() != before {
		t.Fatal("a command with ExtraFiles went warm")
	}
}

// A command can kill the warm trampolines (same uid): Start then starts
// the command some other way.
func TestStartSurvivesKilledWarmTrampolines(t *testing.T) {
	p := &Policy{Env: []string{"KILLED_WARM=1"}}
	prewarm(t, p)
	cmd, _ := p.Command("true")
	_, _, key, _, _ := warmable(cmd)
	pl := poolFor(key)
	var taken []*warm
	for len(pl.ready) > 0 {
		taken = append(taken, <-pl.ready)
	}
	for _, w := range taken {
		w.cmd.Process.Kill()
		pl.ready <- w
	}
	for range 3 {
		cmd, _ := p.Command("sh", "-c", "echo ok")
		r, w, _ := os.Pipe()
		cmd.Stdout = w
		if err := Start(cmd); err != nil {
			t.Fatal(err)
		}
		w.Close()
		b, _ := io.ReadAll(r)
		r.Close()
		if err := cmd.Wait(); err != nil || string(b) != "ok\n" {
			t.Fatalf("%v %q", err, b)
		}
	}
}
