package local

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/agentsfleet/agentsfleet/shared/sandbox/launch"
)

// warmDir is where generic sandboxes keep their own fleet's folders:
// StateDir/sandboxes/<name>/agent.
const warmDir = "sandboxes"

// Start starts a generic sandbox for a pool (launch/pool) and returns once
// it answers /healthz: a sandboxd over the Launcher's workdir, data and
// workspace like any other, but with an empty fleet's folder of its own,
// StateDir/sandboxes/<name>/agent, which the runner fills through the
// restore of the fleet's folder (runner.Folders) once a run claims it.
// Its ID is "local-<pid>"; its tool timeout is sandboxd's default, since
// no fleet is known yet. kind.Size is not used, as in Acquire;
// kind.Browser gives it Config.Browser, as Spec.Browser does. The sandbox lives
// until Stop, Close, its idle timeout (Config.IdleTimeout) or this
// process's exit; it is reachable, and Connect finds it, from this
// Launcher only. An error wraps launch.ErrStart.
func (l *Launcher) Start(ctx context.Context, kind launch.Kind) (launch.Warm, error) {
	raw := make([]byte, 8+16) // its folder's name, its nonce
	if _, err := rand.Read(raw); err != nil {
		return launch.Warm{}, fmt.Errorf("%w: a warm sandbox: %w", launch.ErrStart, err)
	}
	home := filepath.Join(l.stateDir, warmDir, hex.EncodeToString(raw[:8]))
	agent := filepath.Join(home, "agent")
	// The folders above it stay enterable by the user the commands run as
	// (the workdir's owner, when this process is root); args gives that
	// user the fleet's folder itself.
	err := os.MkdirAll(home, 0o755)
	if err == nil {
		err = os.Mkdir(agent, 0o700)
	}
	if err != nil {
		return launch.Warm{}, fmt.Errorf("%w: a warm sandbox: its fleet's folder: %w", launch.ErrStart, err)
	}
	p, err := l.spawn(ctx, "a warm sandbox", agent, 0, kind.Browser)
	if err != nil {
		_ = os.RemoveAll(home)
		return launch.Warm{}, err
	}
	p.home, p.nonce = home, hex.EncodeToString(raw[8:])
	w := launch.Warm{ID: "local-" + strconv.Itoa(p.cmd.Process.Pid), Size: kind.Size, Browser: kind.Browser, URL: p.sb.Client.URL(),
		Nonce: p.nonce, Started: time.Now()}
	p.sb.ID = w.ID
	if err := l.warm.Hold(w.ID, func(cur *process) *process {
		if cur != nil { // a pid seen twice: the other one has exited
			l.stopWarm(cur)
		}
		return p
	}); err != nil { // closed meanwhile
		l.stopWarm(p)
		return launch.Warm{}, fmt.Errorf("%w: a warm sandbox: %w", launch.ErrStart, err)
	}
	return w, nil
}

// Connect returns w's sandbox, with its real folders in Sandbox.Places
// (the Launcher's workdir, the sandbox's own fleet's folder), after
// checking that its process lives and answers /healthz. An error means w is
// dead, or was not started by this Launcher (another process's sandboxes
// and folders are not this one's to use), and should be discarded.
func (l *Launcher) Connect(ctx context.Context, w launch.Warm) (*launch.Sandbox, error) {
	var sb *launch.Sandbox
	var why string
	l.warm.Peek(w.ID, func(p *process) {
		switch {
		case p == nil:
			why = "not started by this launcher, or stopped"
		case p.nonce != w.Nonce || p.sb.Client.URL() != w.URL:
			why = "its record does not match the sandbox of that id"
		case !p.alive():
			why = "its sandboxd has exited"
		default:
			sb = p.sb
		}
	})
	if sb == nil {
		return nil, fmt.Errorf("local: warm sandbox %s: %s", w.ID, why)
	}
	if err := sb.Client.Health(ctx); err != nil {
		return nil, fmt.Errorf("local: warm sandbox %s: %w", w.ID, err)
	}
	return sb, nil
}

// Stop stops w's sandboxd as Release does (SIGTERM, then SIGKILL after
// Config.StopGrace or when ctx ends), waits for it, and removes its fleet's
// folder: what a run left there is kept only by the run's save. Stopping a
// sandbox that is gone, or that this Launcher did not start, is not an
// error.
func (l *Launcher) Stop(ctx context.Context, w launch.Warm) error {
	var err error
	l.warm.Take(w.ID, func(p *process) { err = l.stopWarmCtx(ctx, p) })
	return err
}

func (l *Launcher) stopWarm(p *process) { _ = l.stopWarmCtx(context.Background(), p) }

func (l *Launcher) stopWarmCtx(ctx context.Context, p *process) error {
	p.stop(ctx, l.grace)
	if p.home == "" {
		return nil
	}
	if err := os.RemoveAll(p.home); err != nil {
		return fmt.Errorf("local: remove the folders of warm sandbox %s: %w", p.sb.ID, err)
	}
	return nil
}

// Warm returns the process ids of the generic sandboxes (Start) that have
// not been stopped and whose process lives.
func (l *Launcher) Warm() []int {
	var pids []int
	l.warm.Each(func(p *process) {
		if p.alive() {
			pids = append(pids, p.cmd.Process.Pid)
		}
	})
	return pids
}
