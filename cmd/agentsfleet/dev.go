package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/agentsfleet/agentsfleet/shared/emulator"
	"github.com/agentsfleet/agentsfleet/shared/fault"
	"github.com/agentsfleet/agentsfleet/shared/fleet"
	"github.com/agentsfleet/agentsfleet/shared/sandbox/launch/pool"
	"github.com/agentsfleet/agentsfleet/shared/store"
)

// devWarm is dev's warm pool when AGENTSFLEET_SANDBOX_WARM is unset.
const devWarm = "small=1"

// dev runs the local stack until interrupted: the AWS emulator (moto, or
// AWS_ENDPOINT_URL when set) with the table and the example fleets, the
// runner and the webtools in-process, and sandboxes as local sandboxd
// processes over the workdir. Parts that later issues build (the API with
// its Slack and webhook endpoints, the local schedule clock) are named as
// missing rather than pretended.
func dev(ctx context.Context, args []string, out, errOut io.Writer) error {
	fs := flag.NewFlagSet("dev", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	workdir := fs.String("workdir", ".", "the folder the runs' tools work in")
	stateDir := fs.String("state", ".dev", "folder for the fleets' folders (/agent) and the sandboxes' state")
	tableName := fs.String("table", envOr("AGENTSFLEET_TABLE", "agentsfleet"), "DynamoDB table name")
	if err := fs.Parse(args); err != nil {
		return fmt.Errorf("%w: %v", errUsage, err)
	}
	work, err := filepath.Abs(*workdir)
	if err != nil {
		return fmt.Errorf("%w: --workdir: %v", errUsage, err)
	}
	// dev keeps one small sandbox warm unless told otherwise, so that the
	// pool (claim, top-up, sweep, the fleet's folder through the bucket)
	// runs here as it does in AWS; small=0 turns it off.
	warm, err := warmSetting(os.Getenv, devWarm)
	if err != nil {
		return err
	}
	st, err := startStack(ctx, stackOptions{Workdir: work, StateDir: *stateDir, Table: *tableName,
		Sandboxd: os.Getenv("AGENTSFLEET_SANDBOXD"), Warm: warm, Sweep: time.Minute}, os.Getenv)
	if err != nil {
		return err
	}
	defer st.Close()
	fmt.Fprintf(out, "AWS emulator   %s (table %s, checkpoint bucket %s)\n", st.Endpoint, st.Table, checkpointBucket)

	examples := "examples"
	if root, err := emulator.RepoRoot(); err == nil {
		examples = filepath.Join(root, "examples")
	}
	loaded, err := loadExamples(ctx, st.Store, examples)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "fleets         %s\n", strings.Join(loaded, ", "))
	fmt.Fprintf(out, "model          %s\n", st.Model.About)
	fmt.Fprintln(out, "runner         in-process, with the webtools function")
	if st.Pool != nil {
		fmt.Fprintf(out, "sandboxes      warm pool on: %s idle local sandboxd kept (%s; small=0 turns it off), a claimed one per run, over %s (fleets' folders in s3://%s/fleets/)\n",
			pool.FormatTargets(st.Warm), pool.TargetsEnv, work, checkpointBucket)
	} else {
		fmt.Fprintf(out, "sandboxes      a local sandboxd process per run, over %s (fleets' folders in %s)\n", work, filepath.Join(*stateDir, "agents"))
	}
	fmt.Fprintln(out, `try:           bin/agentsfleet run -f examples/reference.toml "what is in this folder?"`)
	fmt.Fprintln(out, `               bin/sandboxd call --workdir . bash '{"command":"uname -a"}'`)
	fmt.Fprintln(out, "not built yet: the API (runs, webhooks, Slack events) that starts runs here, and the local schedule clock")
	fmt.Fprintln(out, "Ctrl-C stops everything.")

	<-ctx.Done()
	return nil
}

// loadExamples creates a fleet for every Definition in dir that is not
// there yet, and returns their names.
func loadExamples(ctx context.Context, st *store.Store, dir string) ([]string, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.toml"))
	if err != nil {
		return nil, err
	}
	var names []string
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return nil, fmt.Errorf("read example: %w", err)
		}
		def, err := fleet.ParseTOML(data)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", f, err)
		}
		_, err = st.CreateFleet(ctx, store.NewFleet{Name: def.Name, Definition: def.Canonical(), Hash: def.Hash()})
		if err != nil && !errors.Is(err, fault.FleetExists) {
			return nil, fmt.Errorf("create fleet %s: %w", def.Name, err)
		}
		names = append(names, def.Name)
	}
	return names, nil
}
