package server_test

import (
	"bufio"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentsfleet/agentsfleet/shared/sandbox"
	"github.com/agentsfleet/agentsfleet/shared/sandbox/confine"
	"github.com/agentsfleet/agentsfleet/shared/sandbox/sandboxtest"
	"github.com/agentsfleet/agentsfleet/shared/sandbox/server"
	"github.com/agentsfleet/agentsfleet/shared/sandbox/wire"
	"github.com/agentsfleet/agentsfleet/shared/tool"
)

// The test binary doubles as sandboxd: run with first argument
// "sandboxd-main", it is server.Main, so the end-to-end tests exercise the
// real entry points without building anything.
const mainArg = "sandboxd-main"

func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == mainArg {
		os.Exit(server.Main(os.Args[2:], server.Defaults{Listen: "127.0.0.1:0", HealthAddr: "127.0.0.1:1"}, os.Stdout, os.Stderr))
	}
	os.Exit(m.Run())
}

// sandboxd returns a command running the test binary as sandboxd with args.
func sandboxd(t *testing.T, args ...string) *exec.Cmd {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return exec.Command(self, append([]string{mainArg}, args...)...)
}

// fixture is a set of roots under a base directory the confined uid can
// reach, with a secret file outside them.
type fixture struct {
	roots            *sandbox.Roots
	base, work, data string
	secret           string
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	base := sandboxtest.Base(t)
	f := &fixture{base: base, work: filepath.Join(base, "work"), data: filepath.Join(base, "data"), secret: filepath.Join(base, "secret.txt")}
	for _, d := range []string{f.work, f.data} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := confine.PrepareRoots([]string{f.work}, 0, 0); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(f.secret, []byte("top secret\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	roots, err := sandbox.New(sandbox.Dirs{Workdir: f.work, Data: f.data})
	if err != nil {
		t.Fatal(err)
	}
	f.roots = roots
	return f
}

const testToken = "test-token-0123456789abcdef"

// awaitFile waits, up to 30 seconds, until name exists: a command writes it
// to say it began.
func awaitFile(t *testing.T, name, what string) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		if _, err := os.Stat(name); err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %s not there after 30 s", what, name)
		}
	}
}

// client calls a sandboxd API at base.
type client struct {
	base  string
	token string
	http  *http.Client
}

// call posts body to the tool and returns the status and decoded body.
func (c *client) call(t *testing.T, name, body string, header ...string) (int, map[string]any) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, c.base+wire.ToolsPath+name, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	hc := c.http
	if hc == nil {
		hc = http.DefaultClient
	}
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
		t.Fatalf("Content-Type = %q, want application/json", ct)
	}
	var out map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		t.Fatalf("decode the answer: %v", err)
	}
	return resp.StatusCode, out
}

// result is call for a 200 answer.
func (c *client) result(t *testing.T, name, body string, header ...string) tool.Result {
	t.Helper()
	status, out := c.call(t, name, body, header...)
	if status != http.StatusOK {
		t.Fatalf("POST %s %s: status %d %v, want 200", name, body, status, out)
	}
	output, _ := out["output"].(string)
	isError, ok := out["is_error"].(bool)
	// A browser tool's result also reports its egress.
	_, hasEgress := out["egress"]
	if fields := 2 + map[bool]int{true: 1}[hasEgress]; !ok || len(out) != fields {
		t.Fatalf("body %v, want exactly output and is_error (and egress)", out)
	}
	res := tool.Result{Output: output, IsError: isError}
	if hasEgress {
		b, _ := json.Marshal(out["egress"])
		if err := json.Unmarshal(b, &res.Egress); err != nil {
			t.Fatalf("egress %s: %v", b, err)
		}
	}
	return res
}

// process is a sandboxd serve started by a test.
type process struct {
	cmd    *exec.Cmd
	addr   string
	mu     sync.Mutex
	stderr strings.Builder
	exited chan struct{}
	err    error
}

// startServe runs sandboxd serve with args and the token in its
// environment, and waits for it to listen.
func startServe(t *testing.T, env []string, args ...string) *process {
	t.Helper()
	cmd := sandboxd(t, append([]string{"serve", "--listen", "127.0.0.1:0"}, args...)...)
	cmd.Env = append(os.Environ(), env...)
	return runServe(t, cmd)
}

// runServe starts cmd, a sandboxd serve, and waits for it to listen.
func runServe(t *testing.T, cmd *exec.Cmd) *process {
	t.Helper()
	pipe, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &process{cmd: cmd, exited: make(chan struct{})}
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(pipe)
		for sc.Scan() {
			line := sc.Text()
			p.mu.Lock()
			p.stderr.WriteString(line + "\n")
			p.mu.Unlock()
			var rec struct{ Msg, Addr string }
			if json.Unmarshal([]byte(line), &rec) == nil && rec.Msg == "listening" {
				addr <- rec.Addr
			}
		}
		p.err = cmd.Wait()
		close(p.exited)
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-p.exited
	})
	select {
	case p.addr = <-addr:
	case <-p.exited:
		t.Fatalf("sandboxd serve exited: %v\n%s", p.err, p.log())
	case <-time.After(20 * time.Second):
		t.Fatalf("sandboxd serve did not listen:\n%s", p.log())
	}
	return p
}

func (p *process) log() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stderr.String()
}

// waitExit waits for the process to exit and returns its status.
func (p *process) waitExit(t *testing.T, within time.Duration) int {
	t.Helper()
	select {
	case <-p.exited:
		return p.cmd.ProcessState.ExitCode()
	case <-time.After(within):
		t.Fatalf("sandboxd still runs after %v:\n%s", within, p.log())
		return -1
	}
}

func (p *process) client() *client {
	return &client{base: "http://" + p.addr, token: testToken, http: &http.Client{Timeout: time.Minute}}
}

// get returns the status of GET url.
func get(t *testing.T, url string) int {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}
