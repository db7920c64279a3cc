package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/agentsfleet/agentsfleet/shared/api"
	"github.com/agentsfleet/agentsfleet/shared/api/apitest"
	"github.com/agentsfleet/agentsfleet/shared/invoke"
)

// apiEnv is the real HTTP API (shared/api) over a fresh table on moto: a
// runner on the scripted model behind a local invoker, and schedules kept
// over moto's EventBridge Scheduler. bare is the same API without
// schedules.
type apiEnv struct {
	srv, bare *httptest.Server
	admin     string
	local     *invoke.Local
	dir       string // files for the test
}

func newAPIEnv(t *testing.T) *apiEnv {
	t.Helper()
	full := apitest.New(t, apitest.Options{Script: apitest.PlanScript, Schedules: true})
	bare := apitest.New(t, apitest.Options{Script: apitest.PlanScript,
		API: func(c *api.Config) { c.Store, c.Invoker = full.Store, full.Local }})
	return &apiEnv{srv: full.HTTP, bare: bare.HTTP, admin: full.Admin, local: full.Local, dir: t.TempDir()}
}

// cli runs a remote command with --api and --key of the admin key, and no
// environment.
func (e *apiEnv) cli(args ...string) (string, error) {
	return e.cliEnv(nil, append(args, "--api", e.srv.URL, "--key", e.admin)...)
}

// cliEnv runs a remote command with env as its environment and the local
// stack's key file in e.dir.
func (e *apiEnv) cliEnv(env map[string]string, args ...string) (string, error) {
	var out bytes.Buffer
	re := remoteEnv{out: &out, getenv: func(k string) string { return env[k] }, devKey: filepath.Join(e.dir, "api-key")}
	err := re.run(context.Background(), args)
	return out.String(), err
}

func (e *apiEnv) file(t *testing.T, name, text string) string {
	t.Helper()
	p := filepath.Join(e.dir, name)
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// jsonLines decodes out as one JSON object a line.
func jsonLines(t *testing.T, out string) []map[string]any {
	t.Helper()
	var objs []map[string]any
	for _, line := range strings.Split(strings.TrimRight(out, "\n"), "\n") {
		var o map[string]any
		if err := json.Unmarshal([]byte(line), &o); err != nil {
			t.Fatalf("line %q is not a JSON object: %v\nall:\n%s", line, err, out)
		}
		objs = append(objs, o)
	}
	return objs
}

func TestRemoteCommands(t *testing.T) {
	t.Parallel()
	e := newAPIEnv(t)
	must := func(t *testing.T, args ...string) string {
		t.Helper()
		out, err := e.cli(args...)
		if err != nil {
			t.Fatalf("agentsfleet %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return out
	}

	t.Run("apply", func(t *testing.T) {
		def := e.file(t, "ops.toml", apitest.OpsTOML)
		if out := must(t, "apply", "-f", def); out != "fleet ops: revision 1\n" {
			t.Errorf("apply printed %q", out)
		}
		out := must(t, "apply", "-f", def, "--output", "json")
		if o := jsonLines(t, out); len(o) != 1 || o[0]["revision"] != 1.0 || o[0]["unchanged"] != true {
			t.Errorf("apply again --output json printed %q", out)
		}
		must(t, "apply", "-f", e.file(t, "tight.toml", apitest.TightTOML))
		// A bad Definition: the API's message, naming line and tool; exit 1.
		bad := e.file(t, "bad.toml", "name = \"ops\"\ninstructions = \"x\"\n[x-agentsfleet]\ntools = [\"rm_rf\"]\n")
		_, err := e.cli("apply", "-f", bad)
		if err == nil || errors.Is(err, errUsage) || !strings.Contains(err.Error(), "UZ-DEF-400") ||
			!strings.Contains(err.Error(), "line 4") || !strings.Contains(err.Error(), "rm_rf") {
			t.Errorf("apply a bad Definition = %v; want the API's UZ-DEF-400 naming line 4 and rm_rf", err)
		}
		if _, err := e.cli("apply"); !errors.Is(err, errUsage) {
			t.Errorf("apply without -f = %v, want a usage error", err)
		}
	})

	t.Run("fleets, pause, resume", func(t *testing.T) {
		out := must(t, "fleets")
		if !strings.HasPrefix(out, "FLEET") || !strings.Contains(out, "ops ") || !strings.Contains(out, "tight ") {
			t.Errorf("fleets printed\n%s", out)
		}
		if o := jsonLines(t, must(t, "fleets", "--output", "json")); len(o) != 2 || o[0]["name"] == nil {
			t.Errorf("fleets --output json = %v", o)
		}
		if out := must(t, "pause", "ops"); !strings.Contains(out, "ops paused") {
			t.Errorf("pause printed %q", out)
		}
		_, err := e.cli("start", "ops", "x")
		if err == nil || !strings.Contains(err.Error(), "UZ-AGT-012") {
			t.Errorf("start while paused = %v", err)
		}
		if out := must(t, "resume", "ops", "--output", "json"); jsonLines(t, out)[0]["paused"] != false {
			t.Errorf("resume --output json printed %q", out)
		}
	})

	var runID string
	t.Run("start --follow", func(t *testing.T) {
		// Flags after the arguments too.
		out := must(t, "start", "ops", "the", "disks", "--follow")
		t.Logf("start --follow printed:\n%s", out)
		for _, want := range []string{"fleet ops · run run_", "→ update_plan", "plan:", "[x] look at the disks", "done: the disks", "succeeded · 1 tool calls"} {
			if !strings.Contains(out, want) {
				t.Errorf("start --follow printed no %q:\n%s", want, out)
			}
		}
		runID = strings.Fields(strings.SplitN(out, "run ", 2)[1])[0]
		// A run that fails: exit 1, the view saying why.
		out, err := e.cli("start", "--follow", "tight", "x")
		if !errors.Is(err, errRunFailed) || !strings.Contains(out, "run failed: ") {
			t.Errorf("start --follow of a failing run = %v\n%s", err, out)
		}
		// JSON lines, ending with run.ended; exit 1 all the same.
		out, err = e.cli("start", "tight", "y", "--follow", "--output", "json")
		evs := jsonLines(t, out)
		if !errors.Is(err, errRunFailed) || evs[0]["type"] != "run.started" || evs[len(evs)-1]["type"] != "run.ended" {
			t.Errorf("start --follow --output json of a failing run = %v\n%s", err, out)
		}
	})

	t.Run("events, runs, cancel", func(t *testing.T) {
		evs := jsonLines(t, must(t, "events", runID, "--output", "json"))
		if len(evs) < 4 || evs[0]["type"] != "run.started" || evs[len(evs)-1]["type"] != "run.ended" {
			t.Fatalf("events --output json = %v", evs)
		}
		for i, ev := range evs {
			if ev["seq"] != float64(i+1) || ev["time"] == nil || ev["data"] == nil {
				t.Errorf("event %d = %v; want seq %d, time and data", i, ev, i+1)
			}
		}
		if out := must(t, "events", runID); !strings.Contains(out, "done: the disks") {
			t.Errorf("events printed\n%s", out)
		}
		out, err := e.cli("events", runID, "--follow", "--output", "json")
		if err != nil || len(jsonLines(t, out)) != len(evs) {
			t.Errorf("events --follow of an ended run = %v\n%s", err, out)
		}
		// start without --follow, then events --follow.
		started := jsonLines(t, must(t, "start", "ops", "later", "--output", "json"))[0]
		id, _ := started["run_id"].(string)
		if out := must(t, "events", "--follow", id); !strings.Contains(out, "done: later") {
			t.Errorf("events --follow printed\n%s", out)
		}
		out = must(t, "runs", "ops")
		if !strings.HasPrefix(out, "RUN") || !strings.Contains(out, runID) || !strings.Contains(out, id) || !strings.Contains(out, "succeeded") {
			t.Errorf("runs printed\n%s", out)
		}
		if o := jsonLines(t, must(t, "runs", "ops", "--output", "json")); len(o) != 2 || o[0]["run_id"] != id {
			t.Errorf("runs --output json = %v; want the newest first", o)
		}
		_, err = e.cli("cancel", runID)
		if err == nil || !strings.Contains(err.Error(), "UZ-RUN-409") || !strings.Contains(err.Error(), "succeeded") {
			t.Errorf("cancel an ended run = %v", err)
		}
		_, err = e.cli("events", "run_nope")
		if err == nil || !strings.Contains(err.Error(), "UZ-RUN-404") {
			t.Errorf("events of no run = %v", err)
		}
	})

	t.Run("schedules", func(t *testing.T) {
		out := must(t, "schedule", "create", "ops", "--expression", "rate(1 hour)", "--message", "the disks", "--timezone", "Europe/Paris", "--output", "json")
		sc := jsonLines(t, out)[0]
		id, _ := sc["schedule_id"].(string)
		if id == "" || sc["source"] != "person" || sc["timezone"] != "Europe/Paris" {
			t.Fatalf("schedule create printed %q", out)
		}
		if out := must(t, "schedules", "ops"); !strings.Contains(out, id) || !strings.Contains(out, "rate(1 hour)") {
			t.Errorf("schedules printed\n%s", out)
		}
		if out := must(t, "schedule", "pause", "ops", id); !strings.HasPrefix(out, "schedule "+id+" ") || out == "schedule "+id+" "+sc["state"].(string)+"\n" {
			t.Errorf("schedule pause printed %q (was %s)", out, sc["state"])
		}
		if out := must(t, "schedule", "resume", "ops", id); out != "schedule "+id+" "+sc["state"].(string)+"\n" {
			t.Errorf("schedule resume printed %q", out)
		}
		run := jsonLines(t, must(t, "schedule", "run", "ops", id, "--output", "json"))[0]
		rid, _ := run["run_id"].(string)
		if out := must(t, "events", rid, "--follow"); !strings.Contains(out, "done: the disks") {
			t.Errorf("the schedule's run printed\n%s", out)
		}
		if out := must(t, "schedule", "delete", "ops", id); out != "schedule "+id+" deleted\n" {
			t.Errorf("schedule delete printed %q", out)
		}
		if out := must(t, "schedules", "ops"); out != "ops has no schedules\n" {
			t.Errorf("schedules after delete printed %q", out)
		}
		_, err := e.cli("schedule", "create", "ops", "--expression", "every day", "--message", "m")
		if err == nil || !strings.Contains(err.Error(), "UZ-REQ-400") || !strings.Contains(err.Error(), "expression") {
			t.Errorf("a bad expression = %v", err)
		}
		// An API without schedules says so.
		_, err = e.cliEnv(nil, "schedules", "ops", "--api", e.bare.URL, "--key", e.admin)
		if err == nil || !strings.Contains(err.Error(), "schedules are not configured") {
			t.Errorf("schedules without a keeper = %v", err)
		}
	})

	t.Run("keys", func(t *testing.T) {
		k := jsonLines(t, must(t, "keys", "create", "ci", "--scopes", "runs:read, fleets:read", "--output", "json"))[0]
		key, _ := k["key"].(string)
		kid, _ := k["key_id"].(string)
		if !strings.HasPrefix(key, "afk_") || kid == "" {
			t.Fatalf("keys create = %v", k)
		}
		if out := must(t, "keys", "create", "ci2", "--scopes", "runs:read"); !strings.Contains(out, "afk_") || !strings.Contains(out, "only time") {
			t.Errorf("keys create printed %q", out)
		}
		out := must(t, "keys", "list")
		if !strings.Contains(out, kid) || !strings.Contains(out, "fleets:read,runs:read") || !strings.Contains(out, "every scope") || strings.Contains(out, key) {
			t.Errorf("keys list printed\n%s", out)
		}
		// A key of named fleets: it says so, lists so, and serves them only.
		fk := jsonLines(t, must(t, "keys", "create", "team", "--scopes", "runs:read", "--fleets", "ops, dev", "--output", "json"))[0]
		if fmt.Sprint(fk["fleets"]) != "[dev ops]" {
			t.Errorf("keys create --fleets = %v", fk)
		}
		if out := must(t, "keys", "create", "team2", "--scopes", "runs:read", "--fleets", "ops"); !strings.Contains(out, "fleets ops") {
			t.Errorf("keys create --fleets printed %q", out)
		}
		if out := must(t, "keys", "list"); !regexp.MustCompile(`team\s+runs:read\s+dev,ops\s`).MatchString(out) || !regexp.MustCompile(`ci\s+fleets:read,runs:read\s+all\s`).MatchString(out) {
			t.Errorf("keys list does not show the fleets:\n%s", out)
		}
		if _, err := e.cliEnv(nil, "runs", "other", "--api", e.srv.URL, "--key", fk["key"].(string)); err == nil || !strings.Contains(err.Error(), `not "other"`) {
			t.Errorf("a key of ops and dev listing runs of other = %v", err)
		}
		must(t, "keys", "revoke", fk["key_id"].(string))
		// The new key works, with its scopes.
		if _, err := e.cliEnv(nil, "fleets", "--api", e.srv.URL, "--key", key); err != nil {
			t.Errorf("fleets with the new key: %v", err)
		}
		if out := must(t, "keys", "revoke", kid); !strings.Contains(out, kid+" revoked") {
			t.Errorf("keys revoke printed %q", out)
		}
		if o := jsonLines(t, must(t, "keys", "list", "--output", "json")); len(o) != 5 {
			t.Errorf("keys list --output json = %v", o)
		}
		// A refused key: says so, and where the key came from.
		_, err := e.cliEnv(nil, "fleets", "--api", e.srv.URL, "--key", key)
		if err == nil || errors.Is(err, errUsage) || !strings.Contains(err.Error(), "refused the key from --key") || !strings.Contains(err.Error(), "UZ-KEY-401") {
			t.Errorf("a revoked key = %v", err)
		}
		_, err = e.cliEnv(map[string]string{"AGENTSFLEET_API_URL": e.srv.URL, "AGENTSFLEET_API_KEY": "afk_nope"}, "fleets")
		if err == nil || !strings.Contains(err.Error(), "refused the key from AGENTSFLEET_API_KEY") {
			t.Errorf("a bad key from the environment = %v", err)
		}
	})

	t.Run("the local stack", func(t *testing.T) {
		// AGENTSFLEET_ADDR and the key agentsfleet dev wrote.
		e.file(t, "api-key", e.admin+"\n")
		addr := strings.TrimPrefix(e.srv.URL, "http://")
		out, err := e.cliEnv(map[string]string{"AGENTSFLEET_ADDR": addr}, "fleets")
		if err != nil || !strings.Contains(out, "ops") {
			t.Fatalf("fleets on the local stack = %v\n%s", err, out)
		}
		// The local key goes to the local stack only.
		_, err = e.cliEnv(map[string]string{"AGENTSFLEET_API_URL": "https://api.example.com"}, "fleets")
		if !errors.Is(err, errUsage) || !strings.Contains(err.Error(), "no API key for https://api.example.com") {
			t.Errorf("a remote API without a key = %v", err)
		}
		os.WriteFile(filepath.Join(e.dir, "api-key"), []byte("afk_old\n"), 0o600)
		_, err = e.cliEnv(map[string]string{"AGENTSFLEET_ADDR": addr}, "fleets")
		if err == nil || !strings.Contains(err.Error(), "refused the key from "+filepath.Join(e.dir, "api-key")) {
			t.Errorf("a stale dev key = %v", err)
		}
	})

	t.Run("through main's dispatch", func(t *testing.T) {
		var out bytes.Buffer
		err := run(context.Background(), []string{"fleets", "--api", e.srv.URL, "--key", e.admin, "--output", "json"}, &out, io.Discard)
		if err != nil || len(jsonLines(t, out.String())) != 2 {
			t.Errorf("run(fleets) = %v\n%s", err, out.String())
		}
	})
	e.local.Wait()
}

func TestRemoteErrors(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := ln.Addr().String()
	ln.Close()
	cli := func(env map[string]string, args ...string) error {
		re := remoteEnv{out: io.Discard, getenv: func(k string) string { return env[k] }, devKey: filepath.Join(dir, "api-key")}
		return re.run(context.Background(), args)
	}
	tests := []struct {
		name  string
		env   map[string]string
		args  []string
		usage bool
		want  []string
	}{
		{"bad --api", nil, []string{"fleets", "--api", "localhost:8080", "--key", "k"}, true,
			[]string{`"localhost:8080"`, "http(s)://host[:port]", "from --api"}},
		{"bad AGENTSFLEET_API_URL", map[string]string{"AGENTSFLEET_API_URL": "http://h/v1", "AGENTSFLEET_API_KEY": "k"}, []string{"fleets"}, true,
			[]string{"has a path (/v1)", "from AGENTSFLEET_API_URL"}},
		{"unreachable", nil, []string{"runs", "ops", "--api", "http://" + closed, "--key", "k"}, false,
			[]string{"could not reach the agentsfleet API at http://" + closed, "from --api"}},
		{"local stack not running", map[string]string{"AGENTSFLEET_ADDR": closed, "AGENTSFLEET_API_KEY": "k"}, []string{"fleets"}, false,
			[]string{"could not reach", "AGENTSFLEET_ADDR", "agentsfleet dev"}},
		{"no key for the local stack", nil, []string{"fleets"}, true,
			[]string{"no API key for http://127.0.0.1:8080", "--key", "AGENTSFLEET_API_KEY", "api-key"}},
		{"no input", nil, []string{"start", "ops", "--key", "k"}, true, []string{"start needs INPUT"}},
		{"extra argument", nil, []string{"cancel", "a", "b", "--key", "k"}, true, []string{"cancel takes 1"}},
		{"unknown flag", nil, []string{"fleets", "--nope"}, true, []string{"-nope"}},
		{"bad output", nil, []string{"fleets", "--output", "yaml", "--key", "k"}, true, []string{"text or json"}},
		{"schedule without subcommand", nil, []string{"schedule"}, true, []string{"create, delete"}},
		{"keys with another subcommand", nil, []string{"keys", "mint"}, true, []string{`"mint"`}},
		{"schedule create without expression", nil, []string{"schedule", "create", "ops", "--message", "m", "--key", "k"}, true, []string{"--expression"}},
		{"keys create without scopes", nil, []string{"keys", "create", "ci", "--key", "k"}, true, []string{"--scopes"}},
		{"keys create with empty fleets", nil, []string{"keys", "create", "ci", "--scopes", "runs:read", "--fleets", " , ", "--key", "k"}, true, []string{"--fleets is empty"}},
		{"apply a missing file", nil, []string{"apply", "-f", filepath.Join(dir, "nope.toml"), "--key", "k"}, true, []string{"nope.toml"}},
		{"apply a YAML file", nil, []string{"apply", "-f", "x.yaml", "--key", "k"}, true, []string{".toml or .json"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err := cli(tt.env, tt.args...)
			if err == nil || errors.Is(err, errUsage) != tt.usage {
				t.Fatalf("= %v; want an error, usage (exit 2): %v", err, tt.usage)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
		})
	}
}

// TestUsageNamesEveryRemoteCommand: the remote commands whose flags
// TestUsageNamesEveryFlag cannot see (they have only --api, --key and
// --output) have their usage lines too.
func TestUsageNamesEveryRemoteCommand(t *testing.T) {
	t.Parallel()
	for _, cmd := range []string{"apply", "fleets", "pause", "resume", "start", "runs", "events", "egress", "cancel", "approve", "deny", "schedules",
		"schedule create", "schedule delete", "schedule pause", "schedule resume", "schedule run", "keys create", "keys list", "keys revoke"} {
		if _, ok := usageLine(cmd); !ok {
			t.Errorf("usage has no line for %q", cmd)
		}
	}
	for _, f := range []string{"--api URL", "--key KEY", "--output json", "AGENTSFLEET_API_URL", "AGENTSFLEET_API_KEY", ".dev/api-key"} {
		if !strings.Contains(usage, f) {
			t.Errorf("usage does not name %s", f)
		}
	}
}
