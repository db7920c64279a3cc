package shell_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentsfleet/agentsfleet/shared/sandbox"
	"github.com/agentsfleet/agentsfleet/shared/sandbox/shell"
)

func TestBashFormat(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	bash := shell.NewBash(f.roots, f.policy, time.Minute)
	tests := []struct {
		command string
		want    string
		isError bool
	}{
		{"echo hi", "hi\n[exit code 0]", false},
		{"printf hi", "hi\n[exit code 0]", false},
		{"true", "[exit code 0]", false},
		{"echo out; echo err >&2; echo out2", "out\nerr\nout2\n[exit code 0]", false},
		{"echo failing; exit 3", "failing\n[exit code 3]", true},
		{"pwd", f.work + "\n[exit code 0]", false},
		{"cat; echo read-nothing", "read-nothing\n[exit code 0]", false}, // stdin is /dev/null
		{"kill -9 $$", "[exit code 137]", true},
		{"echo 'a %s %d'", "a %s %d\n[exit code 0]", false},
	}
	for _, tt := range tests {
		t.Run(tt.command, func(t *testing.T) {
			t.Parallel()
			res := run(t, bash, map[string]any{"command": tt.command})
			if res.Output != tt.want || res.IsError != tt.isError {
				t.Fatalf("got %q (is_error=%v), want %q (is_error=%v)", res.Output, res.IsError, tt.want, tt.isError)
			}
		})
	}
	wantError(t, run(t, bash, map[string]any{}), `bash: argument "command" is required`)
	wantError(t, run(t, bash, map[string]any{"command": "  "}), `bash: argument "command" must not be empty`)
	wantError(t, run(t, bash, map[string]any{"command": 1}), `"command" must be a string`)
	wantError(t, run(t, bash, map[string]any{"cmd": "ls"}), `unknown argument "cmd"`)
}

func TestBashCapsOutputKeepingHeadAndTail(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	bash := shell.NewBash(f.roots, f.policy, time.Minute)
	limit := sandbox.BashOutputHead + sandbox.BashOutputTail

	res := run(t, bash, map[string]any{"command": fmt.Sprintf("head -c %d /dev/zero | tr '\\0' a", limit)})
	wantText(t, res, strings.Repeat("a", limit)+"\n[exit code 0]")

	// 100 000 bytes: a's, then b's for the last 50 000, so head and tail differ.
	res = run(t, bash, map[string]any{"command": "head -c 50000 /dev/zero | tr '\\0' a; head -c 50000 /dev/zero | tr '\\0' b"})
	want := strings.Repeat("a", sandbox.BashOutputHead) +
		"\n[... 70000 bytes of output cut from the middle ...]\n" +
		strings.Repeat("b", sandbox.BashOutputTail) + "\n[exit code 0]"
	wantText(t, res, want)

	// A cut never splits a UTF-8 character.
	res = run(t, bash, map[string]any{"command": "i=0; while [ $i -lt 20000 ]; do printf 'é'; i=$((i+1)); done"})
	head, tail, ok := strings.Cut(res.Output, "\n[... ")
	if !ok || !strings.HasPrefix(head, "éé") || strings.ContainsRune(head+tail, '\uFFFD') || strings.Count(head, "é") != sandbox.BashOutputHead/2 {
		t.Fatalf("UTF-8 output cut badly: head %d bytes, tail %.60q", len(head), tail)
	}
}

// TestBashGigabyteOfOutput: a command printing 1 GiB is capped without
// memory growing with it. Not parallel: it measures allocations.
func TestBashGigabyteOfOutput(t *testing.T) {
	f := newFixture(t)
	bash := shell.NewBash(f.roots, f.policy, 2*time.Minute)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	start := time.Now()
	res := run(t, bash, map[string]any{"command": "yes | head -c 1073741824"})
	elapsed := time.Since(start)
	runtime.ReadMemStats(&after)
	wantCut := fmt.Sprintf("\n[... %d bytes of output cut from the middle ...]\n", 1<<30-sandbox.BashOutputHead-sandbox.BashOutputTail)
	if res.IsError || !strings.Contains(res.Output, wantCut) || !strings.HasSuffix(res.Output, "y\n[exit code 0]") {
		t.Fatalf("got %.100q … (is_error=%v), want the output cut with %q", res.Output, res.IsError, wantCut)
	}
	if len(res.Output) > sandbox.BashOutputHead+sandbox.BashOutputTail+200 {
		t.Fatalf("output is %d bytes, want about %d", len(res.Output), sandbox.BashOutputHead+sandbox.BashOutputTail)
	}
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 8<<20 {
		t.Errorf("1 GiB of output allocated %d bytes, want at most 8 MiB", alloc)
	}
	t.Logf("1 GiB of output in %v", elapsed)
}

// TestBashTimeoutKillsTheWholeGroup: at the timeout, the shell, a child that
// ignores SIGTERM and a grandchild whose parent has exited are all killed.
func TestBashTimeoutKillsTheWholeGroup(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	bash := shell.NewBash(f.roots, f.policy, time.Second)
	command := `
trap '' TERM
sh -c 'sleep 300 & echo $! > grandchild.pid' # its parent exits at once
sh -c 'trap "" TERM; echo $$ > stubborn.pid; while :; do sleep 1; done' &
echo started
sleep 300`
	start := time.Now()
	res := run(t, bash, map[string]any{"command": command})
	if elapsed := time.Since(start); elapsed > 5*time.Second {
		t.Fatalf("bash with a 1s timeout took %v", elapsed)
	}
	wantError(t, res, "started\n[timed out after 1 second: the command and every process it started were killed]")
	for _, name := range []string{"grandchild.pid", "stubborn.pid"} {
		b, err := os.ReadFile(filepath.Join(f.work, name))
		if err != nil {
			t.Fatal(err)
		}
		pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
		eventuallyDead(t, pid)
	}
}

// TestBashEndsWhatItLeavesBehind: a background process holding the output
// open neither delays the result nor outlives the command.
func TestBashEndsWhatItLeavesBehind(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	bash := shell.NewBash(f.roots, f.policy, time.Minute)
	start := time.Now()
	res := run(t, bash, map[string]any{"command": "sleep 300 & echo $!"})
	if elapsed := time.Since(start); elapsed > 5*time.Second {
		t.Fatalf("bash with a background sleep took %v", elapsed)
	}
	pid, err := strconv.Atoi(strings.TrimSuffix(res.Output, "\n[exit code 0]"))
	if err != nil {
		t.Fatalf("got %q, want a pid and [exit code 0]", res.Output)
	}
	eventuallyDead(t, pid)
}

func TestBashCancelled(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	res, err := shell.NewBash(f.roots, f.policy, time.Minute).Run(ctx, []byte(`{"command":"sleep 30"}`))
	if err != nil {
		t.Fatal(err)
	}
	wantError(t, res, "[stopped before it finished (context deadline exceeded)")
}

// TestBashEnvironmentIsScrubbed: nothing of sandboxd's environment reaches
// the command. Not parallel: it sets environment variables.
func TestBashEnvironmentIsScrubbed(t *testing.T) {
	t.Setenv("SANDBOXD_TOKEN", "token-must-not-leak")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "aws-must-not-leak")
	t.Setenv("ECS_CONTAINER_METADATA_URI_V4", "ecs-must-not-leak")
	f := newFixture(t)
	res := run(t, shell.NewBash(f.roots, f.policy, time.Minute), map[string]any{"command": "env"})
	if strings.Contains(res.Output, "must-not-leak") || !strings.Contains(res.Output, "PATH=") {
		t.Fatalf("env in bash:\n%s", res.Output)
	}
}

// TestBashCannotReadSandboxd: the command cannot read sandboxd's
// environment or memory through /proc. When the tests run as root, commands
// run as nobody; otherwise only sandboxd's non-dumpable flag protects it,
// which the server's end-to-end test checks with the real binary.
func TestBashCannotReadSandboxd(t *testing.T) {
	t.Parallel()
	if os.Geteuid() != 0 {
		t.Skip("needs root: commands then run as another user; the server test covers the same-user case")
	}
	f := newFixture(t)
	bash := shell.NewBash(f.roots, f.policy, time.Minute)
	pid := itoa(os.Getpid())
	for _, cmd := range []string{
		"cat /proc/" + pid + "/environ",
		"cat /proc/$PPID/environ",
		"head -c 16 /proc/" + pid + "/mem",
		"ls /proc/" + pid + "/root/",
		"ls /proc/" + pid + "/fd/",
	} {
		res := run(t, bash, map[string]any{"command": cmd})
		if !res.IsError {
			t.Errorf("%s: got %q, want a failure", cmd, res.Output)
		}
	}
}

// TestBashCannotWriteOutside: writes outside the writable roots fail.
func TestBashCannotWriteOutside(t *testing.T) {
	t.Parallel()
	if os.Geteuid() != 0 {
		t.Skip("needs root (commands then run as nobody); as the files' owner only Landlock stops these writes, which confine's tests cover")
	}
	f := newFixture(t)
	bash := shell.NewBash(f.roots, f.policy, time.Minute)
	for _, cmd := range []string{
		"echo x > " + f.secret,
		"echo x > " + filepath.Join(f.base, "new.txt"),
		"echo x > /etc/agentsfleet-test",
		"echo x > ../escape.txt",
	} {
		if res := run(t, bash, map[string]any{"command": cmd}); !res.IsError {
			t.Errorf("%s: got %q, want a failure", cmd, res.Output)
		}
	}
	if b, _ := os.ReadFile(f.secret); string(b) != "top secret\n" {
		t.Fatalf("the secret file was changed to %q", b)
	}
	if res := run(t, bash, map[string]any{"command": "echo ok > inside.txt && cat inside.txt"}); res.IsError {
		t.Fatalf("writing inside the workdir failed: %q", res.Output)
	}
}

// TestBashCannotHardLinkAnUnreadableFile: the defence against a hard link
// escape. A file the command's user cannot read and write cannot be linked
// into the workdir (fs.protected_hardlinks), so read never sees it.
func TestBashCannotHardLinkAnUnreadableFile(t *testing.T) {
	t.Parallel()
	if os.Geteuid() != 0 {
		t.Skip("needs root to make a file the command's user cannot read")
	}
	if b, _ := os.ReadFile("/proc/sys/fs/protected_hardlinks"); strings.TrimSpace(string(b)) != "1" {
		t.Skip("fs.protected_hardlinks is off on this machine")
	}
	f := newFixture(t)
	private := filepath.Join(f.base, "private.txt")
	if err := os.WriteFile(private, []byte("private"), 0o600); err != nil {
		t.Fatal(err)
	}
	res := run(t, shell.NewBash(f.roots, f.policy, time.Minute), map[string]any{"command": "ln " + private + " hard; cat hard"})
	if !res.IsError || strings.Contains(res.Output, "private\n") {
		t.Fatalf("got %q, want ln to fail", res.Output)
	}
	if _, err := os.Lstat(filepath.Join(f.work, "hard")); err == nil {
		t.Fatal("the hard link was made")
	}
}
