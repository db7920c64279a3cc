package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"

	"github.com/agentsfleet/agentsfleet/shared/fault"
	"github.com/agentsfleet/agentsfleet/shared/fleet"
	"github.com/agentsfleet/agentsfleet/shared/runner"
	"github.com/agentsfleet/agentsfleet/shared/store"
)

// errRunFailed is a run that ended without succeeding: exit status 1, the
// reason already printed.
var errRunFailed = errors.New("the run did not succeed")

// runCmd is `agentsfleet run -f DEFINITION [--workdir DIR] [--output json]
// INPUT`: one whole run on this machine, on the local stack, with its
// events printed as they happen and then its answer.
func runCmd(ctx context.Context, args []string, stdout, stderr io.Writer, getenv func(string) string) error {
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	file := fs.String("f", "", "the fleet's Definition (.toml or .json)")
	workdir := fs.String("workdir", ".", "the folder the run's tools work in")
	output := fs.String("output", "text", "text, or json for one event a line")
	state := fs.String("state", "", "folder for the fleets' folders (/agent); default: agentsfleet under the user's cache folder")
	var env multiFlag
	fs.Var(&env, "env", "a variable of this environment the run's commands also get (PATH always); repeatable")
	if err := fs.Parse(args); err != nil {
		return fmt.Errorf("%w: %v", errUsage, err)
	}
	input := strings.TrimSpace(strings.Join(fs.Args(), " "))
	switch {
	case *file == "":
		return fmt.Errorf("%w: run needs -f DEFINITION", errUsage)
	case input == "":
		return fmt.Errorf("%w: run needs the INPUT: what to ask the fleet", errUsage)
	case *output != "text" && *output != "json":
		return fmt.Errorf("%w: --output is text or json, not %q", errUsage, *output)
	}
	if err := needsLinux("run", runtime.GOOS); err != nil {
		return err
	}
	def, err := readDefinition(*file)
	if err != nil {
		return err
	}
	work, err := filepath.Abs(*workdir)
	if err != nil {
		return fmt.Errorf("%w: --workdir %s: %v", errUsage, *workdir, err)
	}
	if fi, err := os.Stat(work); err != nil || !fi.IsDir() {
		return fmt.Errorf("%w: --workdir %s is not a folder", errUsage, *workdir)
	}
	stateDir := *state
	if stateDir == "" {
		cache, err := os.UserCacheDir()
		if err != nil {
			return fmt.Errorf("no folder for the fleets' folders (/agent): %v; give one with --state", err)
		}
		stateDir = filepath.Join(cache, "agentsfleet")
	}

	// One run gains nothing from a warm pool: it is there to be seen and
	// tested (AGENTSFLEET_SANDBOX_WARM=small=1), not on by default.
	warm, err := warmSetting(getenv, "")
	if err != nil {
		return err
	}
	chromium, browserWarm, err := browserSetting(getenv)
	if err != nil {
		return err
	}
	var view viewer
	if *output == "json" {
		view = &jsonView{out: stdout}
	} else {
		view = newTextView(stdout, isTerminal(stdout))
	}
	st, err := startStack(ctx, stackOptions{Workdir: work, StateDir: stateDir, Table: "agentsfleet-run", Env: env,
		Sandboxd: getenv("AGENTSFLEET_SANDBOXD"), Observer: view.note, Warm: warm, Browser: chromium, BrowserWarm: browserWarm}, getenv)
	if err != nil {
		return err
	}
	defer st.Close()
	// On stderr: stdout is the run's events, one JSON object a line with
	// --output json.
	fmt.Fprintf(stderr, "browser tools: %s\n", chromium)
	view.started(def.Name, st.Model.About, work)

	if _, err := st.Store.CreateFleet(ctx, store.NewFleet{Name: def.Name, Definition: def.Canonical(), Hash: def.Hash(), Origin: store.Origin{Via: store.OriginLocal}}); errors.Is(err, fault.FleetExists) {
		_, err = st.Store.AppendRevision(ctx, def.Name, def.Canonical(), def.Hash(), store.Origin{Via: store.OriginLocal})
		if err != nil {
			return err
		}
	} else if err != nil {
		return err
	}
	run, _, err := st.Store.CreateRun(ctx, store.NewRun{Fleet: def.Name, Source: store.SourceAPI, Input: []byte(input),
		Limits: store.Budget{Tokens: def.Limits.Budget.Tokens, ToolCalls: int64(def.Limits.Budget.ToolCalls)}})
	if err != nil {
		return err
	}
	err = st.Runner.Run(ctx, run.ID)
	st.Funcs.Wait() // an invocation that took the run over
	if ctx.Err() != nil {
		// Interrupted (Ctrl-C): the run is cancelled, not left running.
		if _, terr := st.Store.Transition(context.WithoutCancel(ctx), run.ID, store.StatusCancelled, "interrupted"); terr != nil && !errors.Is(terr, fault.RunBadTransition) {
			return terr
		}
		view.finished()
		fmt.Fprintln(stderr, "agentsfleet: run interrupted and cancelled")
		return errRunFailed
	}
	if err != nil {
		return err
	}
	ended, err := st.Store.GetRun(ctx, run.ID)
	if err != nil {
		return err
	}
	view.finished()
	if ended.Status == store.StatusWaiting {
		return waitedLocally(ctx, st.Store, run.ID, stderr)
	}
	if ended.Status != store.StatusSucceeded {
		return errRunFailed
	}
	return nil
}

// waitedLocally ends a one-shot run that waits for a person's approval:
// nobody can give one to `agentsfleet run`, which has no API. It says
// which calls waited and where they can be approved, and cancels the run.
func waitedLocally(ctx context.Context, st *store.Store, runID string, stderr io.Writer) error {
	all, err := st.ListApprovals(ctx, runID)
	if err != nil {
		return err
	}
	for _, a := range all {
		if a.Secret != "" {
			fmt.Fprintf(stderr, "agentsfleet: %s waits for approval of the secret %s for %s %s\n", a.Tool, a.Secret, a.Method, a.Host)
		} else {
			fmt.Fprintf(stderr, "agentsfleet: %s waits for approval: %s\n", a.Tool, a.Arguments)
		}
	}
	fmt.Fprintln(stderr, "agentsfleet: `agentsfleet run` has nobody to ask, so the run is cancelled; "+
		"run the fleet under `agentsfleet dev` and decide with `agentsfleet approve|deny`, or leave the calls out of [x-agentsfleet.approval]")
	if _, err := st.Transition(context.WithoutCancel(ctx), runID, store.StatusCancelled, "waited for approval under agentsfleet run"); err != nil && !errors.Is(err, fault.RunBadTransition) {
		return err
	}
	return errRunFailed
}

// readDefinition parses a Definition file; a bad one is a usage error that
// names its problems.
func readDefinition(name string) (*fleet.Definition, error) {
	format, ok := fleet.FormatOf(name)
	if !ok {
		return nil, fmt.Errorf("%w: %s: a Definition file ends in .toml or .json", errUsage, name)
	}
	data, err := os.ReadFile(name)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", errUsage, err)
	}
	def, err := fleet.Parse(data, format)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", errUsage, name, err)
	}
	return def, nil
}

// multiFlag is a repeatable string flag.
type multiFlag []string

func (m *multiFlag) String() string     { return strings.Join(*m, ",") }
func (m *multiFlag) Set(v string) error { *m = append(*m, v); return nil }

// viewer shows a run as it happens.
type viewer interface {
	started(fleet, model, workdir string)
	note(runner.Note)
	finished()
}

// jsonView prints each committed event as one JSON object a line:
// {seq, type, time, data}.
type jsonView struct {
	mu  sync.Mutex
	out io.Writer
}

func (*jsonView) started(string, string, string) {}
func (*jsonView) finished()                      {}

func (v *jsonView) note(n runner.Note) {
	if n.Event == nil {
		return
	}
	b, _ := json.Marshal(n.Event)
	v.mu.Lock()
	defer v.mu.Unlock()
	fmt.Fprintf(v.out, "%s\n", b)
}
