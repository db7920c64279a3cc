//go:build linux

package runner_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"

	"github.com/agentsfleet/agentsfleet/shared/awstest"
	"github.com/agentsfleet/agentsfleet/shared/fleet"
	"github.com/agentsfleet/agentsfleet/shared/invoke"
	afrun "github.com/agentsfleet/agentsfleet/shared/run"
	"github.com/agentsfleet/agentsfleet/shared/runner"
	"github.com/agentsfleet/agentsfleet/shared/sandbox"
	"github.com/agentsfleet/agentsfleet/shared/sandbox/launch/launchtest"
	"github.com/agentsfleet/agentsfleet/shared/sandbox/sandboxtest"
	"github.com/agentsfleet/agentsfleet/shared/sandbox/wire"
	"github.com/agentsfleet/agentsfleet/shared/secret"
	"github.com/agentsfleet/agentsfleet/shared/store"
	"github.com/agentsfleet/agentsfleet/shared/web"
)

// setupToken is the setup's secret value in these tests, kept in moto's
// Secrets Manager.
const setupToken = "ghp_SeTuP7tOkEn9vAlUe"

// envThenAnswer is the model: one bash call that prints its environment,
// then the answer.
const envThenAnswer = `[[turn]]
[[turn.tool_call]]
name = "bash"
arguments = { command = "env" }
[[turn]]
text = "done"
`

// setupEnv is a runner env whose fleets' secrets live in moto's Secrets
// Manager, read by the runner (for the setup step) and by the webtools
// function (which screens), both the real code over the wire.
type setupEnv struct {
	*env
	sm     *secretsmanager.Client
	secret string // the secret's name in Secrets Manager
}

func newSetupEnv(t *testing.T, script string, opts ...func(*runner.Config)) *setupEnv {
	t.Helper()
	sm := secretsmanager.NewFromConfig(awstest.Config(t))
	name := awstest.UniqueName(t, "setup")
	if _, err := sm.CreateSecret(ctx, &secretsmanager.CreateSecretInput{Name: aws.String(name), SecretString: aws.String(setupToken)}); err != nil {
		t.Fatal(err)
	}
	src := secret.SecretsManager{Client: sm}
	s := &setupEnv{sm: sm, secret: name}
	s.env = newEnv(t, script, append([]func(*runner.Config){func(c *runner.Config) { c.Secrets = src }}, opts...)...)
	svc, err := web.NewService(web.Config{Secrets: src})
	if err != nil {
		t.Fatal(err)
	}
	s.local.Register(invoke.Webtools, svc.Invoke)
	return s
}

// fleetWithSetup is a fleet allowing bash, declaring GH_TOKEN, whose setup
// step runs command with it.
func (s *setupEnv) fleetWithSetup(name, command string, extra string) string {
	return definition(name, "bash") + "[x-agentsfleet.secrets]\nGH_TOKEN = \"" + s.secret + "\"\n" +
		"[x-agentsfleet.setup]\ncommand = '''" + command + "'''\nsecrets = [\"GH_TOKEN\"]\n" + extra
}

// setupEvents returns the run's setup.ended data.
func (s *setupEnv) setupEvents(runID string) []afrun.SetupEnded {
	var out []afrun.SetupEnded
	for _, ev := range s.events(runID) {
		if ev.Type == afrun.EventSetupEnded {
			var se afrun.SetupEnded
			if err := json.Unmarshal(ev.Data, &se); err != nil {
				s.t.Fatal(err)
			}
			out = append(out, se)
		}
	}
	return out
}

func hexSum(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:])
}

// TestSetupSecretReachesTheSetupAlone: the setup step sees the secret (its
// hash, never the value, is written down), its output that prints the
// value is screened in setup.ended, and the agent's later bash call has
// neither the variable nor the value.
func TestSetupSecretReachesTheSetupAlone(t *testing.T) {
	t.Parallel()
	s := newSetupEnv(t, envThenAnswer)
	d := s.fleet(s.fleetWithSetup("setup-alone",
		`printf %s "$GH_TOKEN" | sha256sum | cut -c1-64 > setup.sum; echo "cloning with $GH_TOKEN"`, ""))
	id := s.start(d, "go")
	if err := s.runner.Run(ctx, id); err != nil {
		t.Fatal(err)
	}
	run, end := s.ended(id)
	if run.Status != store.StatusSucceeded || end.Answer != "done" {
		t.Fatalf("run %s, ended %+v", run.Status, end)
	}
	if got := strings.TrimSpace(s.read("setup.sum")); got != hexSum(setupToken) {
		t.Errorf("the setup saw GH_TOKEN hashing to %q, want the secret's value's %q", got, hexSum(setupToken))
	}
	evs := s.events(id)
	if got := types(evs); len(got) < 2 || got[0] != afrun.EventRunStarted || got[1] != afrun.EventSetupEnded {
		t.Errorf("events %v: want run.started, then setup.ended", got)
	}
	ses := s.setupEvents(id)
	if len(ses) != 1 {
		t.Fatalf("%d setup.ended events, want 1", len(ses))
	}
	se := ses[0]
	if se.ExitCode != 0 || se.Skipped || se.TimedOut || strings.Contains(se.Output, setupToken) ||
		!strings.Contains(se.Output, "cloning with "+secret.Ref("GH_TOKEN")) || len(se.Secrets) != 1 || se.Secrets[0] != "GH_TOKEN" {
		t.Errorf("setup.ended = %+v; want exit 0, its output screened to %s, the secret named", se, secret.Ref("GH_TOKEN"))
	}
	res := s.results(id)
	if len(res) != 1 || res[0].Name != "bash" || res[0].IsError {
		t.Fatalf("results %+v, want one bash result", res)
	}
	if strings.Contains(res[0].Output, "GH_TOKEN") || strings.Contains(res[0].Output, setupToken) || strings.Contains(res[0].Output, secret.Ref("GH_TOKEN")) {
		t.Errorf("the agent's bash call sees the setup's secret:\n%s", res[0].Output)
	}
	if !strings.Contains(res[0].Output, "PATH=") {
		t.Errorf("bash's env printed no environment at all:\n%s", res[0].Output)
	}
	// Nothing the run stored holds the value.
	for _, ev := range evs {
		if strings.Contains(string(ev.Data), setupToken) {
			t.Errorf("event %s holds the secret's value: %s", ev.Type, ev.Data)
		}
	}
}

// TestFailedSetupFailsTheRunBeforeTheModel: a setup that exits non-zero
// ends the run failed with setup_failed and its screened output's tail;
// the model is never called.
func TestFailedSetupFailsTheRunBeforeTheModel(t *testing.T) {
	t.Parallel()
	s := newSetupEnv(t, envThenAnswer)
	d := s.fleet(s.fleetWithSetup("setup-fails", `echo resolving; echo "fatal: $GH_TOKEN was refused" >&2; exit 7`, ""))
	id := s.start(d, "go")
	if err := s.runner.Run(ctx, id); err != nil {
		t.Fatal(err)
	}
	run, end := s.ended(id)
	if run.Status != store.StatusFailed || end.Error == nil || end.Error.Code != afrun.CodeSetupFailed {
		t.Fatalf("run %s, ended %+v; want failed with %s", run.Status, end, afrun.CodeSetupFailed)
	}
	if msg := end.Error.Message; !strings.Contains(msg, "code 7") || !strings.Contains(msg, "fatal: "+secret.Ref("GH_TOKEN")+" was refused") || strings.Contains(msg, setupToken) {
		t.Errorf("error message %q: want the exit code and the screened output", msg)
	}
	if s.modelHit != 0 {
		t.Errorf("the model was called %d times, want none", s.modelHit)
	}
	if ses := s.setupEvents(id); len(ses) != 1 || ses[0].ExitCode != 7 {
		t.Errorf("setup.ended = %+v, want one with exit code 7", ses)
	}
	if len(s.results(id)) != 0 {
		t.Error("a tool ran after the failed setup")
	}
}

func TestSetupTimeoutFailsTheRun(t *testing.T) {
	t.Parallel()
	s := newSetupEnv(t, envThenAnswer)
	d := s.fleet(s.fleetWithSetup("setup-slow", `echo started; sleep 300`, "timeout_seconds = 1\n"))
	id := s.start(d, "go")
	if err := s.runner.Run(ctx, id); err != nil {
		t.Fatal(err)
	}
	run, end := s.ended(id)
	if run.Status != store.StatusFailed || end.Error == nil || end.Error.Code != afrun.CodeSetupFailed || !strings.Contains(end.Error.Message, "timed out after 1 seconds") {
		t.Fatalf("run %s, ended %+v; want failed with %s, timed out", run.Status, end, afrun.CodeSetupFailed)
	}
	if ses := s.setupEvents(id); len(ses) != 1 || !ses[0].TimedOut || !strings.Contains(ses[0].Output, "started") {
		t.Errorf("setup.ended = %+v, want timed out with its output", ses)
	}
	if s.modelHit != 0 {
		t.Errorf("the model was called %d times, want none", s.modelHit)
	}
}

// TestSetupRunsOnceAcrossInvocations: the run handed over to a new
// invocation after its first steps does not set up again.
func TestSetupRunsOnceAcrossInvocations(t *testing.T) {
	t.Parallel()
	clock := &steppingClock{step: 5 * time.Minute}
	clock.t.Store(time.Now().UnixNano())
	s := newSetupEnv(t, appendThrice, func(c *runner.Config) { c.Now = clock.Now; c.Margin = time.Minute })
	d := s.fleet(s.fleetWithSetup("setup-once", `echo set >> setup.count`, ""))
	id := s.start(d, "append")
	dctx, cancel := context.WithDeadline(ctx, clock.Now().Add(12*time.Minute))
	defer cancel()
	if err := s.runner.Run(dctx, id); err != nil {
		t.Fatal(err)
	}
	if mid, _ := s.store.GetRun(ctx, id); mid.Status != store.StatusRunning {
		t.Fatalf("after the first invocation the run is %s, want running (handed over)", mid.Status)
	}
	s.local.Wait()
	run, end := s.ended(id)
	if run.Status != store.StatusSucceeded || end.Answer != "appended" {
		t.Fatalf("run %s, ended %+v", run.Status, end)
	}
	if got := s.read("setup.count"); got != "set\n" {
		t.Errorf("setup.count = %q, want the setup run once", got)
	}
	if n := len(s.setupEvents(id)); n != 1 {
		t.Errorf("%d setup.ended events, want 1", n)
	}
}

// TestSetupSkippedOnAWarmFolder: a fleet folder that outlives the sandbox
// records a setup that succeeded; the next run with the same inputs skips
// it, and a changed secret value or command runs it again.
func TestSetupSkippedOnAWarmFolder(t *testing.T) {
	t.Parallel()
	var agent string
	s := newSetupEnv(t, strings.Repeat("[[turn]]\ntext = \"done\"\n", 6), func(c *runner.Config) {
		base := sandboxtest.Base(t)
		work := filepath.Join(base, "work")
		agent = filepath.Join(base, "agent")
		for _, d := range []string{work, agent} {
			sandboxtest.Mkdir(t, d)
			if err := os.Chmod(d, 0o777); err != nil {
				t.Fatal(err)
			}
		}
		c.Sandboxes = launchtest.New(t, sandbox.Dirs{Workdir: work, Agent: agent})
	})
	runs := func() int {
		b, _ := os.ReadFile(filepath.Join(agent, "count"))
		return strings.Count(string(b), "once")
	}
	cmd := `echo once >> ` + agent + `/count`
	a := s.fleet(s.fleetWithSetup("warm-a", cmd, ""))
	b := s.fleet(s.fleetWithSetup("warm-b", cmd+` # another command`, ""))
	setUp := func(what string, d *fleet.Definition, wantSkipped bool, wantRuns int) {
		t.Helper()
		id := s.start(d, "go")
		if err := s.runner.Run(ctx, id); err != nil {
			t.Fatal(err)
		}
		if run, end := s.ended(id); run.Status != store.StatusSucceeded {
			t.Fatalf("%s: run %s, ended %+v", what, run.Status, end)
		}
		ses := s.setupEvents(id)
		if len(ses) != 1 || ses[0].Skipped != wantSkipped {
			t.Errorf("%s: setup.ended %+v, want skipped %v", what, ses, wantSkipped)
		}
		if got := runs(); got != wantRuns {
			t.Errorf("%s: the setup command has run %d times, want %d", what, got, wantRuns)
		}
	}
	setUp("first run", a, false, 1)
	if _, err := os.Stat(filepath.Join(agent, wire.SetupKeyFile)); err != nil {
		t.Fatalf("no key recorded in the fleet's folder: %v", err)
	}
	setUp("same inputs", a, true, 1)
	if _, err := s.sm.PutSecretValue(ctx, &secretsmanager.PutSecretValueInput{SecretId: aws.String(s.secret), SecretString: aws.String(setupToken + "-rotated")}); err != nil {
		t.Fatal(err)
	}
	setUp("a new secret value", a, false, 2)
	setUp("the new value again", a, true, 2)
	setUp("another command", b, false, 3)
}

// TestFailedSetupEndsTheRunInTheNextInvocation: an invocation that dies
// after it committed the failed setup.ended, before run.ended, leaves the
// run to the next, which ends it setup_failed without calling the model.
func TestFailedSetupEndsTheRunInTheNextInvocation(t *testing.T) {
	t.Parallel()
	s := newSetupEnv(t, envThenAnswer)
	d := s.fleet(s.fleetWithSetup("setup-dies", `echo broken; exit 9`, ""))
	id := s.start(d, "go")
	first, cancel := context.WithCancel(ctx)
	defer cancel()
	s.onNote = func(n runner.Note) {
		if n.Event != nil && n.Event.Type == afrun.EventSetupEnded {
			cancel()
		}
	}
	if err := s.runner.Run(first, id); err == nil {
		t.Fatal("the cut invocation returned no error")
	}
	if mid, _ := s.store.GetRun(ctx, id); mid.Status.Terminal() {
		t.Fatalf("after the cut invocation the run is %s, want it still running", mid.Status)
	}
	s.onNote = nil
	if err := s.runner.Run(ctx, id); err != nil {
		t.Fatal(err)
	}
	run, end := s.ended(id)
	if run.Status != store.StatusFailed || end.Error == nil || end.Error.Code != afrun.CodeSetupFailed || !strings.Contains(end.Error.Message, "code 9") {
		t.Fatalf("run %s, ended %+v; want failed with %s", run.Status, end, afrun.CodeSetupFailed)
	}
	if s.modelHit != 0 {
		t.Errorf("the model was called %d times, want none", s.modelHit)
	}
	if n := len(s.setupEvents(id)); n != 1 {
		t.Errorf("%d setup.ended events, want 1", n)
	}
}
