package stack

import (
	"fmt"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/agentsfleet/agentsfleet/shared/cost"
	"github.com/agentsfleet/agentsfleet/shared/fleet"
	"github.com/agentsfleet/agentsfleet/shared/model/provider"
	"github.com/agentsfleet/agentsfleet/shared/sandbox/launch/pool"
)

// Network is a network layout of DESIGN §2.
type Network string

const (
	// Public runs the runner outside any VPC and the sandbox tasks in
	// public subnets with a public IP, sandboxd's TLS port their only
	// ingress: no NAT gateway and no interface endpoint, so nothing of the
	// network is billed at rest.
	Public Network = "public"
	// Private runs the runner in the VPC and the sandboxes in private
	// subnets behind a NAT gateway (billed by the hour).
	Private Network = "private"
)

// Settings are the deployment's choices. Zero values are not defaults:
// use Defaults or FromContext.
type Settings struct {
	// Root is the repository's root: the Lambda binaries are under
	// LambdaDir, the sandbox image's build context is Root.
	Root string
	// LambdaDir holds <function>/bootstrap for each function, as `make
	// lambdas` builds them (Root/build/lambda).
	LambdaDir string
	// Network is the layout (context "network").
	Network Network
	// NATGateways is the private layout's NAT gateway count (context
	// "natGateways", default 1; 2 or more for a gateway per zone).
	NATGateways int
	// DeletionProtection protects the table (context "deletionProtection",
	// default true).
	DeletionProtection bool
	// WarmPool is the runner's AGENTSFLEET_SANDBOX_WARM, idle tasks kept per
	// size such as "small=2" (context "warmPool", default none).
	WarmPool string
	// SandboxBrowser builds the browser image (the sandbox image with
	// headless Chromium, sandboximage.BrowserTarget) and its own task
	// definition, which the runner gives the runs whose Definition allows
	// browser_open or screenshot (context "sandboxBrowser", default false:
	// the image is some 400 MB larger and its tasks have a gigabyte more
	// memory, so it is built only when asked; without it such Definitions
	// are refused, naming the setting).
	SandboxBrowser bool
	// BrowserWarmPool is the runner's AGENTSFLEET_SANDBOX_BROWSER_WARM, idle
	// tasks with a browser kept per size, as WarmPool (context
	// "browserWarmPool", default none; it needs SandboxBrowser).
	BrowserWarmPool string
	// EphemeralStorageGiB is each sandbox task's disk, 21 to 200 (context
	// "ephemeralStorageGiB", default 21, Fargate's free size).
	EphemeralStorageGiB int
	// SandboxEgress is the TCP ports sandboxes may connect out to, the
	// operator's network policy (context "sandboxEgress": "443" by default,
	// "80,443", or "all" for every protocol and port).
	SandboxEgress []int
	// SandboxEgressAll opens every outbound protocol and port.
	SandboxEgressAll bool
	// LogRetentionDays is every log group's retention (context
	// "logRetentionDays", default 30; one of CloudWatch's values).
	LogRetentionDays int
	// CheckpointDays is when checkpoints in the bucket expire (context
	// "checkpointDays", default 30). The fleets' folders never do.
	CheckpointDays int
	// ModelProvider and Model are the runner's AGENTSFLEET_MODEL_PROVIDER
	// and AGENTSFLEET_MODEL (contexts "modelProvider", default bedrock, and
	// "model", default none: each Definition names its model).
	ModelProvider, Model string
	// FleetSecrets is the name pattern of the Secrets Manager secrets that
	// fleets may use, in this account and region (context "fleetSecrets",
	// default "*"; "prod/*" narrows it). Only webtools may read them.
	FleetSecrets string
	// SearchBackend, SearchURL and SearchAPIKeySecret are webtools'
	// AGENTSFLEET_SEARCH_BACKEND, _URL and _API_KEY_SECRET (contexts
	// "searchBackend", "searchUrl", "searchApiKeySecret"; default none: no
	// websearch).
	SearchBackend, SearchURL, SearchAPIKeySecret string
	// RunnerConcurrency is the runner's reserved concurrency (context
	// "runnerConcurrency", default 20; 0 reserves none, for accounts whose
	// concurrency quota is still 10).
	RunnerConcurrency int
	// SlackDefaultFleet is the fleet of Slack channels without a route
	// (context "slackDefaultFleet", default none: such a mention is told
	// how to route its channel).
	SlackDefaultFleet string
	// ModelPrices and ComputePrices are the runner's
	// AGENTSFLEET_MODEL_PRICES and AGENTSFLEET_COMPUTE_PRICES, what each
	// run's cost is reckoned at (contexts "modelPrices", such as
	// "anthropic.claude-sonnet-4-5=3/15", and "computePrices"; default
	// none: models unpriced, us-east-1's compute prices).
	ModelPrices, ComputePrices string
}

// Defaults returns the default settings for the repository at root.
func Defaults(root string) Settings {
	return Settings{
		Root:                root,
		LambdaDir:           filepath.Join(root, "build", "lambda"),
		Network:             Public,
		NATGateways:         1,
		DeletionProtection:  true,
		EphemeralStorageGiB: 21,
		SandboxEgress:       []int{443},
		LogRetentionDays:    30,
		CheckpointDays:      30,
		ModelProvider:       provider.Bedrock,
		FleetSecrets:        "*",
		RunnerConcurrency:   20,
	}
}

// The context keys FromContext reads.
const (
	CtxNetwork            = "network"
	CtxNATGateways        = "natGateways"
	CtxDeletionProtection = "deletionProtection"
	CtxWarmPool           = "warmPool"
	CtxSandboxBrowser     = "sandboxBrowser"
	CtxBrowserWarmPool    = "browserWarmPool"
	CtxEphemeralStorage   = "ephemeralStorageGiB"
	CtxSandboxEgress      = "sandboxEgress"
	CtxLogRetentionDays   = "logRetentionDays"
	CtxCheckpointDays     = "checkpointDays"
	CtxModelProvider      = "modelProvider"
	CtxModel              = "model"
	CtxFleetSecrets       = "fleetSecrets"
	CtxSearchBackend      = "searchBackend"
	CtxSearchURL          = "searchUrl"
	CtxSearchAPIKeySecret = "searchApiKeySecret"
	CtxRunnerConcurrency  = "runnerConcurrency"
	CtxLambdaDir          = "lambdaDir"
	CtxSlackDefaultFleet  = "slackDefaultFleet"
	CtxModelPrices        = "modelPrices"
	CtxComputePrices      = "computePrices"
)

// ContextKeys lists every key FromContext reads.
var ContextKeys = []string{CtxNetwork, CtxNATGateways, CtxDeletionProtection, CtxWarmPool, CtxSandboxBrowser, CtxBrowserWarmPool, CtxEphemeralStorage,
	CtxSandboxEgress, CtxLogRetentionDays, CtxCheckpointDays, CtxModelProvider, CtxModel, CtxFleetSecrets,
	CtxSearchBackend, CtxSearchURL, CtxSearchAPIKeySecret, CtxRunnerConcurrency, CtxLambdaDir, CtxSlackDefaultFleet,
	CtxModelPrices, CtxComputePrices}

// retentions are CloudWatch Logs' retention values in days.
var retentions = map[int]bool{1: true, 3: true, 5: true, 7: true, 14: true, 30: true, 60: true, 90: true,
	120: true, 150: true, 180: true, 365: true, 400: true, 545: true, 731: true, 1096: true, 1827: true,
	2192: true, 2557: true, 2922: true, 3288: true, 3653: true}

// FromContext returns Defaults(root) changed by the context values get
// returns (nil for a key that is not set; a string from `-c key=value`, or
// a JSON value from cdk.json). A value it cannot use is an error naming
// the key.
func FromContext(root string, get func(key string) any) (Settings, error) {
	s := Defaults(root)
	str := func(key string) (string, bool) {
		v := get(key)
		if v == nil {
			return "", false
		}
		return strings.TrimSpace(fmt.Sprint(v)), true
	}
	num := func(key string, dst *int, lo, hi int) error {
		v, ok := str(key)
		if !ok {
			return nil
		}
		n, err := strconv.Atoi(v)
		if err != nil || n < lo || n > hi {
			return fmt.Errorf("context %s=%q: want a whole number from %d to %d", key, v, lo, hi)
		}
		*dst = n
		return nil
	}
	if v, ok := str(CtxNetwork); ok {
		switch Network(v) {
		case Public, Private:
			s.Network = Network(v)
		default:
			return Settings{}, fmt.Errorf("context %s=%q: want %s (the default) or %s", CtxNetwork, v, Public, Private)
		}
	}
	for key, dst := range map[string]*bool{CtxDeletionProtection: &s.DeletionProtection, CtxSandboxBrowser: &s.SandboxBrowser} {
		if v, ok := str(key); ok {
			b, err := strconv.ParseBool(v)
			if err != nil {
				return Settings{}, fmt.Errorf("context %s=%q: want true or false", key, v)
			}
			*dst = b
		}
	}
	for _, n := range []struct {
		key    string
		dst    *int
		lo, hi int
	}{
		{CtxNATGateways, &s.NATGateways, 1, 3},
		{CtxEphemeralStorage, &s.EphemeralStorageGiB, 21, 200},
		{CtxLogRetentionDays, &s.LogRetentionDays, 1, 3653},
		{CtxCheckpointDays, &s.CheckpointDays, 1, 3650},
		{CtxRunnerConcurrency, &s.RunnerConcurrency, 0, 10000},
	} {
		if err := num(n.key, n.dst, n.lo, n.hi); err != nil {
			return Settings{}, err
		}
	}
	if !retentions[s.LogRetentionDays] {
		return Settings{}, fmt.Errorf("context %s=%d: CloudWatch Logs keeps 1, 3, 5, 7, 14, 30, 60, 90, 120, 150, 180, 365, … days", CtxLogRetentionDays, s.LogRetentionDays)
	}
	if v, ok := str(CtxWarmPool); ok {
		if _, err := pool.ParseTargets(v); err != nil {
			return Settings{}, fmt.Errorf("context %s: %w", CtxWarmPool, err)
		}
		s.WarmPool = v
	}
	if v, ok := str(CtxBrowserWarmPool); ok {
		warm, err := pool.ParseBrowserTargets(v)
		if err != nil {
			return Settings{}, fmt.Errorf("context %s: %w", CtxBrowserWarmPool, err)
		}
		if len(warm) > 0 && !s.SandboxBrowser {
			return Settings{}, fmt.Errorf("context %s=%s keeps tasks with a browser, but %s is not true: there is no browser image", CtxBrowserWarmPool, v, CtxSandboxBrowser)
		}
		s.BrowserWarmPool = v
	}
	if v, ok := str(CtxSandboxEgress); ok {
		ports, all, err := parseEgress(v)
		if err != nil {
			return Settings{}, fmt.Errorf("context %s=%q: %w", CtxSandboxEgress, v, err)
		}
		s.SandboxEgress, s.SandboxEgressAll = ports, all
	}
	if v, ok := str(CtxModelProvider); ok {
		switch v {
		case provider.Bedrock, provider.Anthropic, provider.OpenAI, provider.Scripted:
			s.ModelProvider = v
		default:
			return Settings{}, fmt.Errorf("context %s=%q: want %s, %s, %s or %s", CtxModelProvider, v,
				provider.Bedrock, provider.Anthropic, provider.OpenAI, provider.Scripted)
		}
	}
	for key, dst := range map[string]*string{CtxModel: &s.Model, CtxFleetSecrets: &s.FleetSecrets,
		CtxSearchBackend: &s.SearchBackend, CtxSearchURL: &s.SearchURL, CtxSearchAPIKeySecret: &s.SearchAPIKeySecret,
		CtxSlackDefaultFleet: &s.SlackDefaultFleet} {
		if v, ok := str(key); ok {
			*dst = v
		}
	}
	for key, env := range map[string]string{CtxModelPrices: cost.EnvModelPrices, CtxComputePrices: cost.EnvComputePrices} {
		v, ok := str(key)
		if !ok || v == "" {
			continue
		}
		// Checked as the runner will read it, so that a typing error
		// fails the synth rather than the runner's start.
		if _, err := cost.FromEnv(func(k string) string { return map[string]string{env: v}[k] }); err != nil {
			return Settings{}, fmt.Errorf("context %s: %w", key, err)
		}
		if key == CtxModelPrices {
			s.ModelPrices = v
		} else {
			s.ComputePrices = v
		}
	}
	if s.FleetSecrets == "" {
		return Settings{}, fmt.Errorf("context %s is empty: want a secret name pattern such as prod/* (or * for any)", CtxFleetSecrets)
	}
	if v, ok := str(CtxLambdaDir); ok {
		if !filepath.IsAbs(v) {
			v = filepath.Join(root, v)
		}
		s.LambdaDir = v
	}
	return s, nil
}

// parseEgress reads "all" or comma-separated TCP ports.
func parseEgress(v string) (ports []int, all bool, err error) {
	if strings.EqualFold(v, "all") {
		return nil, true, nil
	}
	for _, p := range strings.Split(v, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(p))
		if err != nil || n < 1 || n > 65535 {
			return nil, false, fmt.Errorf("want all, or TCP ports such as 443 or 80,443")
		}
		ports = append(ports, n)
	}
	return ports, false, nil
}

// sandboxSize is the task definition's own size: the smallest sandbox
// size. The launcher overrides CPU and memory per run (fleet.SandboxSize).
var sandboxSize = fleet.SandboxSizes()[0]
