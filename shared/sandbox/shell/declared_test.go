package shell_test

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentsfleet/agentsfleet/shared/sandbox"
	"github.com/agentsfleet/agentsfleet/shared/sandbox/shell"
	"github.com/agentsfleet/agentsfleet/shared/sandbox/wire"
)

// call is a declared tool's call as the runner sends it.
func call(name, command string, arguments any) map[string]any {
	return map[string]any{"name": name, "command": command, "arguments": arguments}
}

func TestDeclaredPassesTheArguments(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	declared := shell.NewDeclared(f.roots, f.policy, time.Minute)
	args := map[string]any{"path": "a b.txt", "count": 3, "flags": []any{"x", true}, "nested": map[string]any{"k": "v"}, "empty": ""}
	cmd := `printf 'stdin=%s\n' "$(cat)"; printf 'all=%s\n' "$AGENTSFLEET_ARGS"; ` +
		`printf 'path=%s count=%s flags=%s nested=%s empty=[%s]\n' "$AGENTSFLEET_ARG_PATH" "$AGENTSFLEET_ARG_COUNT" "$AGENTSFLEET_ARG_FLAGS" "$AGENTSFLEET_ARG_NESTED" "$AGENTSFLEET_ARG_EMPTY"; pwd`
	res := run(t, declared, call("probe", cmd, args))
	js := `{"count":3,"empty":"","flags":["x",true],"nested":{"k":"v"},"path":"a b.txt"}`
	want := "stdin=" + js + "\nall=" + js + "\npath=a b.txt count=3 flags=[\"x\",true] nested={\"k\":\"v\"} empty=[]\n" + f.work + "\n[exit code 0]"
	wantText(t, res, want)

	// The JSON on standard input is the arguments as sent, compacted.
	res = run(t, declared, map[string]any{"name": "probe", "command": "cat", "arguments": map[string]any{"s": "é \"q\" \n"}})
	wantText(t, res, `{"s":"é \"q\" \n"}`+"\n[exit code 0]")
	// An argument is data, never part of the command line.
	res = run(t, declared, call("probe", `echo "$AGENTSFLEET_ARG_X"`, map[string]any{"x": "$(touch pwned); `touch pwned2`"}))
	wantText(t, res, "$(touch pwned); `touch pwned2`\n[exit code 0]")
	for _, p := range []string{"pwned", "pwned2"} {
		if _, err := os.Stat(filepath.Join(f.work, p)); err == nil {
			t.Fatalf("an argument ran as a command: %s exists", p)
		}
	}
}

func TestDeclaredExitCodeAndEmptyArguments(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	declared := shell.NewDeclared(f.roots, f.policy, time.Minute)
	res := run(t, declared, call("failing", "echo nope >&2; exit 4", map[string]any{}))
	if !res.IsError || res.Output != "nope\n[exit code 4]" {
		t.Fatalf("got %q (is_error=%v), want the output and exit code 4 as an error", res.Output, res.IsError)
	}
	wantText(t, run(t, declared, call("env", `env | grep -c '^AGENTSFLEET_ARG_' ; echo "$AGENTSFLEET_ARGS"`, map[string]any{})), "0\n{}\n[exit code 0]")
}

func TestDeclaredRefusesWhatCannotBePassed(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	declared := shell.NewDeclared(f.roots, f.policy, time.Minute)
	marker := filepath.Join(f.work, "ran")
	cmd := "touch " + marker
	tests := []struct {
		name string
		args any
		want string
	}{
		{"dash", call("t", cmd, map[string]any{"a-b": 1}), `t: argument "a-b" cannot be a parameter name`},
		{"digit", call("t", cmd, map[string]any{"1a": 1}), `t: argument "1a" cannot be a parameter name`},
		{"scrubbed", call("t", cmd, map[string]any{"api_key": "x"}), `t: argument "api_key" cannot be a parameter name: the sandbox keeps variables whose name ends in _KEY`},
		{"token", call("t", cmd, map[string]any{"my_token": "x"}), `holds TOKEN`},
		{"case twins", call("t", cmd, map[string]any{"a": 1, "A": 2}), `t: arguments "A" and "a" differ only in case, so both would be the variable AGENTSFLEET_ARG_A`},
		{"NUL", call("t", cmd, map[string]any{"s": "a\x00b"}), `t: argument "s" holds a NUL character`},
		{"too large", call("t", cmd, map[string]any{"s": strings.Repeat("x", wire.MaxDeclaredArguments)}), "t: the arguments are 65544 bytes of JSON; a declared tool takes at most 65536"},
		{"not an object", call("t", cmd, []any{1}), "t: the arguments must be a JSON object"},
		{"no arguments", map[string]any{"name": "t", "command": cmd}, "t: the arguments must be a JSON object"},
		{"no command", call("t", " ", map[string]any{}), "t: the call has no command"},
		{"NUL command", call("t", "a\x00b", map[string]any{}), "t: the command must not contain a NUL character"},
		{"no name", call("", cmd, map[string]any{}), "declared: the call names no tool"},
		{"unknown field", map[string]any{"name": "t", "command": cmd, "arguments": map[string]any{}, "env": []string{"A=1"}}, `declared: the call is not {name, command, arguments}: json: unknown field "env"`},
	}
	t.Cleanup(func() { // after the parallel subtests
		if _, err := os.Stat(marker); err == nil {
			t.Error("a refused call ran its command")
		}
	})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			wantError(t, run(t, declared, tt.args), tt.want)
		})
	}
}

// The largest arguments allowed reach the command whole, in the
// environment and on standard input.
func TestDeclaredLargestArguments(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	declared := shell.NewDeclared(f.roots, f.policy, time.Minute)
	s := strings.Repeat("y", wire.MaxDeclaredArguments-len(`{"s":""}`))
	res := run(t, declared, call("big", `printf %s "$AGENTSFLEET_ARG_S" | wc -c; wc -c`, map[string]any{"s": s}))
	wantText(t, res, fmt.Sprintf("%d\n%d\n[exit code 0]", len(s), wire.MaxDeclaredArguments))
}

func TestDeclaredOutputIsCutAsBash(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	declared := shell.NewDeclared(f.roots, f.policy, time.Minute)
	bash := shell.NewBash(f.roots, f.policy, time.Minute)
	cmd := "head -c 50000 /dev/zero | tr '\\0' a; head -c 50000 /dev/zero | tr '\\0' b"
	res := run(t, declared, call("big", cmd, map[string]any{}))
	want := strings.Repeat("a", sandbox.BashOutputHead) +
		"\n[... 70000 bytes of output cut from the middle ...]\n" +
		strings.Repeat("b", sandbox.BashOutputTail) + "\n[exit code 0]"
	wantText(t, res, want)
	if b := run(t, bash, map[string]any{"command": cmd}); !reflect.DeepEqual(b, res) {
		t.Fatalf("bash gave %.80q, declared %.80q: want the same", b.Output, res.Output)
	}
}

func TestDeclaredTimeoutKillsTheGroup(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	declared := shell.NewDeclared(f.roots, f.policy, time.Second)
	res := run(t, declared, call("slow", `sh -c 'echo $$ > child.pid; sleep 300' & echo started; sleep 300`, map[string]any{}))
	wantError(t, res, "started\n[timed out after 1 second: the command and every process it started were killed]")
	b, err := os.ReadFile(filepath.Join(f.work, "child.pid"))
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	eventuallyDead(t, pid)
}

// TestDeclaredIsConfinedAsBash: the same writes bash cannot make, a
// declared command cannot either, and sandboxd's environment stays out.
func TestDeclaredIsConfinedAsBash(t *testing.T) {
	t.Setenv("AWS_SECRET_ACCESS_KEY", "aws-must-not-leak")
	t.Setenv("SANDBOXD_TOKEN", "token-must-not-leak")
	f := newFixture(t)
	declared := shell.NewDeclared(f.roots, f.policy, time.Minute)
	if res := run(t, declared, call("env", "env", map[string]any{"x": 1})); strings.Contains(res.Output, "must-not-leak") || !strings.Contains(res.Output, "PATH=") {
		t.Fatalf("env in a declared tool:\n%s", res.Output)
	}
	if os.Geteuid() != 0 {
		t.Skip("needs root (commands then run as nobody); as the files' owner only Landlock stops these writes, which confine's tests cover")
	}
	for _, target := range []string{f.secret, filepath.Join(f.base, "new.txt"), "/etc/agentsfleet-test", "../escape.txt"} {
		res := run(t, declared, call("write", `echo x > "$AGENTSFLEET_ARG_TARGET"`, map[string]any{"target": target}))
		if !res.IsError {
			t.Errorf("writing %s: got %q, want a failure", target, res.Output)
		}
	}
	if b, _ := os.ReadFile(f.secret); string(b) != "top secret\n" {
		t.Fatalf("the secret file was changed to %q", b)
	}
	if res := run(t, declared, call("write", `echo ok > "$AGENTSFLEET_ARG_TARGET" && cat inside.txt`, map[string]any{"target": "inside.txt"})); res.IsError {
		t.Fatalf("writing inside the workdir failed: %q", res.Output)
	}
}
