//go:build linux

package ecs_test

import (
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/agentsfleet/agentsfleet/shared/sandbox/launch/ecs"
	"github.com/agentsfleet/agentsfleet/shared/setting"
)

func TestConfigFromEnv(t *testing.T) {
	t.Parallel()
	all := map[string]string{
		ecs.EnvCluster:        "sandboxes",
		ecs.EnvTaskDefinition: "agentsfleet-sandbox",
		ecs.EnvSubnets:        "subnet-a, subnet-b,",
		ecs.EnvSecurityGroups: "sg-1",
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

	cfg, ok, err := ecs.ConfigFromEnv(get(all))
	if err != nil || !ok || cfg.Cluster != "sandboxes" || cfg.TaskDefinition != "agentsfleet-sandbox" ||
		!slices.Equal(cfg.Subnets, []string{"subnet-a", "subnet-b"}) || !slices.Equal(cfg.SecurityGroups, []string{"sg-1"}) || cfg.Private {
		t.Errorf("ConfigFromEnv(%v) = %+v, %v, %v; want the public layout of those", all, cfg, ok, err)
	}
	if cfg, ok, err := ecs.ConfigFromEnv(get(with(ecs.EnvPublicIP, "false"))); err != nil || !ok || !cfg.Private {
		t.Errorf("PUBLIC_IP=false: %+v, %v, %v; want the private layout", cfg, ok, err)
	}
	if cfg.BrowserTaskDefinition != "" {
		t.Errorf("BrowserTaskDefinition = %q without its setting, want none", cfg.BrowserTaskDefinition)
	}
	if cfg, ok, err := ecs.ConfigFromEnv(get(with(ecs.EnvBrowserTaskDefinition, " agentsfleet-sandbox-browser "))); err != nil || !ok ||
		cfg.BrowserTaskDefinition != "agentsfleet-sandbox-browser" {
		t.Errorf("BROWSER_TASK_DEFINITION set: %+v, %v, %v; want it as the browser's task definition", cfg, ok, err)
	}
	if _, ok, err := ecs.ConfigFromEnv(get(map[string]string{})); err != nil || ok {
		t.Errorf("no settings: %v, %v; want no sandboxes and no error", ok, err)
	}
	for _, tc := range []struct {
		env  map[string]string
		want string
	}{
		{with(ecs.EnvCluster, ""), "AGENTSFLEET_SANDBOX_CLUSTER not set"},
		{with(ecs.EnvTaskDefinition, ""), "AGENTSFLEET_SANDBOX_TASK_DEFINITION not set"},
		{with(ecs.EnvSubnets, " , "), "AGENTSFLEET_SANDBOX_SUBNETS not set"},
		{with(ecs.EnvSecurityGroups, ""), "AGENTSFLEET_SANDBOX_SECURITY_GROUPS not set"},
		{with(ecs.EnvPublicIP, "no"), `AGENTSFLEET_SANDBOX_PUBLIC_IP="no"`},
		{map[string]string{ecs.EnvPublicIP: "false"}, "sandboxes need all four"},
		{map[string]string{ecs.EnvBrowserTaskDefinition: "agentsfleet-sandbox-browser"}, "AGENTSFLEET_SANDBOX_BROWSER_TASK_DEFINITION is set but not"},
	} {
		if _, _, err := ecs.ConfigFromEnv(get(tc.env)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("ConfigFromEnv(%v) = %v, want an error with %q", tc.env, err, tc.want)
		}
		if _, _, err := ecs.FromEnv(get(tc.env), aws.Config{}); err == nil {
			t.Errorf("FromEnv(%v) = nil, want ConfigFromEnv's error", tc.env)
		}
	}
	// FromEnv makes the launcher, with no AWS call, or none without the
	// settings. Sandboxes need the token key too (the four settings alone
	// were enough before the key): the secret's ARN, read on first use, or
	// the key itself.
	for _, kv := range [][2]string{{ecs.EnvTokenKeyARN, "arn:aws:secretsmanager:us-east-1:1:secret:Agentsfleet/SandboxTokenKey-AbCdEf"},
		{ecs.EnvTokenKey, strings.Repeat("k", 32)}} {
		if l, ok, err := ecs.FromEnv(get(with(kv[0], kv[1])), aws.Config{Region: "us-east-1"}); err != nil || !ok || l == nil {
			t.Errorf("FromEnv with every setting and %s = %v, %v, %v", kv[0], l, ok, err)
		}
	}
	if _, _, err := ecs.FromEnv(get(all), aws.Config{}); err == nil || !strings.Contains(err.Error(), ecs.EnvTokenKeyARN) || !strings.Contains(err.Error(), ecs.EnvTokenKey) {
		t.Errorf("FromEnv without a token key = %v; want an error naming both settings", err)
	}
	short := "a-key-of-thirty-one-characters!"
	if _, _, err := ecs.FromEnv(get(with(ecs.EnvTokenKey, short)), aws.Config{}); err == nil || strings.Contains(err.Error(), short) {
		t.Errorf("FromEnv with a short key = %v; want an error without the key", err)
	}
	if l, ok, err := ecs.FromEnv(get(map[string]string{}), aws.Config{}); err != nil || ok || l != nil {
		t.Errorf("FromEnv with none = %v, %v, %v; want no launcher and no error", l, ok, err)
	}
	// Settings lists what ConfigFromEnv reads, none of it required.
	for _, v := range ecs.Settings() {
		if v.Required || !strings.HasPrefix(v.Name, "AGENTSFLEET_SANDBOX_") {
			t.Errorf("Settings has %+v", v)
		}
	}
	if got := setting.Names(ecs.Settings()); len(got) != 8 || !slices.Contains(got, ecs.EnvBrowserTaskDefinition) {
		t.Errorf("Settings = %q, want the six (the browser's task definition among them) and the token key's two", got)
	}
}
