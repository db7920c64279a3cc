package runnerfn

import (
	"context"
	"log/slog"
	"maps"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/agentsfleet/agentsfleet/shared/fleet"
	"github.com/agentsfleet/agentsfleet/shared/sandbox/launch"
	"github.com/agentsfleet/agentsfleet/shared/sandbox/launch/ecs"
	"github.com/agentsfleet/agentsfleet/shared/sandbox/launch/pool"
	"github.com/agentsfleet/agentsfleet/shared/store"
)

// The ECS launcher is always behind a pool, with no idle task kept when
// AGENTSFLEET_SANDBOX_WARM is unset, so that the run's task is recorded
// for its other invocations.
func TestTasksAlwaysGoThroughAPool(t *testing.T) {
	t.Parallel()
	env := map[string]string{"AGENTSFLEET_SANDBOX_CLUSTER": "c", "AGENTSFLEET_SANDBOX_TASK_DEFINITION": "td",
		"AGENTSFLEET_SANDBOX_SUBNETS": "subnet-a", "AGENTSFLEET_SANDBOX_SECURITY_GROUPS": "sg-1",
		"AGENTSFLEET_SANDBOX_TOKEN_KEY_ARN": "arn:aws:secretsmanager:us-east-1:1:secret:k-AbCdEf"}
	// No table and no ECS behind them: a pool that tried to keep a task
	// idle would fail here.
	l, warm, err := sandboxLauncher(func(k string) string { return env[k] }, aws.Config{Region: "us-east-1"}, store.New(nil, "t"), slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatalf("sandboxLauncher: %v", err)
	}
	p, ok := l.(*pool.Pool)
	if !ok {
		t.Fatalf("sandboxLauncher = %T, want a pool", l)
	}
	defer p.Close()
	if got := pool.FormatTargets(warm.plain); got != "none" || len(warm.browser) != 0 {
		t.Errorf("targets = %s, want none", got)
	}
	for _, size := range fleet.SandboxSizes() {
		if n, err := p.TopUp(context.Background(), size); n != 0 || err != nil {
			t.Errorf("TopUp(%s) = %d, %v; want 0 idle tasks kept without AGENTSFLEET_SANDBOX_WARM", size, n, err)
		}
	}
	if p.Browser() {
		t.Error("the pool gives sandboxes with a browser without AGENTSFLEET_SANDBOX_BROWSER_TASK_DEFINITION")
	}
	// Without the settings: no sandboxes, saying why.
	l, _, err = sandboxLauncher(func(string) string { return "" }, aws.Config{}, store.New(nil, "t"), slog.New(slog.DiscardHandler))
	if none, ok := l.(launch.None); err != nil || !ok || none.Why != noSandboxes {
		t.Errorf("sandboxLauncher without settings = %#v, %v; want launch.None", l, err)
	}
}

// With the browser image's task definition the pool gives sandboxes with a
// browser, kept warm by AGENTSFLEET_SANDBOX_BROWSER_WARM; that setting
// without the task definition, or a bad value of it, is an error naming it.
func TestBrowserSandboxes(t *testing.T) {
	t.Parallel()
	base := map[string]string{"AGENTSFLEET_SANDBOX_CLUSTER": "c", "AGENTSFLEET_SANDBOX_TASK_DEFINITION": "td",
		"AGENTSFLEET_SANDBOX_SUBNETS": "subnet-a", "AGENTSFLEET_SANDBOX_SECURITY_GROUPS": "sg-1",
		"AGENTSFLEET_SANDBOX_TOKEN_KEY_ARN": "arn:aws:secretsmanager:us-east-1:1:secret:k-AbCdEf"}
	with := func(kv ...string) func(string) string {
		env := maps.Clone(base)
		for i := 0; i < len(kv); i += 2 {
			env[kv[i]] = kv[i+1]
		}
		return func(k string) string { return env[k] }
	}
	open := func(getenv func(string) string) (launch.Launcher, targets, error) {
		return sandboxLauncher(getenv, aws.Config{Region: "us-east-1"}, store.New(nil, "t"), slog.New(slog.DiscardHandler))
	}
	l, warm, err := open(with(ecs.EnvBrowserTaskDefinition, "td-browser", pool.BrowserTargetsEnv, "medium=0"))
	if err != nil || !launch.CanBrowse(l) || len(warm.browser) != 0 {
		t.Fatalf("sandboxLauncher with the browser task definition = %T (browser %v), %v, %v; want a pool with browsers", l, launch.CanBrowse(l), warm, err)
	}
	l.(*pool.Pool).Close()
	for _, tt := range []struct {
		getenv func(string) string
		want   []string
	}{
		{with(pool.BrowserTargetsEnv, "small=1"), []string{pool.BrowserTargetsEnv, ecs.EnvBrowserTaskDefinition}},
		{with(ecs.EnvBrowserTaskDefinition, "td-browser", pool.BrowserTargetsEnv, "tiny=1"), []string{pool.BrowserTargetsEnv, `"tiny=1"`}},
	} {
		if _, _, err := open(tt.getenv); err == nil || !strings.Contains(err.Error(), tt.want[0]) || !strings.Contains(err.Error(), tt.want[1]) {
			t.Errorf("sandboxLauncher = %v, want an error naming %q", err, tt.want)
		}
	}
}
