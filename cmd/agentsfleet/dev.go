package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/agentsfleet/agentsfleet/shared/emulator"
	"github.com/agentsfleet/agentsfleet/shared/fault"
	"github.com/agentsfleet/agentsfleet/shared/fleet"
	"github.com/agentsfleet/agentsfleet/shared/sandbox/launch/pool"
	"github.com/agentsfleet/agentsfleet/shared/scope"
	"github.com/agentsfleet/agentsfleet/shared/store"
)

// devWarm is dev's warm pool when AGENTSFLEET_SANDBOX_WARM is unset.
const devWarm = "small=1"

// dev runs the whole product on this machine until interrupted: the AWS
// emulator (moto, or AWS_ENDPOINT_URL when set) with the table and the
// example fleets, the runner and the webtools in-process, sandboxes as
// local sandboxd processes over the workdir (one small one kept warm), the
// schedules' local clock, and on AGENTSFLEET_ADDR (127.0.0.1:8080) the
// HTTP API with its webhooks and Slack's /slack/events and
// /slack/interactivity (when the Slack settings are given; dev says how
// otherwise). It writes a key of every scope to STATE/api-key and the
// webhook secret of the fleet it offers to try to STATE/webhook-secret,
// and prints what runs where and three things to try.
func dev(ctx context.Context, args []string, out, errOut io.Writer, getenv func(string) string) error {
	fs := flag.NewFlagSet("dev", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	workdir := fs.String("workdir", ".", "the folder the runs' tools work in")
	stateDir := fs.String("state", ".dev", "folder for the fleets' folders (/agent) and the sandboxes' state")
	table := getenv(store.EnvTable)
	if table == "" {
		table = "agentsfleet"
	}
	tableName := fs.String("table", table, "DynamoDB table name")
	if err := fs.Parse(args); err != nil {
		return fmt.Errorf("%w: %v", errUsage, err)
	}
	if err := needsLinux("dev", runtime.GOOS); err != nil {
		return err
	}
	work, err := filepath.Abs(*workdir)
	if err != nil {
		return fmt.Errorf("%w: --workdir: %v", errUsage, err)
	}
	// dev keeps one small sandbox warm unless told otherwise, so that the
	// pool (claim, top-up, sweep, the fleet's folder through the bucket)
	// runs here as it does in AWS; small=0 turns it off.
	warm, err := warmSetting(getenv, devWarm)
	if err != nil {
		return err
	}
	chromium, browserWarm, err := browserSetting(getenv)
	if err != nil {
		return err
	}
	st, err := startStack(ctx, stackOptions{Workdir: work, StateDir: *stateDir, Table: *tableName,
		Sandboxd: getenv("AGENTSFLEET_SANDBOXD"), Warm: warm, Browser: chromium, BrowserWarm: browserWarm, Sweep: time.Minute}, getenv)
	if err != nil {
		return err
	}
	defer st.Close()
	addr := getenv("AGENTSFLEET_ADDR")
	if addr == "" {
		addr = defaultAddr
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("serve the API on %s (AGENTSFLEET_ADDR): %w; is another agentsfleet dev running?", addr, err)
	}
	mux := http.NewServeMux()
	mux.Handle("/", st.API)
	slackLine := "not configured: set AGENTSFLEET_SLACK_SIGNING_SECRET and AGENTSFLEET_SLACK_BOT_TOKEN (and AGENTSFLEET_SLACK_API_URL for another Web API) to serve them"
	if st.Slack != nil {
		mux.Handle("/slack/", st.Slack)
		slackLine = "on the same port, the runs' threads posted through the Slack Web API"
	} else {
		mux.HandleFunc("/slack/", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusNotImplemented)
			fmt.Fprintf(w, `{"error": {"code": "not_configured", "message": %q}}`, "Slack is "+slackLine)
		})
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go srv.Serve(ln)
	defer func() {
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		srv.Shutdown(sctx)
	}()
	st.RunClock()
	if err := st.RunSweep(devSweep, getenv); err != nil {
		return err
	}
	keyFile, err := writeDevKey(ctx, st.Store, *stateDir)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "AWS emulator   %s (table %s, checkpoint bucket %s)\n", st.Endpoint, st.Table, checkpointBucket)
	fmt.Fprintf(out, "API            http://%s (an API key with every scope in %s)\n", ln.Addr(), keyFile)

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
	fmt.Fprintf(out, "schedules      in the emulator's Scheduler (group %s), fired by a local clock as Scheduler would\n", scheduleGroup)
	if st.Pool != nil {
		fmt.Fprintf(out, "sandboxes      warm pool on: %s idle local sandboxd kept (%s; small=0 turns it off), a claimed one per run, over %s (fleets' folders in s3://%s/fleets/)\n",
			pool.FormatTargets(st.Warm), pool.TargetsEnv, work, checkpointBucket)
	} else {
		fmt.Fprintf(out, "sandboxes      a local sandboxd process per run, over %s (fleets' folders in %s)\n", work, filepath.Join(*stateDir, "agents"))
	}
	fmt.Fprintf(out, "browser tools  %s\n", chromium)
	if pool.FormatTargets(st.BrowserWarm) != "none" {
		fmt.Fprintf(out, "               %s idle local sandboxd with Chromium kept (%s)\n", pool.FormatTargets(st.BrowserWarm), pool.BrowserTargetsEnv)
	}
	if slices.Contains(loaded, tryFleet) {
		hookFile, err := writeDevHookSecret(ctx, st.Store, *stateDir, tryFleet)
		if err != nil {
			return err
		}
		fmt.Fprintln(out, "try:")
		for _, line := range tryLines("http://"+ln.Addr().String(), keyFile, hookFile) {
			fmt.Fprintln(out, "  "+line)
		}
	}
	fmt.Fprintf(out, "Slack          /slack/events and /slack/interactivity %s\n", slackLine)
	fmt.Fprintf(out, "extensions     declared tools and setup steps in the local sandboxes; remote MCP servers through the webtools function\n")
	fmt.Fprintln(out, "improvements   chats on the in-process runner's agent: bin/agentsfleet improve FLEET, bin/agentsfleet revisions FLEET")
	fmt.Fprintln(out, "cost           each run's, estimated, in its run.ended and GET /v1/runs/{id} (AGENTSFLEET_MODEL_PRICES prices the model)")
	if st.Metrics {
		fmt.Fprintln(out, "metrics        the runs' CloudWatch metrics, printed as EMF documents (AGENTSFLEET_METRICS=on)")
	} else {
		fmt.Fprintln(out, "metrics        off here (AGENTSFLEET_METRICS=on prints the EMF documents the runner λ logs)")
	}
	fmt.Fprintf(out, "not built yet  %s\n", notBuilt)
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
		_, err = st.CreateFleet(ctx, store.NewFleet{Name: def.Name, Definition: def.Canonical(), Hash: def.Hash(), Origin: store.Origin{Via: store.OriginLocal}})
		if err != nil && !errors.Is(err, fault.FleetExists) {
			return nil, fmt.Errorf("create fleet %s: %w", def.Name, err)
		}
		names = append(names, def.Name)
	}
	return names, nil
}

// defaultAddr is where dev serves the API without AGENTSFLEET_ADDR.
const defaultAddr = "127.0.0.1:8080"

// tryFleet is the example fleet of the three things dev offers to try.
const tryFleet = "reference-fleet"

// notBuilt names what the product does not have yet, so that nobody looks
// for it in the local stack.
const notBuilt = "self-managed runners, the web console, OpenTelemetry traces, repositories and pull requests"

// tryLines are three things to try against dev at base: a run started
// with curl, one with the CLI, and a signed webhook delivery (the secret in
// hookFile), each a line for a shell in the repository's root.
func tryLines(base, keyFile, hookFile string) []string {
	return []string{
		fmt.Sprintf(`curl -s -H "Authorization: Bearer $(cat %s)" -d '{"input": "what is in this folder?"}' %s/v1/fleets/%s/runs`, keyFile, base, tryFleet),
		fmt.Sprintf(`bin/agentsfleet start %s "what is in this folder?" --follow`, tryFleet),
		fmt.Sprintf(`BODY='{"alert": "disk full on web-1"}'; TS=$(date +%%s); SIG=$(printf '%%s.%%s' "$TS" "$BODY" | openssl dgst -sha256 -hmac "$(cat %s)" | sed 's/^.* //'); `+
			`curl -s -H "X-Agentsfleet-Timestamp: $TS" -H "X-Agentsfleet-Signature: v1=$SIG" -d "$BODY" %s/v1/hooks/%s`, hookFile, base, tryFleet),
	}
}

// writeDevHookSecret gives fleet a webhook secret, unless it has one, and
// writes it to stateDir/webhook-secret, readable by this user only.
func writeDevHookSecret(ctx context.Context, st *store.Store, stateDir, fleet string) (string, error) {
	secret, err := st.WebhookSecret(ctx, fleet)
	if errors.Is(err, fault.HookNoSecret) {
		secret, err = st.RotateWebhookSecret(ctx, fleet)
	}
	if err != nil {
		return "", fmt.Errorf("the webhook secret of %s: %w", fleet, err)
	}
	return writePrivate(filepath.Join(stateDir, "webhook-secret"), secret)
}

// writePrivate writes value and a newline to path, readable by this user
// only, making its folder if need be.
func writePrivate(path, value string) (string, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return "", fmt.Errorf("write %s: %w", path, err)
	}
	err := os.WriteFile(path, []byte(value+"\n"), 0o600)
	if err == nil {
		err = os.Chmod(path, 0o600) // a file left by an older dev keeps its mode otherwise
	}
	if err != nil {
		return "", fmt.Errorf("write %s: %w", path, err)
	}
	return path, nil
}

// writeDevKey makes an API key with every scope and writes it to
// stateDir/api-key, readable by this user only. The emulator's table lives
// as long as the emulator, so each dev makes a fresh key.
func writeDevKey(ctx context.Context, st *store.Store, stateDir string) (string, error) {
	_, key, err := st.CreateKey(ctx, "agentsfleet dev", scope.Names())
	if err != nil {
		return "", fmt.Errorf("make the dev API key: %w", err)
	}
	return writePrivate(filepath.Join(stateDir, "api-key"), key)
}
