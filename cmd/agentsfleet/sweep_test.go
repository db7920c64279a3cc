package main

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/agentsfleet/agentsfleet/shared/fleet"
	"github.com/agentsfleet/agentsfleet/shared/store"
)

// TestDevSweepStartsALostRun: the local stack's sweep starts a run that
// was recorded and never invoked (its start lost, the process stopped),
// once it is older than the grace, and the in-process runner finishes it.
func TestDevSweepStartsALostRun(t *testing.T) {
	t.Parallel()
	script := filepath.Join(t.TempDir(), "script.toml")
	if err := os.WriteFile(script, []byte("[[turn]]\ntext = \"swept\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	env := runEnv(map[string]string{"AWS_ENDPOINT_URL": sharedMoto(t), "AGENTSFLEET_MODEL_SCRIPT": script,
		"AGENTSFLEET_SWEEP_GRACE_SECONDS": "1"})
	ctx := context.Background()
	st, err := startStack(ctx, stackOptions{Workdir: openDir(t), StateDir: filepath.Join(t.TempDir(), "state"),
		Table: "agentsfleet-sweep-test", Sandboxd: sandboxdBin}, env)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if err := st.RunSweep(100*time.Millisecond, env); err != nil {
		t.Fatal(err)
	}
	def, err := fleet.ParseTOML([]byte(demoFleet))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.Store.CreateFleet(ctx, store.NewFleet{Name: def.Name, Definition: def.Canonical(), Hash: def.Hash()}); err != nil {
		t.Fatal(err)
	}
	run, _, err := st.Store.CreateRun(ctx, store.NewRun{Fleet: def.Name, Source: store.SourceAPI, Input: []byte("hello")})
	if err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		got, err := st.Store.GetRun(ctx, run.ID)
		if err != nil {
			t.Fatal(err)
		}
		if got.Status.Terminal() {
			if got.Status != store.StatusSucceeded {
				t.Fatalf("run %s (%s); want the sweep's invocation to finish it", got.Status, got.StatusReason)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("run still %s after 30 s: the sweep never started it", got.Status)
		}
	}
	if err := st.RunSweep(time.Second, func(string) string { return "soon" }); err == nil {
		t.Error("RunSweep with a grace that is not seconds = nil, want a usage error")
	}
}
