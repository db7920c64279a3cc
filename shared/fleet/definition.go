package fleet

import (
	"slices"
	"strings"
	"time"
)

// Definition is one revision of a fleet: who the agent is and what it may do.
//
// A Definition that Parse returns is valid and in normal form: defaults are
// filled in, Tools are known names sorted without repeats, Hosts are
// normalised, sorted and without repeats, and empty lists and maps are nil.
// Such a value round-trips: ParseJSON(d.Canonical()) returns a Definition
// equal (reflect.DeepEqual) to d. Treat it as read-only once shared; Clone
// gives a copy to change. A Definition is safe for concurrent reads.
type Definition struct {
	// Name is the fleet's name: a slug of 1 to 63 lowercase letters, digits
	// and dashes that starts with a letter and does not end with a dash.
	Name string
	// Instructions is the fleet's system prompt, never empty. It grants
	// nothing: only Tools does.
	Instructions string
	// Model is the model id handed to the deployment's model provider (a
	// Bedrock model or inference-profile id or ARN by default). Empty means
	// the deployment's default model.
	Model string
	// Workdir is the absolute, clean path tools start in and resolve
	// relative paths against. It is writable. Default DefaultWorkdir.
	Workdir string
	// Tools is the allowlist: known tool names, sorted, without repeats.
	Tools []string
	// DeclaredTools are the tools the Definition's author wrote
	// ([[tools.declared]]), sorted by name; declaring one allows it. See
	// DeclaredTool.
	DeclaredTools []DeclaredTool
	// Hosts is the network host list http_request, web_fetch and pushover
	// may reach. See HostList.
	Hosts HostList
	// Secrets maps a secret's name, used in «secret:NAME» references, to the
	// AWS Secrets Manager secret (name or ARN) that holds its value. Only the
	// webtools λ reads the values.
	Secrets map[string]string
	// ApproveSecrets are the secrets that say approve = true, sorted: the
	// credential firewall fills one for a host only once a person has
	// approved its use for that host in the run (asked when the model
	// first calls with it).
	ApproveSecrets []string
	// Limits caps a run's tool calls and spending.
	Limits Limits
	// Sandbox is the sandbox a run gets.
	Sandbox Sandbox
	// Slack is how the fleet takes its Slack threads.
	Slack Slack
	// SlackAccess is who in Slack may start the fleet's runs and stop them
	// ([x-agentsfleet.slack] allow_start, allow_stop, allow_apply and
	// allow_approve).
	SlackAccess SlackAccess
	// Setup is the setup step run before the agent's first turn
	// ([x-agentsfleet.setup]); nil when there is none.
	Setup *Setup
	// Approval is which tool calls wait for a person
	// ([x-agentsfleet.approval]); nil when none do.
	Approval *Approval
	// MCP is the fleet's MCP servers ([[x-agentsfleet.mcp]]), sorted by
	// name; nil when none. See MCPServer.
	MCP []MCPServer
}

// SlackAccess is who in Slack may start a fleet's runs (a mention, a direct
// message, a reply in a run's thread) and press a run's Stop button. Each
// list holds Slack user ids (U… or W…) and user group ids (S…), a person
// being on it when their id is, or they are a member of a group that is.
// A nil list is not set.
//
// AllowStart not set lets everyone who can write to the app start runs.
// AllowStop not set is AllowStart (everyone, if that is not set either).
// The person who started a run may always stop it. The lists bind the
// Slack door only: the HTTP API, webhooks and schedules go by their own
// keys and secrets.
//
// AllowApply is who may press Apply on an improvement chat's proposal in
// Slack; not set, nobody may (the proposal is applied with an API key
// instead). Being on it is as strong as a key holding every tool scope,
// for this fleet: the list is the Slack door's scopes.
//
// AllowApprove is who may press Approve or Deny on a call a run waits on
// ([x-agentsfleet.approval]) in the run's thread; not set, nobody may (the
// call is decided with a key holding runs:approve instead).
type SlackAccess struct {
	AllowStart, AllowStop, AllowApply, AllowApprove []string
}

// MaxSlackAccess is the most ids an access list may hold.
const MaxSlackAccess = 100

// StopList is the list that says who may stop a run besides its starter:
// AllowStop, else AllowStart; nil when neither is set.
func (a SlackAccess) StopList() []string {
	if a.AllowStop != nil {
		return a.AllowStop
	}
	return a.AllowStart
}

// IsSlackGroup reports whether id names a user group (S…) rather than a
// user (U… or W…).
func IsSlackGroup(id string) bool { return strings.HasPrefix(id, "S") }

// Limits are a run's caps.
type Limits struct {
	// ToolTimeoutSeconds bounds one tool call's wall-clock time, from
	// MinToolTimeoutSeconds to MaxToolTimeoutSeconds; default
	// DefaultToolTimeoutSeconds.
	ToolTimeoutSeconds int
	// Budget is what a run, its children included, may spend.
	Budget Budget
}

// ToolTimeout returns ToolTimeoutSeconds as a duration.
func (l Limits) ToolTimeout() time.Duration {
	return time.Duration(l.ToolTimeoutSeconds) * time.Second
}

// Budget is a run's spending cap, shared with its child agents. A run that
// reaches either figure stops with fault.RunBudgetSpent.
type Budget struct {
	// Tokens is the model tokens (input plus output, over every model call)
	// a run may use: 1 to MaxBudgetTokens, default DefaultBudgetTokens.
	Tokens int64
	// ToolCalls is the tool calls a run may make: 1 to MaxBudgetToolCalls,
	// default DefaultBudgetToolCalls.
	ToolCalls int
}

// Slack is how a fleet takes the messages of its Slack threads
// ([x-agentsfleet.slack]).
type Slack struct {
	// OnReply is what a reply in a thread whose run is still working does:
	// ReplyQueue (the default) hands it to that run for its next turn;
	// ReplyInterrupt stops that run and starts one that continues its
	// conversation with the reply.
	OnReply ReplyMode
	// MergeSeconds is how long a run started from Slack waits before its
	// first turn, so that a burst of messages in its thread becomes one
	// turn: 0 to MaxMergeSeconds, default DefaultMergeSeconds.
	MergeSeconds int
}

// ReplyMode is Slack.OnReply.
type ReplyMode string

// The reply modes.
const (
	ReplyQueue     ReplyMode = "queue"
	ReplyInterrupt ReplyMode = "interrupt"
)

// The limits of Slack.MergeSeconds.
const (
	DefaultMergeSeconds = 3
	MaxMergeSeconds     = 30
)

// Sandbox is the sandbox settings.
type Sandbox struct {
	// Size is the sandbox task's size, default SizeSmall.
	Size SandboxSize
}

// SandboxSize names a sandbox task size. Only these four exist, each a
// valid Fargate CPU/memory combination, so that a deployment's warm pool
// can keep idle tasks of every size a Definition may ask for.
type SandboxSize string

// The sandbox sizes.
const (
	SizeSmall  SandboxSize = "small"  // 0.5 vCPU, 1 GiB
	SizeMedium SandboxSize = "medium" // 1 vCPU, 2 GiB
	SizeLarge  SandboxSize = "large"  // 2 vCPU, 4 GiB
	SizeXLarge SandboxSize = "xlarge" // 4 vCPU, 8 GiB
)

// sizes maps each size to its Fargate CPU units and memory in MiB.
var sizes = map[SandboxSize][2]int{
	SizeSmall:  {512, 1024},
	SizeMedium: {1024, 2048},
	SizeLarge:  {2048, 4096},
	SizeXLarge: {4096, 8192},
}

// SandboxSizes returns the sizes from smallest to largest.
func SandboxSizes() []SandboxSize {
	return []SandboxSize{SizeSmall, SizeMedium, SizeLarge, SizeXLarge}
}

// Valid reports whether s is one of the sandbox sizes.
func (s SandboxSize) Valid() bool {
	_, ok := sizes[s]
	return ok
}

// CPU returns the size's Fargate CPU units (1024 = 1 vCPU), 0 if s is not valid.
func (s SandboxSize) CPU() int { return sizes[s][0] }

// MemoryMiB returns the size's Fargate memory in MiB, 0 if s is not valid.
func (s SandboxSize) MemoryMiB() int { return sizes[s][1] }

// Defaults and bounds. Parse fills a missing value with its default; a
// value given outside its bounds is a problem, never clamped.
const (
	DefaultWorkdir = "/agent"

	MinToolTimeoutSeconds     = 1
	MaxToolTimeoutSeconds     = 3600
	DefaultToolTimeoutSeconds = 120

	MaxBudgetTokens     = 200_000_000
	DefaultBudgetTokens = 2_000_000

	MaxBudgetToolCalls     = 10_000
	DefaultBudgetToolCalls = 500

	DefaultSandboxSize = SizeSmall

	// MaxNameLen is the longest fleet name.
	MaxNameLen = 63
	// MaxInstructionsBytes is the longest instructions, in bytes.
	MaxInstructionsBytes = 64 << 10
	// MaxModelLen is the longest model id.
	MaxModelLen = 256
	// MaxWorkdirLen is the longest workdir, in bytes.
	MaxWorkdirLen = 1024
	// MaxHosts is the most entries the network host list may hold.
	MaxHosts = 256
	// MaxSecrets is the most secrets a Definition may name.
	MaxSecrets = 64
	// MaxSize is the largest Definition document Parse accepts, in bytes.
	MaxSize = 256 << 10
)

// Clone returns a deep copy of d.
func (d *Definition) Clone() *Definition {
	c := *d
	c.Tools = slices.Clone(d.Tools)
	c.Hosts = slices.Clone(d.Hosts)
	c.Setup = d.Setup.clone()
	c.Approval = d.Approval.clone()
	c.DeclaredTools = slices.Clone(d.DeclaredTools)
	for i := range c.DeclaredTools {
		c.DeclaredTools[i].Parameters = slices.Clone(c.DeclaredTools[i].Parameters)
	}
	c.MCP = cloneMCP(d.MCP)
	c.SlackAccess = SlackAccess{AllowStart: slices.Clone(d.SlackAccess.AllowStart), AllowStop: slices.Clone(d.SlackAccess.AllowStop),
		AllowApply: slices.Clone(d.SlackAccess.AllowApply), AllowApprove: slices.Clone(d.SlackAccess.AllowApprove)}
	c.ApproveSecrets = slices.Clone(d.ApproveSecrets)
	if d.Secrets != nil {
		c.Secrets = make(map[string]string, len(d.Secrets))
		for k, v := range d.Secrets {
			c.Secrets[k] = v
		}
	}
	return &c
}

// HasTool reports whether d's allowlist holds the tool called name.
func (d *Definition) HasTool(name string) bool {
	return slices.Contains(d.Tools, name)
}
