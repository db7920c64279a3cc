// Package fleet provides the fleet Definition: its file format, parsing and
// validation, the tool names and scopes it allows (checked against the
// catalog, shared/toolbox, which the tools' contracts make), the network host
// list, and the canonical JSON form a revision is stored in. It talks to no
// AWS service; the secrets it names live in AWS Secrets Manager and are read
// by the webtools λ, and by the runner for the setup step's alone.
//
// # The document
//
// A Definition is a TOML document (the form people write) or the same tree
// in JSON (the form the HTTP API sends). Keys are case-sensitive and an
// unknown key is an error naming it. The runtime keys sit under
// "x-agentsfleet"; what the spec writes as config["x-agentsfleet"] is that
// table of the document itself, which is not wrapped in anything.
//
//	name = "triage-bot"            # required: slug, 1–63 of a-z 0-9 -, starts with a letter, no trailing dash
//	instructions = """..."""       # required: not blank, at most 64 KiB; grants nothing
//	model = "anthropic.claude-sonnet-4-5-20250929-v1:0"  # optional: default is the deployment's model
//	workdir = "/agent/repo"        # optional: absolute clean path, writable; default /agent
//
//	[tools]
//	builtin = ["read", "grep"]     # optional: the built-in tools page's form of the tool list
//
//	[[tools.declared]]             # optional, at most 32: a tool that is a shell command (DeclaredTool)
//	name = "run_tests"             # 1–64 of a-z 0-9 _, a letter first; no catalog tool's name, no mcp__ prefix
//	description = "Runs the tests."  # required, at most 8 KiB: what the model is told
//	parameters = { type = "object", properties = { pattern = { type = "string" } } }  # required: a JSON Schema object
//	command = 'go test ./... -run "${AGENTSFLEET_ARG_PATTERN:-.}"'  # required, at most 16 KiB; run as bash runs one
//
//	[x-agentsfleet]
//	tools = ["message"]            # the allowlist; any known tool may be listed in either list
//
//	[x-agentsfleet.network]
//	hosts = ["api.github.com"]     # hosts http_request, web_fetch and pushover may reach
//
//	[x-agentsfleet.secrets]
//	GITHUB_TOKEN = "prod/github-token"  # NAME = Secrets Manager secret name or ARN
//	STRIPE_KEY = { id = "prod/stripe", approve = true }  # a person approves each host first
//
//	[x-agentsfleet.limits]
//	tool_timeout_seconds = 120     # 1–3600, default 120
//
//	[x-agentsfleet.limits.budget]
//	tokens = 2000000               # 1–200,000,000, default 2,000,000 (input + output, children included)
//	tool_calls = 500               # 1–10,000, default 500
//
//	[x-agentsfleet.sandbox]
//	size = "small"                 # small | medium | large | xlarge, default small
//
//	[x-agentsfleet.setup]          # optional: run in the sandbox before the first turn; needs tools:execute
//	command = "make deps"          # required: a shell command, at most 16 KiB
//	secrets = ["GITHUB_TOKEN"]     # declared secrets, given to this command alone as variables
//	timeout_seconds = 600          # 1–3600, default 600 (not the tool timeout)
//
//	[x-agentsfleet.approval]       # optional: calls that wait for a person (POST /v1/runs/{id}/approvals/{approval_id})
//	tools = ["http_request"]       # required: allowed tools, mcp__<server>__* for all of a server's
//	methods = ["POST"]             # http_request only: the methods that wait (none: all)
//	hosts = ["*.pay.example"]      # http_request only: the hosts that wait (none: all)
//	expire_hours = 24              # 1–720, default 24: an approval nobody answers then expires
//
// examples/reference.toml at the repository root is this document with every
// rule spelt out; the other files there are working Definitions.
//
// # The tool list
//
// x-agentsfleet.tools and tools.builtin are one allowlist: Parse merges the
// two, holds a tool listed twice (in one list or both) once, and sorts the
// result. An unknown name is an error that names it, suggests the nearest
// known name, and lists every valid one; nothing is dropped. A runner whose
// deployment lacks a tool (browser_open and screenshot need a browser)
// refuses the run through Definition.CheckAvailable, with the same shape of
// error. An empty list is allowed: such a fleet can only answer.
//
// The tools, where each runs and the API-key scope that allows it:
//
//	tool             runs in   scope           page
//	read             sandbox   tools:files     built-in
//	glob             sandbox   tools:files     built-in
//	list             sandbox   tools:files     built-in
//	grep             sandbox   tools:search    built-in
//	webfetch         webtools  tools:search    built-in
//	websearch        webtools  tools:search    built-in
//	bash             sandbox   tools:execute   built-in
//	exec_command     sandbox   tools:execute   fleet
//	write_stdin      sandbox   tools:execute   fleet
//	apply_patch      sandbox   tools:write     fleet
//	http_request     webtools  tools:network   fleet
//	web_fetch        webtools  tools:network   fleet
//	pushover         webtools  tools:network   fleet
//	update_plan      runner    tools:control   fleet
//	message          runner    tools:control   fleet
//	schedule_create  runner    tools:schedule  fleet
//	schedule_list    runner    tools:schedule  fleet
//	schedule_update  runner    tools:schedule  fleet
//	schedule_delete  runner    tools:schedule  fleet
//	cron_run         runner    tools:schedule  fleet
//	spawn_agent      runner    tools:agents    fleet  (start a child, return its child_id)
//	delegate_agent   runner    tools:agents    fleet  (start a child and wait for its answer)
//	wait_agent       runner    tools:agents    fleet
//	inspect_agent    runner    tools:agents    fleet
//	list_agents      runner    tools:agents    fleet
//	interrupt_agent  runner    tools:agents    fleet
//	browser_open     display   tools:browser   fleet
//	screenshot       display   tools:browser   fleet
//
// A declared tool ([[tools.declared]], DeclaredTool) runs in the sandbox as
// bash does and needs tools:execute; declaring it allows it.
//
// The first three scopes are the spec's. apply_patch has tools:write: it
// changes files in the writable roots but runs nothing, so it needs more
// than tools:files and less than tools:execute. The six child-agent tools,
// and only they, have tools:agents, which is how the runner tells which
// tools not to offer a grandchild.
//
// # Hosts and secrets
//
// A host list entry is a host name, IP address, "*.NAME" wildcard or URL,
// of which only the host counts, on any port; see NormalizeHost and
// HostList for the normal form and matching. A secret's name is what
// «secret:NAME» references use (letters, digits, underscores); its value
// is the Secrets Manager secret's name or ARN, never the credential itself:
// values that look like tokens are refused, and error messages never
// repeat a secret value. A secret written {id, approve = true} is listed
// in ApproveSecrets: the runner asks a person before its first use for a
// host in a run, and the webtools function fills it only for a host so
// approved; the setup step and MCP headers may not use one.
//
// # Errors
//
// Parse returns every problem it finds at once in an *Error, which wraps
// fault.DefinitionInvalid. Each Problem has the key path and, for a document,
// its line: "line 7: x-agentsfleet.limits.tool_timeout_seconds: 0 is out of
// range; want 1 to 3600 seconds (default 120)". A syntax error stops
// parsing and carries its line and column. CheckScopes returns a
// *ScopeError, which carries no product code (the API answers 403).
//
// # Revisions
//
// A Definition from Parse is in normal form, so it has one canonical JSON
// encoding (Canonical, MarshalJSON), ParseJSON of that encoding gives it
// back, and Hash (SHA-256 of the encoding) tells a no-op apply from a change.
package fleet
