package ecs

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	awsecs "github.com/aws/aws-sdk-go-v2/service/ecs"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"

	"github.com/agentsfleet/agentsfleet/shared/lazy"
	"github.com/agentsfleet/agentsfleet/shared/sandbox/token"
	"github.com/agentsfleet/agentsfleet/shared/secret"
	"github.com/agentsfleet/agentsfleet/shared/setting"
)

// The settings ConfigFromEnv reads: the first four all or none.
const (
	// EnvCluster is the ECS cluster.
	EnvCluster = "AGENTSFLEET_SANDBOX_CLUSTER"
	// EnvTaskDefinition is the sandbox image's task definition (family,
	// family:revision or ARN).
	EnvTaskDefinition = "AGENTSFLEET_SANDBOX_TASK_DEFINITION"
	// EnvBrowserTaskDefinition is the browser image's task definition
	// (Config.BrowserTaskDefinition), optional: without it the
	// deployment's sandboxes have no browser, and the runner refuses a
	// Definition that allows browser_open or screenshot, naming it.
	EnvBrowserTaskDefinition = "AGENTSFLEET_SANDBOX_BROWSER_TASK_DEFINITION"
	// EnvSubnets are the tasks' subnets, comma-separated.
	EnvSubnets = "AGENTSFLEET_SANDBOX_SUBNETS"
	// EnvSecurityGroups are their security groups, comma-separated.
	EnvSecurityGroups = "AGENTSFLEET_SANDBOX_SECURITY_GROUPS"
	// EnvPublicIP is true (the default: public IPs, the runner outside any
	// VPC) or false (the private layout, the runner in the VPC).
	EnvPublicIP = "AGENTSFLEET_SANDBOX_PUBLIC_IP"
	// EnvTokenKeyARN names the Secrets Manager secret (name or ARN) of the
	// key the tasks' tokens are derived from (Config.Key): FromEnv needs
	// it, or EnvTokenKey, with the four above. The stack creates it and
	// lets the runner alone read it.
	EnvTokenKeyARN = EnvTokenKey + "_ARN"
	// EnvTokenKey is that key itself, at least token.MinKeyLength bytes,
	// for one machine (a test of the launcher against an emulator).
	EnvTokenKey = "AGENTSFLEET_SANDBOX_TOKEN_KEY"
)

// Settings are the variables FromEnv reads. None is required: a
// deployment without them has no sandboxes.
func Settings() []setting.Var {
	return []setting.Var{{Name: EnvCluster}, {Name: EnvTaskDefinition}, {Name: EnvBrowserTaskDefinition}, {Name: EnvSubnets}, {Name: EnvSecurityGroups}, {Name: EnvPublicIP},
		{Name: EnvTokenKeyARN, Or: EnvTokenKey}, {Name: EnvTokenKey}}
}

// ConfigFromEnv reads the settings into a Config without its API clients.
// ok is false when none of the four required ones is set (no sandboxes);
// some set without the others, an EnvPublicIP that is neither true nor
// false, or an EnvBrowserTaskDefinition without them, is an error naming
// them.
func ConfigFromEnv(getenv func(string) string) (cfg Config, ok bool, err error) {
	cfg = Config{
		Cluster:               strings.TrimSpace(getenv(EnvCluster)),
		TaskDefinition:        strings.TrimSpace(getenv(EnvTaskDefinition)),
		BrowserTaskDefinition: strings.TrimSpace(getenv(EnvBrowserTaskDefinition)),
		Subnets:               list(getenv(EnvSubnets)),
		SecurityGroups:        list(getenv(EnvSecurityGroups)),
	}
	var missing []string
	for name, set := range map[string]bool{EnvCluster: cfg.Cluster != "", EnvTaskDefinition: cfg.TaskDefinition != "",
		EnvSubnets: len(cfg.Subnets) > 0, EnvSecurityGroups: len(cfg.SecurityGroups) > 0} {
		if !set {
			missing = append(missing, name)
		}
	}
	if len(missing) == 4 {
		for _, name := range []string{EnvPublicIP, EnvBrowserTaskDefinition} {
			if strings.TrimSpace(getenv(name)) != "" {
				return Config{}, false, fmt.Errorf("%s is set but not %s, %s, %s nor %s: sandboxes need all four",
					name, EnvCluster, EnvTaskDefinition, EnvSubnets, EnvSecurityGroups)
			}
		}
		return Config{}, false, nil
	}
	if len(missing) > 0 {
		slices.Sort(missing)
		return Config{}, false, fmt.Errorf("sandbox settings: %s not set: sandboxes need %s, %s, %s and %s together",
			strings.Join(missing, ", "), EnvCluster, EnvTaskDefinition, EnvSubnets, EnvSecurityGroups)
	}
	switch v := strings.TrimSpace(getenv(EnvPublicIP)); strings.ToLower(v) {
	case "", "true":
	case "false":
		cfg.Private = true
	default:
		return Config{}, false, fmt.Errorf("%s=%q: want true (public IPs, the default) or false (the private layout)", EnvPublicIP, v)
	}
	return cfg, true, nil
}

// FromEnv is the Launcher of ConfigFromEnv's settings, with its ECS
// client, its EC2 client for the public layout, and its token key, made
// from awsCfg: EnvTokenKey's value, or else the secret EnvTokenKeyARN
// names, read on the first start or connect that needs it (and read again
// after a failed read). ok is false, with no error, when the settings are
// absent: that deployment has no sandboxes. Sandboxes without either key
// setting, or with a key shorter than token.MinKeyLength, are an error. It
// makes no AWS call.
func FromEnv(getenv func(string) string, awsCfg aws.Config) (l *Launcher, ok bool, err error) {
	cfg, ok, err := ConfigFromEnv(getenv)
	if err != nil || !ok {
		return nil, false, err
	}
	if cfg.Key, err = keyFromEnv(getenv, awsCfg); err != nil {
		return nil, false, err
	}
	cfg.ECS = awsecs.NewFromConfig(awsCfg)
	if !cfg.Private {
		cfg.EC2 = ec2.NewFromConfig(awsCfg)
	}
	l, err = New(cfg)
	return l, err == nil, err
}

// list splits a comma-separated setting, dropping empty items.
func list(s string) []string {
	var out []string
	for _, item := range strings.Split(s, ",") {
		if item = strings.TrimSpace(item); item != "" {
			out = append(out, item)
		}
	}
	return out
}

// keyFromEnv is Config.Key of EnvTokenKey, or of the secret EnvTokenKeyARN
// names.
func keyFromEnv(getenv func(string) string, awsCfg aws.Config) (func(context.Context) (token.Key, error), error) {
	if v := getenv(EnvTokenKey); v != "" {
		k, err := token.NewKey(v)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", EnvTokenKey, err)
		}
		return func(context.Context) (token.Key, error) { return k, nil }, nil
	}
	arn := strings.TrimSpace(getenv(EnvTokenKeyARN))
	if arn == "" {
		return nil, fmt.Errorf("sandbox settings: neither %s nor %s is set: the tasks' tokens are derived from that key", EnvTokenKeyARN, EnvTokenKey)
	}
	v := lazy.New(func(ctx context.Context) (token.Key, error) {
		raw, err := secret.SecretsManager{Client: secretsmanager.NewFromConfig(awsCfg)}.SecretValue(ctx, arn)
		if err != nil {
			return token.Key{}, fmt.Errorf("%s: %w", EnvTokenKeyARN, err)
		}
		k, err := token.NewKey(raw)
		if err != nil {
			return token.Key{}, fmt.Errorf("%s: the secret %s: %w", EnvTokenKeyARN, arn, err)
		}
		return k, nil
	})
	return v.Get, nil
}
