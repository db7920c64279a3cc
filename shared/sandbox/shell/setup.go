package shell

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/agentsfleet/agentsfleet/shared/sandbox"
	"github.com/agentsfleet/agentsfleet/shared/sandbox/confine"
	"github.com/agentsfleet/agentsfleet/shared/sandbox/wire"
)

// Setup runs the fleet's setup step (wire.SetupPath): a command confined
// as bash's are (the same policy, workdir and output cap), under the
// setup's own timeout, with the request's variables in its environment.
//
// Security boundary: the variables reach the command's process and what it
// starts, nothing else. They never enter sandboxd's own environment (so no
// later command inherits them) nor a Policy (whose Env every command of
// the policy gets). The confinement's last scrub (confine.Scrub, in the
// trampoline) drops variables named like secrets from every command's
// environment; that scrub guards against sandboxd's own environment and is
// left as it is. So the values cross it under neutral carrier names
// (setupCarrier), and the setup's shell, the confined process itself,
// gives each its name, unsets the carrier and runs the command. When the
// command's shell exits, its process group is killed; a process that left
// the group (setsid) and outlives it keeps the values, as a process the
// fleet's own command chose to keep.
type Setup struct {
	roots  *sandbox.Roots
	policy *confine.Policy
}

// NewSetup returns the setup step's runner over roots and policy (bash's).
func NewSetup(roots *sandbox.Roots, policy *confine.Policy) *Setup {
	return &Setup{roots: roots, policy: policy}
}

// setupCarrier is the variable that carries the i-th value across the
// confinement's scrub, which leaves AGENTSFLEET_ names but for its policy.
func setupCarrier(i int) string { return "AGENTSFLEET_SETUP_" + strconv.Itoa(i) }

// Run runs req, checked with wire.CheckSetup, until it exits or its timeout
// passes (then its process group is killed and the result says TimedOut).
// The Key is the caller's to handle. A failure to start the shell is the
// error; the command's own failure is its exit code.
func (s *Setup) Run(ctx context.Context, req wire.SetupRequest) (wire.SetupResult, error) {
	if err := wire.CheckSetup(req); err != nil {
		return wire.SetupResult{}, fmt.Errorf("setup: %w", err)
	}
	names := slices.Sorted(func(yield func(string) bool) {
		for k := range req.Env {
			if !yield(k) {
				return
			}
		}
	})
	// The script names only checked variable names (wire.SetupEnvName);
	// the values and the command stay data: the values in the carriers,
	// the command in $1.
	var script strings.Builder
	carriers := make([]string, len(names))
	for i, name := range names {
		c := setupCarrier(i)
		carriers[i] = c + "=" + req.Env[name]
		fmt.Fprintf(&script, "%s=$%s; export %s; unset %s; ", name, c, name, c)
	}
	script.WriteString(`exec /bin/sh -c "$1"`)
	cmd, err := s.policy.Command("/bin/sh", "-c", script.String(), "agentsfleet-setup", req.Command)
	if err != nil {
		return wire.SetupResult{}, fmt.Errorf("setup: %w", err)
	}
	cmd.Dir = s.roots.Workdir()
	cmd.Env = append(cmd.Env, carriers...)
	start := time.Now()
	o, err := runCaptured(ctx, cmd, time.Duration(req.TimeoutSeconds)*time.Second)
	if err != nil {
		return wire.SetupResult{}, fmt.Errorf("setup: %w", err)
	}
	res := wire.SetupResult{Output: o.text, ExitCode: o.code, DurationMS: time.Since(start).Milliseconds()}
	switch {
	case o.timedOut:
		res.ExitCode, res.TimedOut = -1, true
		res.Output += fmt.Sprintf("[timed out after %s: the setup command and every process it started were killed]\n", seconds(o.timeout))
	case o.stopped != nil:
		return wire.SetupResult{}, fmt.Errorf("setup: stopped before it finished: %w", o.stopped)
	}
	return res, nil
}

// agentDir is the fleet's folder among the roots, "" when they have none.
func (s *Setup) agentDir() string {
	for _, rt := range s.roots.All() {
		if rt.Name == "agent" {
			return rt.Path
		}
	}
	return ""
}

// build is the SHA-256 of sandboxd's own executable, read once: the
// sandbox's version in a setup's key, so that a new sandbox image (a new
// sandboxd build) sets up again. "" when it cannot be read: then no key
// is recorded or matched, and every setup runs.
var build = sync.OnceValue(func() string {
	f, err := os.Open("/proc/self/exe")
	if err != nil {
		return ""
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return ""
	}
	return hex.EncodeToString(h.Sum(nil))
})

// recordOf is what the key file holds for the runner's key: a SHA-256 of
// it and of this sandboxd's build.
func recordOf(key string) string {
	b := build()
	if key == "" || b == "" {
		return ""
	}
	sum := sha256.Sum256([]byte("agentsfleet setup v1\n" + key + "\n" + b))
	return hex.EncodeToString(sum[:])
}

// agentRoot opens the fleet's folder as an os.Root, so that a link in it
// cannot lead sandboxd elsewhere, and returns what the key file holds for
// key; nil (and no error) when there is no folder, or no record to make.
func (s *Setup) agentRoot(key string) (*os.Root, string, error) {
	dir, rec := s.agentDir(), recordOf(key)
	if dir == "" || rec == "" {
		return nil, "", nil
	}
	root, err := os.OpenRoot(dir)
	return root, rec, err
}

// Recorded reports whether the fleet's folder records a setup that
// succeeded with key and this sandboxd's build (wire.SetupKeyFile holds
// recordOf(key)). Without a folder nothing is recorded.
func (s *Setup) Recorded(key string) bool {
	root, rec, err := s.agentRoot(key)
	if root == nil || err != nil {
		return false
	}
	defer root.Close()
	f, err := root.Open(wire.SetupKeyFile)
	if err != nil {
		return false
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, 128))
	return err == nil && strings.TrimSpace(string(b)) == rec
}

// Record writes recordOf(key) to the fleet's folder's wire.SetupKeyFile;
// it does nothing without a folder. The agent may change or remove the
// file: that only makes a later setup run again, or skip one the agent
// itself prepared for.
func (s *Setup) Record(key string) error {
	root, rec, err := s.agentRoot(key)
	if err != nil {
		return fmt.Errorf("record the setup: %w", err)
	}
	if root == nil {
		return nil
	}
	defer root.Close()
	if err := root.Mkdir(path.Dir(wire.SetupKeyFile), 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("record the setup: %w", err)
	}
	f, err := root.OpenFile(wire.SetupKeyFile, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return fmt.Errorf("record the setup: %w", err)
	}
	if _, err := f.WriteString(rec + "\n"); err != nil {
		f.Close()
		return fmt.Errorf("record the setup: %w", err)
	}
	return f.Close()
}
