package fleet

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/agentsfleet/agentsfleet/shared/tool"
)

// Setup is the fleet's setup step ([x-agentsfleet.setup]): one shell
// command run in the sandbox before the agent's first turn (a clone, a
// dependency install). It is the only command that may receive secret
// values, as environment variables named like the secrets it lists; the
// agent's own commands never do. A Definition without one has a nil
// *Setup.
type Setup struct {
	// Command is run by /bin/sh -c in the workdir, confined as bash's
	// commands are: 1 to MaxSetupCommandBytes of UTF-8 text, no NUL.
	Command string
	// Secrets are names of secrets the Definition declares
	// (x-agentsfleet.secrets), sorted without repeats; each reaches the
	// command as the variable of that name. Nil when it lists none.
	Secrets []string
	// TimeoutSeconds bounds the command's wall-clock time, from 1 to
	// MaxSetupTimeoutSeconds, default DefaultSetupTimeoutSeconds. It is
	// not the tool timeout: a clone or an install takes longer than a
	// tool call.
	TimeoutSeconds int
}

// Timeout returns TimeoutSeconds as a duration.
func (s *Setup) Timeout() time.Duration { return time.Duration(s.TimeoutSeconds) * time.Second }

// The setup step's bounds.
const (
	MaxSetupCommandBytes       = 16 << 10
	MaxSetupTimeoutSeconds     = 3600
	DefaultSetupTimeoutSeconds = 600
)

// setupScope is the scope a Definition with a setup step needs: the step
// runs a command, as bash does.
const setupScope = tool.ScopeExecute

// forbiddenSetupPrefixes are variable names a setup secret may not take:
// they would reach the sandbox's loader, or mean something to the AWS SDKs
// and to agentsfleet's own processes.
var forbiddenSetupPrefixes = []string{"AWS_", "ECS_", "SANDBOXD_", "AGENTSFLEET_", "LD_"}

// reservedSetupNames are the confined environment's own variables, which a
// secret must not replace.
var reservedSetupNames = []string{"PATH", "HOME", "LANG", "LC_ALL", "TMPDIR", "SHELL", "PWD", "IFS", "ENV"}

// setupDecoder gathers [x-agentsfleet.setup] as it is read.
type setupDecoder struct {
	at      keyPath
	set     bool
	command string
	cmdSet  bool
	secrets []listEntry
	secAt   keyPath
	timeout intSetting
}

// field is the decoder of the table.
func (s *setupDecoder) field(d *decoder, integer func(*intSetting) field) field {
	return func(at keyPath, v any) {
		s.at, s.set = at, true
		d.table(at, v, map[string]field{
			"command": func(at keyPath, v any) {
				if c, ok := d.str(at, v); ok {
					s.command, s.cmdSet = c, true
				}
			},
			"secrets": func(at keyPath, v any) {
				s.secAt = at
				s.secrets = d.list(at, v)
			},
			"timeout_seconds": integer(&s.timeout),
		})
	}
}

// setup checks what was gathered against the Definition's secrets.
func (s *setupDecoder) setup(d *decoder, declared map[string]string) *Setup {
	if !s.set || d.mistyped[s.at.String()] {
		return nil
	}
	out := &Setup{Command: s.command}
	cmdAt := s.at.key("command")
	switch {
	case !s.cmdSet:
		if !d.mistyped[cmdAt.String()] {
			d.probs.add(cmdAt, "required: the shell command the setup step runs, such as \"git clone https://github.com/org/repo && make deps\"")
		}
	case strings.TrimSpace(s.command) == "":
		d.probs.add(cmdAt, "empty; give the shell command the setup step runs, or leave out [x-agentsfleet.setup]")
	case len(s.command) > MaxSetupCommandBytes:
		d.probs.add(cmdAt, "%d bytes long; at most %d are allowed (put a longer script in a file the command runs)", len(s.command), MaxSetupCommandBytes)
	case !utf8.ValidString(s.command):
		d.probs.add(cmdAt, "not valid UTF-8 text")
	case strings.ContainsRune(s.command, 0):
		d.probs.add(cmdAt, "contains a NUL character")
	}
	out.TimeoutSeconds = int(d.bounded(s.timeout, 1, MaxSetupTimeoutSeconds, DefaultSetupTimeoutSeconds, "seconds"))
	for _, e := range s.secrets {
		if msg := checkSetupSecret(e.s, declared); msg != "" {
			d.probs.add(e.at, "%s", msg)
			continue
		}
		out.Secrets = append(out.Secrets, e.s)
	}
	slices.Sort(out.Secrets)
	out.Secrets = slices.Compact(out.Secrets)
	return out
}

// checkSetupSecret accepts a name the Definition declares that may be an
// environment variable's name.
func checkSetupSecret(name string, declared map[string]string) string {
	if _, ok := declared[name]; !ok {
		known := "the Definition declares none"
		if len(declared) > 0 {
			names := make([]string, 0, len(declared))
			for k := range declared {
				names = append(names, k)
			}
			slices.Sort(names)
			known = "the Definition declares " + strings.Join(names, ", ")
		}
		return fmt.Sprintf("unknown secret %q: name a secret of x-agentsfleet.secrets (%s)", clip(name), known)
	}
	up := strings.ToUpper(name)
	for _, p := range forbiddenSetupPrefixes {
		if strings.HasPrefix(up, p) {
			return fmt.Sprintf("secret %q cannot be a setup variable: names starting with %s mean something to the sandbox itself; declare the secret under another name", clip(name), p)
		}
	}
	if slices.Contains(reservedSetupNames, up) {
		return fmt.Sprintf("secret %q cannot be a setup variable: it would replace the sandbox's own %s; declare the secret under another name", clip(name), up)
	}
	return ""
}

// wireSetup is [x-agentsfleet.setup] in the canonical form.
type wireSetup struct {
	Command        string   `json:"command"`
	Secrets        []string `json:"secrets,omitempty"`
	TimeoutSeconds int      `json:"timeout_seconds,omitempty"`
}

func (s *Setup) wire() *wireSetup {
	if s == nil {
		return nil
	}
	return &wireSetup{Command: s.Command, Secrets: s.Secrets, TimeoutSeconds: s.TimeoutSeconds}
}

// writeTOML writes the table in TOML.
func (s *Setup) writeTOML(b *bytes.Buffer) {
	if s == nil {
		return
	}
	fmt.Fprintf(b, "\n[%s.setup]\ncommand = %s\n", runtimeKey, tomlString(s.Command))
	if len(s.Secrets) > 0 {
		writeTOMLList(b, "secrets", s.Secrets)
	}
	if s.TimeoutSeconds != 0 {
		fmt.Fprintf(b, "timeout_seconds = %d\n", s.TimeoutSeconds)
	}
}

// SetupNeed is how CheckScopes names the setup step among the tools that
// need a scope.
const SetupNeed = "[x-agentsfleet.setup]"

// addSetupScope adds the setup step's scope to scopes, the scopes d's tools
// need, when d has one.
func (d *Definition) addSetupScope(scopes []string) []string {
	if d.Setup == nil || slices.Contains(scopes, setupScope) {
		return scopes
	}
	scopes = append(scopes, setupScope)
	slices.Sort(scopes)
	return scopes
}

// clone returns a deep copy of s.
func (s *Setup) clone() *Setup {
	if s == nil {
		return nil
	}
	c := *s
	c.Secrets = slices.Clone(s.Secrets)
	return &c
}
