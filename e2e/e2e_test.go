package e2e

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/agentsfleet/agentsfleet/shared/slack"
)

// root is the repository; bin the folder of the binaries TestMain built.
var root, bin string

func TestMain(m *testing.M) {
	var err error
	if root, err = filepath.Abs(".."); err != nil {
		panic(err)
	}
	if bin, err = os.MkdirTemp("", "agentsfleet-e2e-"); err != nil {
		panic(err)
	}
	// agentsfleet dev finds sandboxd beside itself.
	build := exec.Command("go", "build", "-o", bin+"/", "./cmd/agentsfleet", "./sandboximage/sandboxd")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "build agentsfleet and sandboxd: %v\n%s", err, out)
		os.RemoveAll(bin)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(bin)
	os.Exit(code)
}

// The fleet the test applies, the Slack channel routed to it, and what the
// model's scripts look for.
const (
	fleetName  = "e2e-tidy"
	channel    = "C0E2E0001"
	mentionTS  = "1796200000.000100"
	signing    = "e2e-signing-secret-0123456789abcdef"
	botToken   = "xoxb-e2e-bot-token"
	askText    = "please tidy notes.txt and check the status page"
	childTask  = "Count the lines of notes.txt and answer with the number."
	followUp   = "Follow-up: check the status page again."
	childReply = "notes.txt has 3 lines."
	finalReply = "Tidied notes.txt; the status page says 42 widgets are fine."
	laterReply = "The status page still says 42 widgets are fine."
	lineText   = "Patched notes.txt; checking the status page next."
)

const definition = `name = "` + fleetName + `"
instructions = "You tidy notes and report briefly."
[tools]
builtin = ["read", "grep"]
[x-agentsfleet]
tools = ["apply_patch", "bash", "exec_command", "write_stdin", "update_plan", "message", "schedule_create", "spawn_agent", "wait_agent", "webfetch"]
`

var (
	sessionRE = regexp.MustCompile(`Process running with session ID (\d+)`)
	childRE   = regexp.MustCompile(`"child_id":\s*"([^"]+)"`)
)

// TestProductEndToEnd: `agentsfleet dev` as a process, driven through its
// edges. A signed app_mention starts a run whose model (a local
// OpenAI-compatible fake) uses read, grep, apply_patch, bash, exec_command
// and write_stdin, update_plan and message (its line seen by a local Slack
// fake), calls webfetch against a local server, spawns a child agent and
// waits for it, and creates a follow-up schedule that dev's clock fires
// into a second run. The runs' events are then checked through the API and
// through the CLI, and Ctrl-C must leave no process behind.
func TestProductEndToEnd(t *testing.T) {
	web := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, "<html><body><h1>Status</h1><p>All systems nominal: 42 widgets are fine.</p></body></html>")
	}))
	defer web.Close()
	pageURL := web.URL + "/status"

	var scheduledAt atomic.Value // the follow-up's at() time, once planned
	main := conversation{marker: askText, next: func(step int, results []string) turn {
		switch step {
		case 0:
			return turn{calls: []call{{"update_plan", map[string]any{"plan": []map[string]string{
				{"step": "tidy notes.txt", "status": "in_progress"}, {"step": "check the status page", "status": "pending"}}}}}}
		case 1:
			return turn{calls: []call{{"read", map[string]any{"path": "notes.txt"}}, {"grep", map[string]any{"pattern": "TODO"}}}}
		case 2:
			return turn{calls: []call{{"apply_patch", map[string]any{"input": "*** Begin Patch\n*** Update File: notes.txt\n@@\n-TODO: fix the greeting\n+DONE: fixed the greeting\n*** End Patch\n"}}}}
		case 3:
			return turn{calls: []call{{"bash", map[string]any{"command": "cat notes.txt && wc -l < notes.txt"}}}}
		case 4:
			return turn{calls: []call{{"exec_command", map[string]any{"cmd": "read line; echo got:$line", "yield_time_ms": 300}}}}
		case 5:
			id := firstMatch(sessionRE, results)
			return turn{calls: []call{{"write_stdin", map[string]any{"session_id": atoi(id), "chars": "hello\n", "yield_time_ms": 2000}}}}
		case 6:
			return turn{calls: []call{{"message", map[string]any{"text": lineText}}, {"webfetch", map[string]any{"url": pageURL}}}}
		case 7:
			return turn{calls: []call{{"spawn_agent", map[string]any{"task": childTask, "tools": []string{"read"}}}}}
		case 8:
			return turn{calls: []call{{"wait_agent", map[string]any{"child_id": firstMatch(childRE, results), "timeout_seconds": 60}}}}
		}
		// Then by what the last calls answered: wait until the child is
		// done, plan the follow-up, answer.
		last := strings.Join(results, "\n")
		switch {
		case strings.Contains(last, childReply):
			at := time.Now().UTC().Add(4 * time.Second).Format("2006-01-02T15:04:05")
			scheduledAt.Store(at)
			return turn{calls: []call{{"schedule_create", map[string]any{"expression": "at(" + at + ")", "message": followUp}}}}
		case strings.Contains(last, "still working"):
			return turn{calls: []call{{"wait_agent", map[string]any{"child_id": firstMatch(childRE, []string{last}), "timeout_seconds": 60}}}}
		default:
			return turn{text: finalReply}
		}
	}}
	child := conversation{marker: childTask, next: func(step int, _ []string) turn {
		if step == 0 {
			return turn{calls: []call{{"read", map[string]any{"path": "notes.txt"}}}}
		}
		return turn{text: childReply}
	}}
	later := conversation{marker: followUp, next: func(step int, _ []string) turn {
		if step == 0 {
			return turn{calls: []call{{"webfetch", map[string]any{"url": pageURL}}}}
		}
		return turn{text: laterReply}
	}}
	// The three things dev offers to try start runs of an example fleet.
	tryRuns := conversation{marker: "what is in this folder?", next: func(int, []string) turn { return turn{text: "A notes file."} }}
	tryHook := conversation{marker: "disk full on web-1", next: func(int, []string) turn { return turn{text: "Look at web-1's disk."} }}
	model := newModelFake(t, main, child, later, tryRuns, tryHook)
	slackAPI := newSlackFake(t, botToken)

	work := filepath.Join(t.TempDir(), "work")
	if err := os.MkdirAll(work, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(work, "notes.txt"), []byte("hello world\nTODO: fix the greeting\nbye\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	state := filepath.Join(t.TempDir(), "state")
	d := startDev(t, work, state, map[string]string{
		"AGENTSFLEET_MODEL_PROVIDER":       "openai",
		"OPENAI_BASE_URL":                  model.URL + "/v1",
		"AGENTSFLEET_MODEL":                "e2e-model",
		"AGENTSFLEET_SLACK_SIGNING_SECRET": signing,
		"AGENTSFLEET_SLACK_BOT_TOKEN":      botToken,
		"AGENTSFLEET_SLACK_API_URL":        slackAPI.APIURL(),
		"AGENTSFLEET_TEST_ALLOW_ADDR":      strings.TrimPrefix(web.URL, "http://"),
	})

	// The fleet and its Slack channel, through the CLI.
	defFile := filepath.Join(t.TempDir(), "e2e.toml")
	os.WriteFile(defFile, []byte(definition), 0o644)
	d.cli(t, "apply", "-f", defFile)
	d.cli(t, "slack", "route", channel, fleetName)

	// A signed app_mention, as Slack sends it.
	body, _ := json.Marshal(map[string]any{
		"type": "event_callback", "team_id": "T0E2E", "api_app_id": "A0E2E", "event_id": "Ev0E2E0001", "event_time": 1796200000,
		"authorizations": []any{map[string]any{"team_id": "T0E2E", "user_id": "U0E2EBOT", "is_bot": true}},
		"event": map[string]any{"type": "app_mention", "user": "U0PERSON", "channel": channel, "ts": mentionTS, "event_ts": mentionTS,
			"text": "<@U0E2EBOT> " + askText},
	})
	ts, sig := slack.Sign(signing, time.Now(), body)
	req, _ := http.NewRequest("POST", d.base+"/slack/events", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Slack-Request-Timestamp", ts)
	req.Header.Set("X-Slack-Signature", sig)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("the signed app_mention was answered %d, want 200", resp.StatusCode)
	}

	// The run it started ends, and its follow-up runs later.
	first := d.waitRun(t, func(r map[string]any) bool { return r["source"] == "slack" })
	if first["status"] != "succeeded" || first["answer"] != finalReply {
		t.Fatalf("the Slack run ended %v; the model fake noted %q", first, model.problems)
	}
	second := d.waitRun(t, func(r map[string]any) bool { return r["source"] == "schedule" })
	if second["status"] != "succeeded" || second["answer"] != laterReply {
		t.Fatalf("the follow-up run ended %v", second)
	}
	if len(model.problems) > 0 {
		t.Errorf("the model fake noted: %q", model.problems)
	}

	// The first run's events, through the API.
	events := d.api(t, "GET", "/v1/runs/"+first["run_id"].(string)+"/events?limit=500")["events"].([]any)
	results := map[string]string{} // tool → its output, main agent
	var types []string
	var childEnded map[string]any
	var posted map[string]any
	for _, e := range events {
		e := e.(map[string]any)
		data, _ := e["data"].(map[string]any)
		types = append(types, fmt.Sprint(e["type"]))
		switch e["type"] {
		case "tool.result":
			if data["is_error"] == true {
				t.Errorf("%v (%v) failed: %v", data["name"], e["agent"], data["output"])
			}
			if e["agent"] == nil || e["agent"] == "" {
				results[fmt.Sprint(data["name"])] = fmt.Sprint(data["output"])
			}
		case "child.ended":
			childEnded = data
		case "message.posted":
			posted = data
		}
	}
	for tool, want := range map[string]string{
		"read": "TODO: fix the greeting", "grep": "notes.txt", "bash": "DONE: fixed the greeting",
		"exec_command": "session ID", "write_stdin": "got:hello", "webfetch": "42 widgets",
		"wait_agent": childReply, "schedule_create": fmt.Sprintf("at(%v)", scheduledAt.Load()), "update_plan": "", "apply_patch": "", "message": "",
		"spawn_agent": "child_id",
	} {
		out, ok := results[tool]
		if !ok || !strings.Contains(out, want) {
			t.Errorf("the run's %s result %q (called: %v), want it to contain %q", tool, out, ok, want)
		}
	}
	for _, typ := range []string{"run.started", "plan.updated", "message.posted", "child.started", "child.ended", "run.ended"} {
		if !slices.Contains(types, typ) {
			t.Errorf("no %s event among %v", typ, types)
		}
	}
	if childEnded["status"] != "done" || childEnded["answer"] != childReply {
		t.Errorf("child.ended = %v", childEnded)
	}
	if posted["delivered"] != true || posted["text"] != lineText {
		t.Errorf("message.posted = %v", posted)
	}
	if b, _ := os.ReadFile(filepath.Join(work, "notes.txt")); !strings.Contains(string(b), "DONE: fixed the greeting") {
		t.Errorf("notes.txt after the run: %q", b)
	}

	// The same events through the CLI, one JSON object a line.
	out := d.cli(t, "events", first["run_id"].(string), "--output", "json")
	var cliTypes []string
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var e struct{ Type string }
		if err := json.Unmarshal([]byte(line), &e); err != nil {
			t.Fatalf("the CLI printed %q, not one JSON event a line", line)
		}
		cliTypes = append(cliTypes, e.Type)
	}
	if !slices.Equal(cliTypes, types) {
		t.Errorf("the CLI's events %v, the API's %v", cliTypes, types)
	}

	// The thread, as the Slack fake saw it: the message line, the plan and
	// the answer, all in the mention's thread, with the bot token; the
	// answer streamed to the person who mentioned the app, of the event's
	// team; nothing Slack would have refused.
	for _, s := range []string{lineText, "tidy notes.txt", finalReply} {
		if !slackAPI.said(channel, mentionTS, s) {
			posts, methods := slackAPI.seen()
			t.Errorf("the Slack thread never showed %q; methods %v, posts %+v", s, methods, posts)
		}
	}
	if m, ok := slackAPI.streamed(channel, mentionTS); !ok || m.Text != finalReply || m.Streaming || m.Recipient != "U0PERSON" || m.RecipientTeam != "T0E2E" {
		t.Errorf("the answer's stream = %+v (%v), want %q streamed whole to U0PERSON of T0E2E", m, ok, finalReply)
	}
	if r := slackAPI.Refused(); len(r) > 0 {
		t.Errorf("Slack would have refused %v", r)
	}

	// The three things dev printed to try, run as printed (from the
	// repository's root, bin/agentsfleet being the binary built here).
	d.tryPrinted(t)

	d.stop(t)
}

// tryPrinted runs the lines under dev's "try:" in a shell: each starts a
// run (a curl line and a signed webhook answer its run id; the CLI line
// follows its run to the end and exits 0).
func (d *dev) tryPrinted(t *testing.T) {
	t.Helper()
	var lines []string
	for i, line := range d.printed {
		if line == "try:" {
			for _, l := range d.printed[i+1:] {
				if !strings.HasPrefix(l, "  ") {
					break
				}
				lines = append(lines, strings.TrimSpace(l))
			}
		}
	}
	if len(lines) != 3 {
		t.Fatalf("dev printed %d things to try, want 3:\n%s", len(lines), strings.Join(d.printed, "\n"))
	}
	for _, need := range []string{"curl", "openssl"} {
		if _, err := exec.LookPath(need); err != nil {
			t.Logf("%s is not installed: the printed lines are not run", need)
			return
		}
	}
	for _, line := range lines {
		line = strings.Replace(line, "bin/agentsfleet", filepath.Join(bin, "agentsfleet"), 1)
		cmd := exec.Command("bash", "-c", line)
		cmd.Dir = root
		cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME"),
			"AGENTSFLEET_ADDR=" + strings.TrimPrefix(d.base, "http://"), "AGENTSFLEET_API_KEY=" + d.key}
		out, err := cmd.CombinedOutput()
		if err != nil || (strings.Contains(line, "curl") && !strings.Contains(string(out), `"run_id"`)) {
			t.Errorf("the printed line\n  %s\nanswered %v:\n%s", line, err, out)
		}
	}
}

// dev is a running `agentsfleet dev`.
type dev struct {
	cmd     *exec.Cmd
	base    string // the API, http://host:port
	aws     string // the emulator's address, host:port
	key     string
	state   string
	stderr  *syncBuffer
	exited  chan error
	printed []string
}

// startDev starts `agentsfleet dev` from the repository's root, as `make
// dev` does, with a clean environment plus extra, and waits until it says
// it is ready.
func startDev(t testing.TB, work, state string, extra map[string]string) *dev {
	t.Helper()
	addr := freeAddr(t)
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME"), "TMPDIR=" + os.TempDir(),
		"AGENTSFLEET_ADDR=" + addr, "AGENTSFLEET_TABLE=e2e"}
	for k, v := range extra {
		env = append(env, k+"="+v)
	}
	d := &dev{state: state, stderr: &syncBuffer{}, exited: make(chan error, 1)}
	d.cmd = exec.Command(filepath.Join(bin, "agentsfleet"), "dev", "--workdir", work, "--state", state)
	d.cmd.Dir, d.cmd.Env, d.cmd.Stderr = root, env, d.stderr
	d.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	stdout, err := d.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := d.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Kill(-d.cmd.Process.Pid, syscall.SIGKILL) })
	ready := make(chan bool, 1)
	go func() {
		lines := bufio.NewScanner(stdout)
		for lines.Scan() {
			d.printed = append(d.printed, lines.Text())
			if strings.HasPrefix(lines.Text(), "Ctrl-C") {
				ready <- true
			}
		}
		io.Copy(io.Discard, stdout)
		d.exited <- d.cmd.Wait()
	}()
	select {
	case <-ready:
	case err := <-d.exited:
		t.Fatalf("agentsfleet dev exited (%v):\n%s\n%s", err, strings.Join(d.printed, "\n"), d.stderr)
	case <-time.After(90 * time.Second):
		t.Fatalf("agentsfleet dev was not ready within 90 s:\n%s\n%s", strings.Join(d.printed, "\n"), d.stderr)
	}
	for _, line := range d.printed {
		if rest, ok := strings.CutPrefix(line, "API            "); ok {
			d.base, _, _ = strings.Cut(rest, " ")
		}
		if rest, ok := strings.CutPrefix(line, "AWS emulator   http://"); ok {
			d.aws, _, _ = strings.Cut(rest, " ")
		}
		if strings.HasPrefix(line, "Slack ") && !strings.Contains(line, "on the same port") {
			t.Fatalf("dev does not serve Slack: %s", line)
		}
	}
	key, err := os.ReadFile(filepath.Join(state, "api-key"))
	if err != nil || d.base == "" {
		t.Fatalf("dev printed no API line or wrote no key (%v):\n%s", err, strings.Join(d.printed, "\n"))
	}
	d.key = strings.TrimSpace(string(key))
	return d
}

// cli runs bin/agentsfleet against dev's API and returns its output,
// failing the test if it fails.
func (d *dev) cli(t *testing.T, args ...string) string {
	t.Helper()
	cmd := exec.Command(filepath.Join(bin, "agentsfleet"), append(args, "--api", d.base, "--key", d.key)...)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME")}
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		t.Fatalf("agentsfleet %s: %v\n%s%s", strings.Join(args, " "), err, out.String(), errOut.String())
	}
	return out.String()
}

// api calls dev's HTTP API with its key and decodes the answer.
func (d *dev) api(t *testing.T, method, path string) map[string]any {
	t.Helper()
	req, _ := http.NewRequest(method, d.base+path, nil)
	req.Header.Set("Authorization", "Bearer "+d.key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("%s %s = %d, %v: %v", method, path, resp.StatusCode, err, out)
	}
	return out
}

// waitRun waits until a run of the fleet that match picks has ended, and
// returns it as GET /v1/runs/{id} shows it.
func (d *dev) waitRun(t *testing.T, match func(map[string]any) bool) map[string]any {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for ; time.Now().Before(deadline); time.Sleep(250 * time.Millisecond) {
		for _, r := range d.api(t, "GET", "/v1/fleets/"+fleetName+"/runs")["runs"].([]any) {
			r := r.(map[string]any)
			if !match(r) {
				continue
			}
			run := d.api(t, "GET", "/v1/runs/"+r["run_id"].(string))
			switch run["status"] {
			case "succeeded", "failed", "cancelled":
				return run
			}
		}
	}
	t.Fatalf("no such run ended within 2 minutes; dev's log:\n%s", d.stderr)
	return nil
}

// stop sends dev Ctrl-C (SIGINT) and checks that it exits cleanly and
// leaves nothing behind: no process of its group or started from the
// test's binaries, no emulator, no API.
func (d *dev) stop(t testing.TB) {
	t.Helper()
	d.cmd.Process.Signal(syscall.SIGINT)
	select {
	case err := <-d.exited:
		if err != nil {
			t.Errorf("agentsfleet dev exited with %v after Ctrl-C:\n%s", err, d.stderr)
		}
	case <-time.After(60 * time.Second):
		t.Fatalf("agentsfleet dev did not stop within 60 s of Ctrl-C:\n%s", d.stderr)
	}
	if err := syscall.Kill(-d.cmd.Process.Pid, 0); err != syscall.ESRCH {
		t.Errorf("processes of dev's group are left after it stopped (kill -0: %v)", err)
	}
	if left := processesUnder(bin, d.state); len(left) > 0 {
		t.Errorf("processes left after dev stopped: %q", left)
	}
	for _, addr := range []string{d.aws, strings.TrimPrefix(d.base, "http://")} {
		if addr == "" {
			continue
		}
		if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
			c.Close()
			t.Errorf("%s still answers after dev stopped", addr)
		}
	}
}

// processesUnder lists the processes whose command line names one of the
// folders.
func processesUnder(folders ...string) []string {
	var out []string
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, p := range procs {
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		line := strings.ReplaceAll(string(b), "\x00", " ")
		for _, f := range folders {
			if strings.Contains(line, f) {
				out = append(out, line)
				break
			}
		}
	}
	return out
}

// freeAddr is a loopback address nothing listens on now.
func freeAddr(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

func atoi(s string) int {
	n := 0
	fmt.Sscan(s, &n)
	return n
}

// syncBuffer is a bytes.Buffer safe for a writer and a reader at once.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
