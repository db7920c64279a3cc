package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/agentsfleet/agentsfleet/shared/emulator"
	"github.com/agentsfleet/agentsfleet/shared/fleet"
	afrun "github.com/agentsfleet/agentsfleet/shared/run"
	"github.com/agentsfleet/agentsfleet/shared/runner"
	"github.com/agentsfleet/agentsfleet/shared/sandbox/launch/pool"
	"github.com/agentsfleet/agentsfleet/shared/store"
)

// sharedMoto starts an emulator that outlives the stacks of a test, so
// that what they leave in it can be looked at after they close.
func sharedMoto(t *testing.T) string {
	t.Helper()
	moto, err := emulator.Start(context.Background(), "127.0.0.1:0")
	if err != nil {
		t.Fatalf("start moto: %v", err)
	}
	t.Cleanup(moto.Stop)
	return moto.Endpoint
}

// warmFolders are the fleet's folders of the warm sandboxes under state.
func warmFolders(t *testing.T, state string) []string {
	t.Helper()
	dirs, err := filepath.Glob(filepath.Join(state, "sandboxes", "*", "agent"))
	if err != nil {
		t.Fatal(err)
	}
	return dirs
}

func alive(pid int) bool {
	if syscall.Kill(pid, 0) != nil {
		return false
	}
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if i := bytes.LastIndexByte(stat, ')'); err == nil && i > 0 && i+2 < len(stat) {
		return stat[i+2] != 'Z'
	}
	return err == nil
}

// Two runs of a fleet on the local stack with a warm pool: each claims a
// warm sandboxd whose fleet's folder is its own and empty, the first
// writes a note there and the runner saves the folder to the emulator's
// bucket, the second (another sandbox, another folder) finds the note
// restored. Closing the stack leaves no sandboxd, no folder and no record.
func TestWarmPoolRunsKeepTheFleetsFolder(t *testing.T) {
	t.Parallel()
	endpoint := sharedMoto(t)
	work, state := openDir(t), filepath.Join(t.TempDir(), "state")
	script := filepath.Join(t.TempDir(), "script.toml")
	os.WriteFile(script, []byte(`[[turn]]
[[turn.tool_call]]
name = "bash"
arguments = { command = "cd {{input}} && { cat note.txt 2>/dev/null || echo 'no note'; } && echo 'from the last run' > note.txt" }
[[turn]]
text = "{{last_output}}"
`), 0o644)
	env := runEnv(map[string]string{"AWS_ENDPOINT_URL": endpoint, "AGENTSFLEET_MODEL_SCRIPT": script})
	table := "agentsfleet-pool-test"
	ctx := context.Background()
	var mu sync.Mutex
	var answers, saved []string
	observe := func(n runner.Note) {
		if n.Event == nil {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		switch n.Event.Type {
		case "run.ended":
			var end afrun.RunEnded
			json.Unmarshal(n.Event.Data, &end)
			answers = append(answers, end.Answer)
		case afrun.EventFolderSaved, afrun.EventFolderNotSaved:
			saved = append(saved, n.Event.Type)
		}
	}
	st, err := startStack(ctx, stackOptions{Workdir: work, StateDir: state, Table: table, Sandboxd: sandboxdBin,
		Warm: map[fleet.SandboxSize]int{fleet.SizeSmall: 1}, Observer: observe}, env)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	def, err := fleet.ParseTOML([]byte(demoFleet))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.Store.CreateFleet(ctx, store.NewFleet{Name: def.Name, Definition: def.Canonical(), Hash: def.Hash()}); err != nil {
		t.Fatal(err)
	}

	var folders []string
	for i := range 2 {
		st.Pool.Wait() // the top-up after the last claim
		dirs := warmFolders(t, state)
		if len(dirs) != 1 {
			t.Fatalf("run %d: warm folders %v, want the one idle sandbox's", i+1, dirs)
		}
		// The one idle sandbox is the one this run claims: its folder is
		// where the script writes.
		run, _, err := st.Store.CreateRun(ctx, store.NewRun{Fleet: def.Name, Source: store.SourceAPI, Input: []byte(dirs[0])})
		if err != nil {
			t.Fatal(err)
		}
		if err := st.Runner.Run(ctx, run.ID); err != nil {
			t.Fatalf("run %d: %v", i+1, err)
		}
		ended, err := st.Store.GetRun(ctx, run.ID)
		if err != nil || ended.Status != store.StatusSucceeded {
			t.Fatalf("run %d: %+v, %v; want it succeeded", i+1, ended, err)
		}
		folders = append(folders, dirs[0])
	}
	if folders[0] == folders[1] {
		t.Errorf("both runs had the folder %s, want a sandbox each", folders[0])
	}
	mu.Lock()
	defer mu.Unlock()
	if strings.Join(saved, " ") != "folder.saved folder.saved" {
		t.Errorf("folder events %q, want each run's folder saved", saved)
	}
	if len(answers) != 2 || !strings.Contains(answers[0], "no note") || !strings.Contains(answers[1], "from the last run") {
		t.Errorf("answers %q, want the first to find no note and the second the first's, restored", answers)
	}
	if got := st.Pool.Stats(); got.Claimed != 2 || got.Cold != 0 {
		t.Errorf("pool stats %+v, want 2 warm claims and no cold start", got)
	}

	st.Pool.Wait()
	pids := st.Sandbox.Warm()
	if len(pids) == 0 {
		t.Fatal("no warm sandboxd left to stop: the pool was not topped up")
	}
	st.Close()
	for _, pid := range pids {
		if alive(pid) {
			t.Errorf("warm sandboxd %d still runs after Close", pid)
		}
	}
	if dirs := warmFolders(t, state); len(dirs) != 0 {
		t.Errorf("warm folders %v after Close, want none", dirs)
	}
	cfg, err := emulator.Config(ctx, endpoint)
	if err != nil {
		t.Fatal(err)
	}
	records := store.New(dynamodb.NewFromConfig(cfg), table)
	for _, size := range fleet.SandboxSizes() {
		if recs, err := records.ListPool(ctx, string(size)); err != nil || len(recs) != 0 {
			t.Errorf("pool records of %s after Close: %+v, %v; want none", size, recs, err)
		}
	}
}

// `agentsfleet run` with AGENTSFLEET_SANDBOX_WARM runs on a warm sandbox
// and leaves none behind.
func TestRunWithWarmPool(t *testing.T) {
	t.Parallel()
	work, state := openDir(t), filepath.Join(t.TempDir(), "state")
	os.WriteFile(filepath.Join(work, "README.md"), []byte("# hello from the workdir\n"), 0o644)
	def := filepath.Join(t.TempDir(), "demo.toml")
	os.WriteFile(def, []byte(demoFleet), 0o644)
	var out, errOut bytes.Buffer
	err := runCmd(context.Background(), []string{"-f", def, "--workdir", work, "--state", state, "what", "is", "here?"}, &out, &errOut,
		runEnv(map[string]string{pool.TargetsEnv: "small=1"}))
	if err != nil {
		t.Fatalf("run: %v\n%s\n%s", err, out.String(), errOut.String())
	}
	if !strings.Contains(out.String(), "# hello from the workdir") {
		t.Errorf("output lacks the workdir's README:\n%s", out.String())
	}
	if dirs := warmFolders(t, state); len(dirs) != 0 {
		t.Errorf("warm folders %v after the run, want none", dirs)
	}
	bad := runCmd(context.Background(), []string{"-f", def, "--workdir", work, "--state", state, "go"}, &out, &errOut,
		runEnv(map[string]string{pool.TargetsEnv: "small=lots"}))
	if !errors.Is(bad, errUsage) || !strings.Contains(bad.Error(), pool.TargetsEnv) {
		t.Errorf("run with %s=small=lots = %v, want a usage error naming it", pool.TargetsEnv, bad)
	}
}
