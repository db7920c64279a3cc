package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/agentsfleet/agentsfleet/shared/emulator"
	"github.com/agentsfleet/agentsfleet/shared/fault"
	"github.com/agentsfleet/agentsfleet/shared/fleet"
	"github.com/agentsfleet/agentsfleet/shared/sandbox/wire"
	"github.com/agentsfleet/agentsfleet/shared/store"
)

// dev runs the local stack until interrupted: the AWS emulator (moto, or
// AWS_ENDPOINT_URL when set), the DynamoDB table with the example fleets,
// and a sandboxd on loopback. Parts that later issues build (the API with
// its Slack and webhook endpoints, the runner, the local clock) are named
// as missing rather than pretended.
func dev(ctx context.Context, args []string, out, errOut io.Writer) error {
	fs := flag.NewFlagSet("dev", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	sandboxAddr := fs.String("sandbox-addr", "127.0.0.1:7070", "where the local sandboxd listens")
	stateDir := fs.String("state", ".dev", "folder for the local sandbox's files")
	tableName := fs.String("table", envOr("AGENTSFLEET_TABLE", "agentsfleet"), "DynamoDB table name")
	if err := fs.Parse(args); err != nil {
		return fmt.Errorf("%w: %v", errUsage, err)
	}

	endpoint := strings.TrimRight(os.Getenv("AWS_ENDPOINT_URL"), "/")
	if endpoint == "" {
		moto, err := emulator.Start(ctx, "127.0.0.1:0")
		if err != nil {
			return fmt.Errorf("start the AWS emulator: %w", err)
		}
		defer moto.Stop()
		endpoint = moto.Endpoint
	}
	cfg, err := emulator.Config(ctx, endpoint)
	if err != nil {
		return err
	}
	db := dynamodb.NewFromConfig(cfg)
	if err := store.CreateTable(ctx, db, *tableName); err != nil {
		return err
	}
	st := store.New(db, *tableName)
	fmt.Fprintf(out, "AWS emulator   %s (table %s)\n", endpoint, *tableName)

	loaded, err := loadExamples(ctx, st, "examples")
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "fleets         %s\n", strings.Join(loaded, ", "))

	sandbox, token, err := startSandbox(ctx, *sandboxAddr, *stateDir, errOut)
	if err != nil {
		return err
	}
	defer func() { _ = sandbox.Process.Signal(os.Interrupt); _ = sandbox.Wait() }()
	fmt.Fprintf(out, "sandboxd       http://%s (token in %s)\n", *sandboxAddr, filepath.Join(*stateDir, "sandboxd.token"))
	fmt.Fprintf(out, "try:           curl -H \"Authorization: Bearer %s\" -d '{\"command\":\"uname -a\"}' http://%s%s\n", token, *sandboxAddr, wire.ToolPath("bash"))
	fmt.Fprintln(out, "web tools      bin/webtools call --hosts HOST TOOL 'JSON'")
	fmt.Fprintln(out, "not built yet: the API (runs, webhooks, Slack events), the runner, the local schedule clock")
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

// startSandbox starts the sandboxd binary that `make build` put beside this
// one, serving on addr with a fresh token, and waits until it is healthy.
func startSandbox(ctx context.Context, addr, stateDir string, errOut io.Writer) (*exec.Cmd, string, error) {
	bin, err := siblingBinary("sandboxd")
	if err != nil {
		return nil, "", err
	}
	work := filepath.Join(stateDir, "work")
	agent := filepath.Join(stateDir, "agent")
	for _, d := range []string{work, agent} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, "", fmt.Errorf("create %s: %w", d, err)
		}
	}
	// Run as root, sandboxd acts as 65534:65534 (nobody, its default
	// --user), which must own the writable roots.
	if os.Geteuid() == 0 {
		for _, d := range []string{work, agent} {
			if err := os.Chown(d, 65534, 65534); err != nil {
				return nil, "", fmt.Errorf("give %s to the sandbox's user: %w", d, err)
			}
		}
	}
	raw := make([]byte, 32)
	if _, err := rand.Read(raw); err != nil {
		return nil, "", err
	}
	token := hex.EncodeToString(raw)
	if err := os.WriteFile(filepath.Join(stateDir, "sandboxd.token"), []byte(token+"\n"), 0o600); err != nil {
		return nil, "", err
	}
	cmd := exec.CommandContext(ctx, bin, "serve", "--listen", addr, "--workdir", work, "--agent", agent, "--idle-timeout", "0")
	cmd.Env = append(os.Environ(), wire.TokenEnv+"="+token)
	cmd.Stdout, cmd.Stderr = errOut, errOut
	if err := cmd.Start(); err != nil {
		return nil, "", fmt.Errorf("start sandboxd: %w", err)
	}
	health := exec.CommandContext(ctx, bin, "health", "--addr", addr)
	for deadline := time.Now().Add(10 * time.Second); ; {
		if health.Run() == nil {
			return cmd, token, nil
		}
		if time.Now().After(deadline) {
			_ = cmd.Process.Kill()
			return nil, "", errors.New("sandboxd did not become healthy within 10s")
		}
		time.Sleep(100 * time.Millisecond)
		health = exec.CommandContext(ctx, bin, "health", "--addr", addr)
	}
}

// siblingBinary finds name next to this executable, then on PATH.
func siblingBinary(name string) (string, error) {
	if self, err := os.Executable(); err == nil {
		p := filepath.Join(filepath.Dir(self), name)
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
	}
	p, err := exec.LookPath(name)
	if err != nil {
		return "", fmt.Errorf("%s not found beside agentsfleet or on PATH (run make build): %w", name, err)
	}
	return p, nil
}
