package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentsfleet/agentsfleet/shared/awstest"
	"github.com/agentsfleet/agentsfleet/shared/emulator"
	afrun "github.com/agentsfleet/agentsfleet/shared/run"
	"github.com/agentsfleet/agentsfleet/shared/web/egress"
)

// sandboxdBin is sandboxd built once for the run tests.
var sandboxdBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "agentsfleet-cmd-")
	if err != nil {
		panic(err)
	}
	root, err := emulator.RepoRoot()
	if err == nil {
		sandboxdBin = filepath.Join(dir, "sandboxd")
		cmd := exec.Command("go", "build", "-o", sandboxdBin, "./sandboximage/sandboxd")
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			panic("build sandboxd: " + err.Error() + "\n" + string(out))
		}
	}
	code := awstest.Run(m) // the emulator for the API tests; the stacks start their own
	os.RemoveAll(dir)
	os.Exit(code)
}

// runEnv is the environment `agentsfleet run` sees in these tests: the
// scripted model, and sandboxd as built above.
func runEnv(extra map[string]string) func(string) string {
	return func(k string) string {
		if v, ok := extra[k]; ok {
			return v
		}
		switch k {
		case "AGENTSFLEET_SANDBOXD":
			return sandboxdBin
		case "AGENTSFLEET_MODEL_PROVIDER":
			return "scripted"
		case "AWS_ENDPOINT_URL", "AGENTSFLEET_MODEL_SCRIPT":
			return ""
		}
		return os.Getenv(k)
	}
}

// openDir makes a folder the sandbox's commands may write, as root too.
func openDir(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "work")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

const demoFleet = `name = "demo"
instructions = "Look around and say what you find."
[x-agentsfleet]
tools = ["list", "read", "bash"]
`

func TestRunJSON(t *testing.T) {
	t.Parallel()
	work := openDir(t)
	os.WriteFile(filepath.Join(work, "README.md"), []byte("# hello from the workdir\n"), 0o644)
	def := filepath.Join(t.TempDir(), "demo.toml")
	os.WriteFile(def, []byte(demoFleet), 0o644)
	var out, errOut bytes.Buffer
	err := runCmd(context.Background(), []string{"-f", def, "--workdir", work, "--state", t.TempDir(), "--output", "json", "what", "is", "here?"}, &out, &errOut, runEnv(nil))
	if err != nil {
		t.Fatalf("run: %v\n%s\n%s", err, out.String(), errOut.String())
	}
	var types []string
	var last afrun.Event
	sc := bufio.NewScanner(&out)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var ev afrun.Event
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil || ev.Seq == 0 || ev.Time == "" || len(ev.Data) == 0 {
			t.Fatalf("not an event line: %q (%v)", sc.Text(), err)
		}
		types = append(types, ev.Type)
		last = ev
	}
	want := "run.started tool.call tool.result tool.call tool.result run.ended"
	if got := strings.Join(types, " "); got != want {
		t.Fatalf("events %s, want %s", got, want)
	}
	var end afrun.RunEnded
	json.Unmarshal(last.Data, &end)
	if end.Status != "succeeded" || !strings.Contains(end.Answer, "# hello from the workdir") {
		t.Errorf("run.ended %+v", end)
	}
}

func TestRunTextAndExitStatus(t *testing.T) {
	t.Parallel()
	work := openDir(t)
	def := filepath.Join(t.TempDir(), "demo.toml")
	os.WriteFile(def, []byte(demoFleet), 0o644)
	script := filepath.Join(t.TempDir(), "fail.toml")
	os.WriteFile(script, []byte("[[turn]]\n[[turn.tool_call]]\nname = \"bash\"\narguments = { command = \"echo hi\" }\n"), 0o644)
	var out, errOut bytes.Buffer
	err := runCmd(context.Background(), []string{"-f", def, "--workdir", work, "--state", t.TempDir(), "go"}, &out, &errOut,
		runEnv(map[string]string{"AGENTSFLEET_MODEL_SCRIPT": script}))
	if !errors.Is(err, errRunFailed) {
		t.Fatalf("run = %v, want a failed run (the script has one turn)\n%s", err, out.String())
	}
	for _, want := range []string{`→ bash {"command":"echo hi"}`, "  ✓ bash: hi  (2 lines)", "run failed: model_error: scripted model: script", "failed · 1 tool calls"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
}

func TestRunUsage(t *testing.T) {
	t.Parallel()
	bad := filepath.Join(t.TempDir(), "bad.toml")
	os.WriteFile(bad, []byte("name = \"x\"\ninstructions = \"hi\"\n[x-agentsfleet]\ntools = [\"raed\"]\n"), 0o644)
	for _, args := range [][]string{{}, {"-f", bad}, {"-f", bad, "go"}, {"-f", "x.yaml", "go"}, {"-f", bad, "--output", "yaml", "go"}, {"-f", bad, "--workdir", "/nonexistent", "go"}} {
		err := runCmd(context.Background(), args, &bytes.Buffer{}, &bytes.Buffer{}, runEnv(nil))
		if !errors.Is(err, errUsage) {
			t.Errorf("run %q = %v, want a usage error", args, err)
		}
	}
}

// TestRunSaysWhetherBrowserToolsAreAvailable: `agentsfleet run` prints its
// browser line on stderr (stdout keeps the events), and without a Chromium
// refuses a Definition allowing screenshot before the model, saying why.
func TestRunSaysWhetherBrowserToolsAreAvailable(t *testing.T) {
	t.Parallel()
	work := openDir(t)
	dir := t.TempDir()
	plain, shots := filepath.Join(dir, "demo.toml"), filepath.Join(dir, "shots.toml")
	os.WriteFile(plain, []byte(demoFleet), 0o644)
	os.WriteFile(shots, []byte(strings.Replace(demoFleet, `"bash"]`, `"bash", "screenshot"]`, 1)), 0o644)

	chromium := fakeChromium(t)
	var out, errOut bytes.Buffer
	if err := runCmd(context.Background(), []string{"-f", plain, "--workdir", work, "--state", t.TempDir(), "--output", "json", "look"}, &out, &errOut,
		runEnv(map[string]string{envBrowser: chromium})); err != nil {
		t.Fatalf("run: %v\n%s", err, errOut.String())
	}
	if want := "browser tools: Chromium at " + chromium + "\n"; !strings.Contains(errOut.String(), want) || strings.Contains(out.String(), "browser tools") {
		t.Errorf("stderr %q, stdout %q; want %q on stderr alone", errOut.String(), out.String(), want)
	}

	out.Reset()
	errOut.Reset()
	err := runCmd(context.Background(), []string{"-f", shots, "--workdir", work, "--state", t.TempDir(), "--output", "json", "look"}, &out, &errOut,
		runEnv(map[string]string{envBrowser: "off"}))
	if !errors.Is(err, errRunFailed) {
		t.Fatalf("run of a Definition allowing screenshot, browser off = %v, want a failed run", err)
	}
	if want := "browser tools: not available: AGENTSFLEET_BROWSER=off turns them off\n"; !strings.Contains(errOut.String(), want) {
		t.Errorf("stderr %q, want %q", errOut.String(), want)
	}
	var end afrun.RunEnded
	sc := bufio.NewScanner(&out)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var ev afrun.Event
		if json.Unmarshal(sc.Bytes(), &ev) == nil && ev.Type == afrun.EventRunEnded {
			json.Unmarshal(ev.Data, &end)
		}
	}
	if end.Error == nil || end.Error.Code != afrun.CodeDefinition || !strings.Contains(end.Error.Message, `"screenshot"`) ||
		!strings.Contains(end.Error.Message, "AGENTSFLEET_BROWSER=off") {
		t.Errorf("run.ended %+v; want %s naming screenshot and why there is no browser", end, afrun.CodeDefinition)
	}
}

// TestRunBrowserEndToEnd: `agentsfleet run` of a Definition allowing the
// browser tools, on a machine with Chromium, gives the run a sandboxd with
// --browser (the runner asks for one, the local launcher passes it), whose
// Chromium opens a page of this test (admitted by the egress policy's test
// escape hatch, which reaches sandboxd) and screenshots it.
func TestRunBrowserEndToEnd(t *testing.T) {
	t.Parallel()
	found, err := findBrowser(os.Getenv, exec.LookPath)
	if err != nil || found.Path == "" {
		t.Skipf("no Chromium on this machine (%s): as root, make tools installs it", found.Why)
	}
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		io.WriteString(w, "<title>Dock</title><p>the ship is in the dock</p>")
	}))
	defer site.Close()
	dir := t.TempDir()
	def, script := filepath.Join(dir, "shots.toml"), filepath.Join(dir, "browse.toml")
	os.WriteFile(def, []byte(strings.Replace(demoFleet, `"bash"]`, `"bash", "browser_open", "screenshot"]`, 1)), 0o644)
	os.WriteFile(script, []byte(`
[[turn]]
[[turn.tool_call]]
name = "browser_open"
arguments = { url = "`+site.URL+`/dock" }
[[turn]]
[[turn.tool_call]]
name = "screenshot"
arguments = {}
[[turn]]
text = "looked"
`), 0o644)
	var out, errOut bytes.Buffer
	err = runCmd(context.Background(), []string{"-f", def, "--workdir", openDir(t), "--state", t.TempDir(), "--output", "json", "look at the dock"}, &out, &errOut,
		runEnv(map[string]string{"AGENTSFLEET_MODEL_SCRIPT": script, envBrowser: found.Path, egress.AllowEnv: strings.TrimPrefix(site.URL, "http://")}))
	if err != nil {
		t.Fatalf("run: %v\n%s\n%s", err, out.String(), errOut.String())
	}
	if want := "browser tools: Chromium at " + found.Path; !strings.Contains(errOut.String(), want) {
		t.Errorf("stderr %q, want %q", errOut.String(), want)
	}
	results := map[string]afrun.ToolResult{}
	sc := bufio.NewScanner(&out)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var ev afrun.Event
		var r afrun.ToolResult
		if json.Unmarshal(sc.Bytes(), &ev) == nil && ev.Type == afrun.EventToolResult && json.Unmarshal(ev.Data, &r) == nil {
			results[r.Name] = r
		}
	}
	if r := results["browser_open"]; r.IsError || !strings.Contains(r.Output, "the ship is in the dock") {
		t.Errorf("browser_open = %+v, want the page's text", r)
	}
	if r, ok := results["screenshot"]; !ok || r.IsError {
		t.Errorf("screenshot = %+v (%v), want a picture", r, ok)
	}
}

// TestRunThatWaitsForApproval: `agentsfleet run` has nobody to ask, so a
// run that waits for a person says which call waited and where it could be
// decided, and is cancelled rather than left waiting.
func TestRunThatWaitsForApproval(t *testing.T) {
	t.Parallel()
	work := openDir(t)
	def := filepath.Join(t.TempDir(), "demo.toml")
	os.WriteFile(def, []byte(demoFleet+"[x-agentsfleet.approval]\ntools = [\"bash\"]\n"), 0o644)
	script := filepath.Join(t.TempDir(), "wait.toml")
	os.WriteFile(script, []byte("[[turn]]\n[[turn.tool_call]]\nname = \"bash\"\narguments = { command = \"echo hi > ran.txt\" }\n"), 0o644)
	var out, errOut bytes.Buffer
	err := runCmd(context.Background(), []string{"-f", def, "--workdir", work, "--state", t.TempDir(), "go"}, &out, &errOut,
		runEnv(map[string]string{"AGENTSFLEET_MODEL_SCRIPT": script}))
	if !errors.Is(err, errRunFailed) {
		t.Fatalf("run = %v, want it failed\n%s\n%s", err, out.String(), errOut.String())
	}
	for _, want := range []string{"bash waits for approval", "echo hi", "agentsfleet approve|deny", "the run is cancelled"} {
		if !strings.Contains(errOut.String(), want) {
			t.Errorf("stderr lacks %q:\n%s", want, errOut.String())
		}
	}
	if _, err := os.Stat(filepath.Join(work, "ran.txt")); err == nil {
		t.Error("the call that waited ran")
	}
}
