package runner

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/agentsfleet/agentsfleet/shared/fleet"
	"github.com/agentsfleet/agentsfleet/shared/run"
	"github.com/agentsfleet/agentsfleet/shared/sandbox/launch"
	"github.com/agentsfleet/agentsfleet/shared/sandbox/wire"
	"github.com/agentsfleet/agentsfleet/shared/secret"
	"github.com/agentsfleet/agentsfleet/shared/store"
)

// The setup step ([x-agentsfleet.setup]) runs in the run's sandbox once,
// after run.started and before the model is first called, for the run's
// own agent (children share its sandbox and find it set up). The step that
// commits setup.ended marks it done in the checkpoint (state.Setup), so
// that an invocation taking the run over does not run it again; one that
// takes over while the command still runs asks sandboxd again, which runs
// a setup step once in its life and answers the first one's result.
//
// Security boundary: the setup's secret values are read here, from
// Config.Secrets, for the names the setup lists only, and go to sandboxd
// in the setup request alone: never into the checkpoint, an event, a log
// line or an error. The command's output is screened with the run's screen
// (every secret the fleet declares) before setup.ended keeps it.

// setupTail is how much of the screened output a failed setup's run.ended
// message quotes: its end, where a failure says why.
const setupTail = 2000

// setUp runs the fleet's setup step when the agent is the run's own, the
// Definition has one, and no committed step says it ran. It commits
// setup.ended; a setup that fails ends the run failed (CodeSetupFailed).
// A run ended here leaves x.st.Ended set.
func (x *execution) setUp(ctx context.Context) error {
	if x.agent.id() != "" || x.def.Setup == nil {
		return nil
	}
	if x.st.Setup {
		if e := x.st.SetupError; e != nil {
			// The invocation that committed the failed setup.ended died
			// before it ended the run.
			return x.end(ctx, store.StatusFailed, "", e)
		}
		return nil
	}
	s := x.def.Setup
	// The command goes on in sandboxd if this invocation must stop: the
	// next one asks again and gets its result.
	sctx, cancel := ctx, context.CancelFunc(func() {})
	if dl, ok := ctx.Deadline(); ok {
		sctx, cancel = context.WithDeadline(ctx, dl.Add(-handOverReserve))
	}
	defer cancel()
	ev := run.SetupEnded{Command: s.Command, Secrets: s.Secrets}
	res, err := x.runSetup(sctx, s)
	switch {
	case ctx.Err() != nil:
		return x.interrupted(ctx, context.Cause(ctx))
	case sctx.Err() != nil:
		return x.handOver(ctx)
	case err != nil:
		return x.setupFailed(ctx, ev, err.Error())
	}
	ev.ExitCode, ev.Output, ev.TimedOut, ev.DurationMS, ev.Skipped = res.ExitCode, res.Output, res.TimedOut, res.DurationMS, res.Skipped
	var sc screen
	sc.add(&ev.Command)
	sc.addCut(&ev.Output, &ev.Truncated, run.MaxEventOutput)
	x.screen(ctx, &sc)
	if res.ExitCode != 0 || res.TimedOut {
		why := fmt.Sprintf("the setup step exited with code %d", res.ExitCode)
		if res.TimedOut {
			why = fmt.Sprintf("the setup step timed out after %d seconds and was killed", s.TimeoutSeconds)
		}
		if tail := tailUTF8(strings.TrimSpace(ev.Output), setupTail); tail != "" {
			why += "; its output ends:\n" + tail
		}
		return x.setupFailed(ctx, ev, why)
	}
	x.r.log.Info("setup", "run_id", x.run.ID, "skipped", res.Skipped, "ms", res.DurationMS, "already", res.Already)
	return x.commitSetup(ctx, ev, nil)
}

// commitSetup commits setup.ended and marks the setup done, failed with
// runErr when it is not nil (the run is to end with it).
func (x *execution) commitSetup(ctx context.Context, ev run.SetupEnded, runErr *run.Error) error {
	x.st.Setup, x.st.SetupError = true, runErr
	err := x.commit(ctx, store.Step{WhileRunning: true}, newEvent(run.EventSetupEnded, ev))
	if errors.Is(err, store.ErrRunEnded) {
		return x.end(ctx, store.StatusCancelled, "", nil)
	}
	return err
}

// setupFailed commits setup.ended, then ends the run failed saying why
// (why is screened with the end, as every run.ended message is).
func (x *execution) setupFailed(ctx context.Context, ev run.SetupEnded, why string) error {
	if ev.ExitCode == 0 && !ev.TimedOut {
		ev.ExitCode = -1 // it never ran to an exit
	}
	runErr := &run.Error{Code: run.CodeSetupFailed, Message: why}
	if err := x.commitSetup(ctx, ev, runErr); err != nil || x.st.Ended != nil {
		return err
	}
	x.r.log.Warn("setup failed", "run_id", x.run.ID, "exit_code", ev.ExitCode, "timed_out", ev.TimedOut)
	return x.end(ctx, store.StatusFailed, "", runErr)
}

// runSetup reads the values of the secrets s lists and has the run's
// sandbox run s with them.
func (x *execution) runSetup(ctx context.Context, s *fleet.Setup) (wire.SetupResult, error) {
	env, sums, err := x.setupSecrets(ctx, s)
	if err != nil {
		return wire.SetupResult{}, err
	}
	sb, err := x.acquireSandbox(ctx)
	if err != nil {
		return wire.SetupResult{}, fmt.Errorf("the setup step's sandbox could not be had: %w", err)
	}
	req := wire.SetupRequest{Command: s.Command, Env: env, TimeoutSeconds: s.TimeoutSeconds}
	if x.keepsFolder() {
		req.Key = setupKey(s, sums)
	}
	res, err := sb.Client.Setup(ctx, req)
	if err != nil {
		return wire.SetupResult{}, fmt.Errorf("the sandbox did not run the setup step: %w", err)
	}
	return res, nil
}

// setupSecrets reads the values of the secrets s lists, and the SHA-256 of
// each, by name. An error names the secret, never its value.
func (x *execution) setupSecrets(ctx context.Context, s *fleet.Setup) (env, sums map[string]string, err error) {
	if len(s.Secrets) == 0 {
		return nil, nil, nil
	}
	if x.r.cfg.Secrets == nil {
		return nil, nil, errors.New("the setup step lists secrets, and this runner has no secret store to read them from")
	}
	ids := make(map[string]string, len(s.Secrets))
	for _, name := range s.Secrets {
		ids[name] = x.def.Secrets[name]
	}
	set := secret.NewSet(x.r.cfg.Secrets, ids)
	env, sums = make(map[string]string, len(ids)), make(map[string]string, len(ids))
	for _, name := range s.Secrets {
		v, err := set.Value(ctx, name)
		if err != nil {
			return nil, nil, fmt.Errorf("the setup step's secret could not be read: %w", err)
		}
		sum := sha256.Sum256([]byte(v))
		env[name], sums[name] = v, hex.EncodeToString(sum[:])
	}
	return env, sums, nil
}

// setupKey is what a setup that succeeded records in the fleet's folder,
// to be skipped next time its inputs are the same: the SHA-256 of the
// command, the timeout, and each listed secret's name and the SHA-256 of
// its value. (sandboxd mixes its own build in, for the sandbox's version.)
func setupKey(s *fleet.Setup, sums map[string]string) string {
	var b strings.Builder
	b.WriteString("agentsfleet setup key v1\n")
	b.WriteString(strconv.Quote(s.Command) + "\n")
	b.WriteString(strconv.Itoa(s.TimeoutSeconds) + "\n")
	for _, name := range s.Secrets { // sorted by Parse
		b.WriteString(name + "=" + sums[name] + "\n")
	}
	sum := sha256.Sum256([]byte(b.String()))
	return hex.EncodeToString(sum[:])
}

// keepsFolder reports whether the fleet's folder outlives the run's
// sandbox: the runner keeps it (keepsFolders), or the launcher does (a
// launch.Placer naming an Agent folder). Only then may a setup be skipped.
func (x *execution) keepsFolder() bool {
	if x.keepsFolders() {
		return true
	}
	p, ok := x.r.cfg.Sandboxes.(launch.Placer)
	return ok && p.Places(x.spec()).Agent != ""
}

// tailUTF8 returns the last n bytes of s, or fewer, not splitting a
// character.
func tailUTF8(s string, n int) string {
	if len(s) <= n {
		return s
	}
	i := len(s) - n
	for i < len(s) && s[i]&0xC0 == 0x80 {
		i++
	}
	return "…" + s[i:]
}
