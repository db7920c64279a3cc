package run

// EventSetupEnded is setup.ended: the fleet's setup step
// ([x-agentsfleet.setup]) ran, or was skipped, before the agent's first
// turn. It is committed once per run, in the step that holds run.started.
const EventSetupEnded = "setup.ended"

// SetupEnded is setup.ended's data. Output is the command's output
// (stdout and stderr in order, its head and tail kept past the sandbox's
// cap, then cut at MaxEventOutput), screened for the fleet's secret values
// like every tool result: a value the command printed shows as
// «secret:NAME».
type SetupEnded struct {
	Command string `json:"command"`
	// ExitCode is the command's exit status (128 plus the signal that
	// killed it); -1 when it timed out and was killed.
	ExitCode  int    `json:"exit_code"`
	Output    string `json:"output"`
	Truncated bool   `json:"truncated,omitempty"`
	// TimedOut says the command ran past the setup's timeout_seconds and
	// was killed with every process it started.
	TimedOut   bool  `json:"timed_out,omitempty"`
	DurationMS int64 `json:"duration_ms"`
	// Skipped says the command did not run: the fleet's folder records a
	// setup that succeeded with the same inputs (see the README's "Setup
	// step").
	Skipped bool `json:"skipped"`
	// Secrets names the secrets the command received (names, never
	// values).
	Secrets []string `json:"secrets,omitempty"`
}

// CodeSetupFailed is the run.ended code of a run whose setup step exited
// non-zero or timed out: the model was never called.
const CodeSetupFailed = "setup_failed"
