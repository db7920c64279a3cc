package sandbox

import (
	_ "embed"
	"time"

	"github.com/agentsfleet/agentsfleet/shared/tool"
)

//go:embed exec_command.txt
var execCommandText string

// Limits of exec_command and write_stdin, Codex's.
const (
	DefaultExecYield     = 10 * time.Second
	DefaultWriteYield    = 250 * time.Millisecond
	MinYield             = 250 * time.Millisecond
	MaxYield             = 30 * time.Second
	MinEmptyPollYield    = 5 * time.Second
	DefaultMaxOutputToks = 10_000
	// BytesPerToken is how many bytes of output count as one token.
	BytesPerToken = 4
	// MaxSessions is how many exec_command sessions are kept.
	MaxSessions = 64
)

// ExecCommandArgs are exec_command's arguments, Codex's names.
type ExecCommandArgs struct {
	Cmd             string   `json:"cmd" description:"Shell command to execute."`
	Workdir         string   `json:"workdir,omitempty" description:"Optional working directory to run the command in; defaults to the workdir."`
	Shell           string   `json:"shell,omitempty" description:"Shell binary to launch. Defaults to /bin/bash (or /bin/sh)."`
	Login           bool     `json:"login,omitempty" description:"Whether to run the shell with -l (read profile files). Defaults to false."`
	TTY             bool     `json:"tty,omitempty" description:"Whether to allocate a TTY for the command. Defaults to false (plain pipes); set to true to open a PTY and access TTY process."`
	YieldTimeMS     *float64 `json:"yield_time_ms,omitempty" description:"How long to wait (in milliseconds) for output before yielding."`
	MaxOutputTokens *float64 `json:"max_output_tokens,omitempty" description:"Maximum number of tokens to return. Excess output will be truncated."`
}

// ExecCommand is exec_command's contract: starts a process the fleet
// drives across calls.
var ExecCommand = tool.DefineIn[ExecCommandArgs](&contracts, tool.About{
	Name:        "exec_command",
	RunsIn:      tool.InSandbox,
	Scope:       tool.ScopeExecute,
	Summary:     "Starts a process the fleet drives across calls",
	Description: execCommandText,
	Rules: tool.Rules{
		"cmd":               tool.NotBlank(),
		"yield_time_ms":     tool.Min(0).Default(DefaultExecYield.Milliseconds()),
		"max_output_tokens": tool.Min(0).Default(DefaultMaxOutputToks),
	},
	Values: map[string]any{
		"MinYieldMS":    MinYield.Milliseconds(),
		"MaxYieldMS":    MaxYield.Milliseconds(),
		"MaxSessions":   MaxSessions,
		"BytesPerToken": BytesPerToken,
	},
})
