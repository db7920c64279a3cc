package main

import (
	"context"
	"encoding/json"
	"log/slog"
	"maps"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/agentsfleet/agentsfleet/shared/fleet"
	"github.com/agentsfleet/agentsfleet/shared/runner"
	"github.com/agentsfleet/agentsfleet/shared/sandbox/launch/pool"
	"github.com/agentsfleet/agentsfleet/shared/store"
)

// The sample events are the payloads the runner takes: a run's and a
// child agent's.
func TestSampleEvents(t *testing.T) {
	t.Parallel()
	for name, child := range map[string]bool{"invoke.json": false, "child.json": true} {
		b, err := os.ReadFile("../../events/runner/" + name)
		if err != nil {
			t.Fatal(err)
		}
		var p runner.Payload
		dec := json.NewDecoder(strings.NewReader(string(b)))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&p); err != nil || p.RunID == "" || (p.ChildID != "") != child {
			t.Fatalf("events/runner/%s: %v, %+v", name, err, p)
		}
	}
}

func TestSettingsAreChecked(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		env  map[string]string
		want string
	}{
		{map[string]string{}, "AGENTSFLEET_TABLE is not set"},
		{map[string]string{"AGENTSFLEET_TABLE": "t"}, "AGENTSFLEET_FUNCTION_WEBTOOLS"},
		{map[string]string{"AGENTSFLEET_TABLE": "t", "AWS_LAMBDA_FUNCTION_NAME": "r", "AGENTSFLEET_FUNCTION_WEBTOOLS": "w",
			"AGENTSFLEET_MODEL_PROVIDER": "palm"}, `AGENTSFLEET_MODEL_PROVIDER="palm"`},
	} {
		_, err := newRunner(context.Background(), func(k string) string { return tc.env[k] }, slog.New(slog.DiscardHandler))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("newRunner(%v) = %v, want an error with %q", tc.env, err, tc.want)
		}
	}
}

func TestSandboxSettings(t *testing.T) {
	t.Parallel()
	all := map[string]string{
		"AGENTSFLEET_SANDBOX_CLUSTER":         "sandboxes",
		"AGENTSFLEET_SANDBOX_TASK_DEFINITION": "agentsfleet-sandbox",
		"AGENTSFLEET_SANDBOX_SUBNETS":         "subnet-a, subnet-b,",
		"AGENTSFLEET_SANDBOX_SECURITY_GROUPS": "sg-1",
	}
	with := func(k, v string) map[string]string {
		env := maps.Clone(all)
		if v == "" {
			delete(env, k)
		} else {
			env[k] = v
		}
		return env
	}
	get := func(env map[string]string) func(string) string { return func(k string) string { return env[k] } }

	cfg, ok, err := sandboxSettings(get(all))
	if err != nil || !ok || cfg.Cluster != "sandboxes" || cfg.TaskDefinition != "agentsfleet-sandbox" ||
		!slices.Equal(cfg.Subnets, []string{"subnet-a", "subnet-b"}) || !slices.Equal(cfg.SecurityGroups, []string{"sg-1"}) || cfg.Private {
		t.Errorf("sandboxSettings(%v) = %+v, %v, %v; want the public layout of those", all, cfg, ok, err)
	}
	if cfg, ok, err := sandboxSettings(get(with("AGENTSFLEET_SANDBOX_PUBLIC_IP", "false"))); err != nil || !ok || !cfg.Private {
		t.Errorf("PUBLIC_IP=false: %+v, %v, %v; want the private layout", cfg, ok, err)
	}
	if _, ok, err := sandboxSettings(get(map[string]string{})); err != nil || ok {
		t.Errorf("no settings: %v, %v; want no sandboxes and no error", ok, err)
	}
	for _, tc := range []struct {
		env  map[string]string
		want string
	}{
		{with("AGENTSFLEET_SANDBOX_CLUSTER", ""), "AGENTSFLEET_SANDBOX_CLUSTER not set"},
		{with("AGENTSFLEET_SANDBOX_TASK_DEFINITION", ""), "AGENTSFLEET_SANDBOX_TASK_DEFINITION not set"},
		{with("AGENTSFLEET_SANDBOX_SUBNETS", " , "), "AGENTSFLEET_SANDBOX_SUBNETS not set"},
		{with("AGENTSFLEET_SANDBOX_SECURITY_GROUPS", ""), "AGENTSFLEET_SANDBOX_SECURITY_GROUPS not set"},
		{with("AGENTSFLEET_SANDBOX_PUBLIC_IP", "no"), `AGENTSFLEET_SANDBOX_PUBLIC_IP="no"`},
		{map[string]string{"AGENTSFLEET_SANDBOX_PUBLIC_IP": "false"}, "sandboxes need all four"},
	} {
		if _, _, err := sandboxSettings(get(tc.env)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("sandboxSettings(%v) = %v, want an error with %q", tc.env, err, tc.want)
		}
	}
	// newRunner checks them too, before it loads anything.
	env := with("AGENTSFLEET_SANDBOX_SUBNETS", "")
	maps.Copy(env, map[string]string{"AGENTSFLEET_TABLE": "t", "AWS_LAMBDA_FUNCTION_NAME": "r", "AGENTSFLEET_FUNCTION_WEBTOOLS": "w"})
	if _, err := newRunner(context.Background(), get(env), slog.New(slog.DiscardHandler)); err == nil || !strings.Contains(err.Error(), "AGENTSFLEET_SANDBOX_SUBNETS") {
		t.Errorf("newRunner without the subnets = %v, want an error naming them", err)
	}
}

// The ECS launcher is always behind a pool, with no idle task kept when
// AGENTSFLEET_SANDBOX_WARM is unset, so that the run's task is recorded
// for its other invocations.
func TestTasksAlwaysGoThroughAPool(t *testing.T) {
	t.Parallel()
	cfg, ok, err := sandboxSettings(func(k string) string {
		return map[string]string{"AGENTSFLEET_SANDBOX_CLUSTER": "c", "AGENTSFLEET_SANDBOX_TASK_DEFINITION": "td",
			"AGENTSFLEET_SANDBOX_SUBNETS": "subnet-a", "AGENTSFLEET_SANDBOX_SECURITY_GROUPS": "sg-1"}[k]
	})
	if err != nil || !ok {
		t.Fatalf("sandboxSettings: %v, %v", ok, err)
	}
	targets, err := pool.ParseTargets("")
	if err != nil {
		t.Fatal(err)
	}
	// No table and no ECS behind them: a pool that tried to keep a task
	// idle would fail here.
	p, err := sandboxLauncher(aws.Config{Region: "us-east-1"}, cfg, store.New(nil, "t"), targets, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatalf("sandboxLauncher: %v", err)
	}
	defer p.Close()
	for _, size := range fleet.SandboxSizes() {
		if n, err := p.TopUp(context.Background(), size); n != 0 || err != nil {
			t.Errorf("TopUp(%s) = %d, %v; want 0 idle tasks kept without AGENTSFLEET_SANDBOX_WARM", size, n, err)
		}
	}
}
