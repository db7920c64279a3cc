package wire

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"
)

// The fleet's setup step ([x-agentsfleet.setup]) runs once in a sandbox,
// before the agent's first turn, through an endpoint of its own: it is the
// one command that receives secret values, and no tool the model can call
// reaches it.
//
//	POST SetupPath SetupRequest → 200 SetupResult
//
// It needs the bearer token. Errors are an ErrorBody with 400 (a body that
// CheckSetup refuses, or an unknown field) or 409 (this sandboxd ran a
// setup step already, with another request). sandboxd runs one setup step
// in its life (it serves one run): the same request again (a runner
// invoked again for the run) waits for the first one and gets its result
// with Already set, and never runs the command twice.
//
// The variables of Env reach the setup command's process alone: sandboxd
// keeps them neither in its own environment nor in any later command's,
// and its confinement of the command is bash's.
const (
	// SetupPath runs the setup step.
	SetupPath = "/v1/setup"
	// SetupKeyFile is where, in the fleet's folder, sandboxd records the
	// Key of the last setup step that succeeded.
	SetupKeyFile = ".agentsfleet/setup.sha256"

	// MaxSetupCommand is the longest command, in bytes.
	MaxSetupCommand = 16 << 10
	// MaxSetupEnv is the most variables Env holds.
	MaxSetupEnv = 64
	// MaxSetupValue is the longest value of a variable (Secrets Manager
	// keeps at most 64 KiB a secret).
	MaxSetupValue = 64 << 10
	// MaxSetupTimeoutSeconds is the longest timeout.
	MaxSetupTimeoutSeconds = 3600
)

// SetupRequest is the body of POST SetupPath.
type SetupRequest struct {
	// Command is run by /bin/sh -c in the workdir, confined as bash's
	// commands are.
	Command string `json:"command"`
	// Env holds the variables the command gets beside the confined base
	// environment: names a setup may use (SetupEnvName), values without
	// NUL.
	Env map[string]string `json:"env,omitempty"`
	// TimeoutSeconds bounds the command: 1 to MaxSetupTimeoutSeconds.
	TimeoutSeconds int `json:"timeout_seconds"`
	// Key, when set (64 lowercase hex digits), is what the runner made of
	// the setup's inputs: a fleet folder whose SetupKeyFile holds it
	// skips the command (Skipped), and a command that exits 0 writes it
	// there. Empty: the command runs, and nothing is recorded.
	Key string `json:"key,omitempty"`
}

// SetupResult is the answer of POST SetupPath.
type SetupResult struct {
	// Output is the command's stdout and stderr in order, its first and
	// last bytes kept as bash's are past its cap.
	Output string `json:"output"`
	// ExitCode is the command's exit status (128 plus the killing signal);
	// -1 when it timed out.
	ExitCode   int   `json:"exit_code"`
	TimedOut   bool  `json:"timed_out,omitempty"`
	DurationMS int64 `json:"duration_ms"`
	// Skipped says the fleet's folder records a setup with the same Key:
	// the command did not run.
	Skipped bool `json:"skipped,omitempty"`
	// Already says this sandboxd ran the setup step before: this is that
	// run's result.
	Already bool `json:"already,omitempty"`
}

// DecodeSetup reads a SetupRequest strictly (an unknown field or trailing
// data is an error) and checks it (CheckSetup).
func DecodeSetup(body []byte) (SetupRequest, error) {
	var req SetupRequest
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		return SetupRequest{}, fmt.Errorf("the body is not a setup request: %w", err)
	}
	if dec.More() {
		return SetupRequest{}, errors.New("the body is not a setup request: data after the object")
	}
	return req, CheckSetup(req)
}

// CheckSetup says what is wrong with req, or nil. Its errors name
// variables but never hold a value.
func CheckSetup(req SetupRequest) error {
	switch {
	case strings.TrimSpace(req.Command) == "":
		return errors.New("command: empty")
	case len(req.Command) > MaxSetupCommand:
		return fmt.Errorf("command: %d bytes; at most %d", len(req.Command), MaxSetupCommand)
	case strings.ContainsRune(req.Command, 0) || !utf8.ValidString(req.Command):
		return errors.New("command: not UTF-8 text without NUL")
	case req.TimeoutSeconds < 1 || req.TimeoutSeconds > MaxSetupTimeoutSeconds:
		return fmt.Errorf("timeout_seconds: %d; want 1 to %d", req.TimeoutSeconds, MaxSetupTimeoutSeconds)
	case len(req.Env) > MaxSetupEnv:
		return fmt.Errorf("env: %d variables; at most %d", len(req.Env), MaxSetupEnv)
	case req.Key != "" && !isSetupKey(req.Key):
		return errors.New("key: want 64 lowercase hex digits")
	}
	for name, v := range req.Env {
		if why := SetupEnvName(name); why != "" {
			return fmt.Errorf("env %s: %s", name, why)
		}
		if len(v) > MaxSetupValue || strings.ContainsRune(v, 0) {
			return fmt.Errorf("env %s: the value is longer than %d bytes or holds a NUL", name, MaxSetupValue)
		}
	}
	return nil
}

// SetupEnvName says why name cannot be a setup variable, or "". Unlike
// --env (ForbiddenEnv) it admits names that say they hold a secret: that
// is what a setup variable is. It refuses what would reach the sandbox's
// own machinery (the loader, the AWS SDKs, sandboxd, the confinement) and
// the confined environment's own variables.
func SetupEnvName(name string) string {
	if !isEnvName(name) || len(name) > 64 {
		return "not a variable name (1 to 64 letters, digits and _, not starting with a digit)"
	}
	if why := forbiddenPrefix(name); why != "" {
		return why
	}
	switch strings.ToUpper(name) {
	case "PATH", "HOME", "LANG", "LC_ALL", "TMPDIR", "SHELL", "PWD", "IFS", "ENV":
		return "the confined environment's own variable cannot be replaced"
	}
	return ""
}

func isSetupKey(s string) bool {
	if len(s) != 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}
