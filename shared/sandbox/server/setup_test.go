package server_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentsfleet/agentsfleet/shared/sandbox"
	sbclient "github.com/agentsfleet/agentsfleet/shared/sandbox/client"
	"github.com/agentsfleet/agentsfleet/shared/sandbox/confine"
	"github.com/agentsfleet/agentsfleet/shared/sandbox/sandboxtest"
	"github.com/agentsfleet/agentsfleet/shared/sandbox/server"
	"github.com/agentsfleet/agentsfleet/shared/sandbox/wire"
)

// setupValue is a secret value a shell would mangle if it ever read it as
// code: quotes, a command substitution, a newline, a glob.
const setupValue = "ghp_s3t'up\"$(touch pwned)`id`\n*;x"

// setupSandbox is a sandboxd serving bash and the setup step over a
// workdir and a fleet folder.
type setupSandbox struct {
	work, agent string
	c           *sbclient.Client
}

func newSetupSandbox(t *testing.T) *setupSandbox {
	t.Helper()
	base := sandboxtest.Base(t)
	s := &setupSandbox{work: filepath.Join(base, "work"), agent: filepath.Join(base, "agent")}
	for _, d := range []string{s.work, s.agent} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := confine.PrepareRoots([]string{s.work, s.agent}, 0, 0); err != nil {
		t.Fatal(err)
	}
	roots, err := sandbox.New(sandbox.Dirs{Workdir: s.work, Agent: s.agent})
	if err != nil {
		t.Fatal(err)
	}
	cfg := server.Config{Roots: roots, Timeout: time.Minute}
	srv, err := server.New(server.Options{Token: testToken, Tools: server.Tools(cfg), Setup: server.SetupFor(cfg), Logger: quietLog()})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv)
	t.Cleanup(ts.Close)
	if s.c, err = sbclient.New(sbclient.Config{URL: ts.URL, Token: testToken}); err != nil {
		t.Fatal(err)
	}
	return s
}

func (s *setupSandbox) bash(t *testing.T, command string) string {
	t.Helper()
	args, _ := json.Marshal(map[string]string{"command": command})
	res, err := s.c.Call(context.Background(), "bash", args, "")
	if err != nil {
		t.Fatal(err)
	}
	return res.Output
}

func sum(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:])
}

// TestSetupGetsItsVariablesAndNothingAfterItDoes is the boundary: the
// setup command sees the value verbatim (its hash, never the value, is
// written down), a process it left running is gone once it ends, and a
// later bash call has neither the variable, nor its carrier, nor the value
// anywhere in any process's environment.
func TestSetupGetsItsVariablesAndNothingAfterItDoes(t *testing.T) {
	t.Parallel()
	s := newSetupSandbox(t)
	res, err := s.c.Setup(context.Background(), wire.SetupRequest{
		Command: `printf %s "$GH_TOKEN" | sha256sum | cut -d' ' -f1 > seen.txt; env | grep -c '^AGENTSFLEET_' > carriers.txt; ` +
			`sleep 300 & echo set up`,
		Env: map[string]string{"GH_TOKEN": setupValue}, TimeoutSeconds: 60})
	if err != nil {
		t.Fatal(err)
	}
	if res.ExitCode != 0 || res.TimedOut || res.Skipped || !strings.Contains(res.Output, "set up") {
		t.Fatalf("setup = %+v, want exit 0 saying set up", res)
	}
	seen, err := os.ReadFile(filepath.Join(s.work, "seen.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := strings.TrimSpace(string(seen)), sum(setupValue); got != want {
		t.Errorf("the setup saw GH_TOKEN hashing to %s, want %s (the value verbatim)", got, want)
	}
	if c, _ := os.ReadFile(filepath.Join(s.work, "carriers.txt")); strings.TrimSpace(string(c)) != "0" {
		t.Errorf("the setup command's environment holds %s AGENTSFLEET_ variables, want 0 (the carriers unset)", c)
	}
	if _, err := os.Stat(filepath.Join(s.work, "pwned")); err == nil {
		t.Error("the value was run as code")
	}
	env := s.bash(t, "env")
	if strings.Contains(env, "GH_TOKEN") || strings.Contains(env, "ghp_s3t") || strings.Contains(env, "AGENTSFLEET_SETUP") {
		t.Errorf("a later bash call's environment holds the setup's variable:\n%s", env)
	}
	// No process (the setup's sleep included) still holds the value in
	// its environment, read here with the test's own rights.
	if pids := environsHolding(t, "ghp_s3t"); len(pids) > 0 {
		t.Errorf("processes %v still hold the setup's value in their environment", pids)
	}
}

// environsHolding returns the processes whose environment holds s.
func environsHolding(t *testing.T, s string) []string {
	t.Helper()
	paths, _ := filepath.Glob("/proc/[0-9]*/environ")
	var out []string
	for _, p := range paths {
		if b, err := os.ReadFile(p); err == nil && strings.Contains(string(b), s) {
			out = append(out, filepath.Base(filepath.Dir(p)))
		}
	}
	return out
}

func TestSetupRunsOnceInASandboxdsLife(t *testing.T) {
	t.Parallel()
	s := newSetupSandbox(t)
	req := wire.SetupRequest{Command: "echo ran >> count.txt", TimeoutSeconds: 30}
	first, err := s.c.Setup(context.Background(), req)
	if err != nil || first.Already {
		t.Fatalf("first setup = %+v, %v; want a run", first, err)
	}
	again, err := s.c.Setup(context.Background(), req)
	if err != nil || !again.Already || again.ExitCode != 0 {
		t.Fatalf("the same setup again = %+v, %v; want the first's result, Already", again, err)
	}
	if b, _ := os.ReadFile(filepath.Join(s.work, "count.txt")); string(b) != "ran\n" {
		t.Errorf("count.txt = %q, want the command run once", b)
	}
	other := req
	other.Env = map[string]string{"NPM": "x"}
	if _, err := s.c.Setup(context.Background(), other); !errors.Is(err, sbclient.ErrSetupDiffers) {
		t.Errorf("another setup after it: err = %v, want ErrSetupDiffers", err)
	}
}

func TestSetupKeySkipsARecordedSetup(t *testing.T) {
	t.Parallel()
	key := sum("inputs")
	// A failed setup records nothing.
	s := newSetupSandbox(t)
	res, err := s.c.Setup(context.Background(), wire.SetupRequest{Command: "echo no; exit 3", TimeoutSeconds: 30, Key: key})
	if err != nil || res.ExitCode != 3 {
		t.Fatalf("failing setup = %+v, %v; want exit code 3", res, err)
	}
	if _, err := os.Stat(filepath.Join(s.agent, wire.SetupKeyFile)); err == nil {
		t.Fatal("a failed setup recorded its key")
	}
	// One that succeeds records it; a sandbox over the same folder skips.
	s2 := newSetupSandbox(t)
	res, err = s2.c.Setup(context.Background(), wire.SetupRequest{Command: "echo ran >> count.txt", TimeoutSeconds: 30, Key: key})
	if err != nil || res.ExitCode != 0 || res.Skipped {
		t.Fatalf("setup = %+v, %v; want it run", res, err)
	}
	rec, err := os.ReadFile(filepath.Join(s2.agent, wire.SetupKeyFile))
	if err != nil || len(strings.TrimSpace(string(rec))) != 64 || strings.Contains(string(rec), key) {
		t.Fatalf("recorded %q, %v; want a SHA-256 of the key and the build", rec, err)
	}
	s3 := newSetupSandbox(t)
	if err := os.MkdirAll(filepath.Join(s3.agent, ".agentsfleet"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(s3.agent, wire.SetupKeyFile), rec, 0o644); err != nil {
		t.Fatal(err)
	}
	res, err = s3.c.Setup(context.Background(), wire.SetupRequest{Command: "echo ran >> count.txt", TimeoutSeconds: 30, Key: key})
	if err != nil || !res.Skipped {
		t.Fatalf("setup over a folder recording its key = %+v, %v; want Skipped", res, err)
	}
	if _, err := os.Stat(filepath.Join(s3.work, "count.txt")); err == nil {
		t.Error("a skipped setup ran its command")
	}
}

// TestSetupKeyFileIsReadInsideTheFolder: a key file that is a link out of
// the fleet's folder is not followed.
func TestSetupKeyFileIsReadInsideTheFolder(t *testing.T) {
	t.Parallel()
	key := sum("linked")
	s := newSetupSandbox(t)
	// What a setup with key records, made by one that ran.
	first := newSetupSandbox(t)
	if _, err := first.c.Setup(context.Background(), wire.SetupRequest{Command: "true", TimeoutSeconds: 30, Key: key}); err != nil {
		t.Fatal(err)
	}
	rec, err := os.ReadFile(filepath.Join(first.agent, wire.SetupKeyFile))
	if err != nil {
		t.Fatal(err)
	}
	outside := filepath.Join(t.TempDir(), "key")
	if err := os.WriteFile(outside, rec, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Dir(outside), filepath.Join(s.agent, ".agentsfleet")); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(outside, filepath.Join(filepath.Dir(outside), "setup.sha256")); err != nil {
		t.Fatal(err)
	}
	res, err := s.c.Setup(context.Background(), wire.SetupRequest{Command: "true", TimeoutSeconds: 30, Key: key})
	if err != nil || res.Skipped {
		t.Fatalf("setup with the key file behind a link out of the folder = %+v, %v; want it run", res, err)
	}
}

func TestSetupTimesOut(t *testing.T) {
	t.Parallel()
	s := newSetupSandbox(t)
	res, err := s.c.Setup(context.Background(), wire.SetupRequest{Command: "echo started; sleep 300", TimeoutSeconds: 1})
	if err != nil {
		t.Fatal(err)
	}
	if !res.TimedOut || res.ExitCode != -1 || !strings.Contains(res.Output, "started") || !strings.Contains(res.Output, "timed out after 1 second") {
		t.Errorf("setup = %+v, want timed out with its output", res)
	}
}

func TestSetupRefusesBadRequests(t *testing.T) {
	t.Parallel()
	s := newSetupSandbox(t)
	for _, req := range []wire.SetupRequest{
		{Command: "", TimeoutSeconds: 5},
		{Command: "true", TimeoutSeconds: 0},
		{Command: "true", TimeoutSeconds: 5, Env: map[string]string{"X;touch pwned": "v"}},
		{Command: "true", TimeoutSeconds: 5, Env: map[string]string{"LD_PRELOAD": "/tmp/x.so"}},
		{Command: "true", TimeoutSeconds: 5, Env: map[string]string{"PATH": "/tmp"}},
		{Command: "true", TimeoutSeconds: 5, Env: map[string]string{"AWS_SECRET_ACCESS_KEY": "v"}},
		{Command: "true", TimeoutSeconds: 5, Key: "not-hex"},
	} {
		_, err := s.c.Setup(context.Background(), req)
		if !errors.Is(err, sbclient.ErrBadRequest) {
			t.Errorf("Setup(%+v): err = %v, want ErrBadRequest", req, err)
		}
		if err != nil && strings.Contains(err.Error(), "/tmp/x.so") {
			t.Errorf("the refusal repeats a value: %v", err)
		}
	}
	if _, err := os.Stat(filepath.Join(s.work, "pwned")); err == nil {
		t.Error("a variable's name was run as code")
	}
}
