package main

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestDevServesTheAPI starts `agentsfleet dev` in-process and drives it
// through its port: the key it wrote, a run started over HTTP, its events.
func TestDevServesTheAPI(t *testing.T) {
	t.Parallel()
	state := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- dev(ctx, []string{"--workdir", openDir(t), "--state", state, "--table", "dev-test"}, pw, io.Discard,
			runEnv(map[string]string{"AGENTSFLEET_ADDR": "127.0.0.1:0", "AGENTSFLEET_SANDBOX_WARM": "small=0", envBrowser: browserOff}))
		pw.Close()
	}()
	var base string
	lines := bufio.NewScanner(pr)
	var printed []string
	for lines.Scan() {
		line := lines.Text()
		printed = append(printed, line)
		if rest, ok := strings.CutPrefix(line, "API            "); ok {
			base, _, _ = strings.Cut(rest, " ")
		}
		if strings.HasPrefix(line, "Ctrl-C") {
			break
		}
	}
	go io.Copy(io.Discard, pr)
	if base == "" {
		t.Fatalf("dev printed no API line:\n%s", strings.Join(printed, "\n"))
	}
	for _, want := range []string{"browser tools  not available: AGENTSFLEET_BROWSER=off turns them off", "not built yet  " + notBuilt} {
		if !slices.Contains(printed, want) {
			t.Errorf("dev printed no %q:\n%s", want, strings.Join(printed, "\n"))
		}
	}
	keyFile := filepath.Join(state, "api-key")
	fi, err := os.Stat(keyFile)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("key file %v, %v; want mode 0600", fi, err)
	}
	raw, _ := os.ReadFile(keyFile)
	key := strings.TrimSpace(string(raw))

	call := func(method, path, body string) map[string]any {
		req, _ := http.NewRequest(method, base+path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+key)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var out map[string]any
		json.NewDecoder(resp.Body).Decode(&out)
		if resp.StatusCode >= 300 {
			t.Fatalf("%s %s = %d %v", method, path, resp.StatusCode, out)
		}
		return out
	}
	started := call("POST", "/v1/fleets/minimal/runs", `{"input": "hello"}`)
	id, _ := started["run_id"].(string)
	var run map[string]any
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		run = call("GET", "/v1/runs/"+id, "")
		if s := run["status"]; s == "succeeded" || s == "failed" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("run %v did not end", run)
		}
	}
	if run["status"] != "succeeded" || run["answer"] == "" {
		t.Fatalf("run = %v", run)
	}
	evs := call("GET", "/v1/runs/"+id+"/events", "")["events"].([]any)
	if first := evs[0].(map[string]any); first["type"] != "run.started" {
		t.Fatalf("events = %v", evs)
	}
	// A follow-up a few seconds ahead: the local clock fires it into a run.
	at := time.Now().UTC().Add(3 * time.Second).Format("2006-01-02T15:04:05")
	sched := call("POST", "/v1/fleets/minimal/schedules", `{"expression": "at(`+at+`)", "message": "from the clock"}`)
	if sched["source"] != "person" || sched["one_shot"] != true {
		t.Fatalf("schedule = %v", sched)
	}
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		found := false
		for _, r := range call("GET", "/v1/fleets/minimal/runs", "")["runs"].([]any) {
			if r := r.(map[string]any); r["source"] == "schedule" && r["schedule_id"] == sched["schedule_id"] {
				found = true
			}
		}
		if found {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the clock did not fire the follow-up into a run")
		}
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("dev did not stop")
	}
	if _, err := http.Get(base + "/v1/fleets"); err == nil {
		t.Fatal("the API still answers after dev stopped")
	}
}
