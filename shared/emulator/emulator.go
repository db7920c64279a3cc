// Package emulator starts and addresses the AWS API emulator that the local
// stack and the tests use instead of AWS: moto server from the repository's
// Python virtualenv, served single-threaded (localstack/moto_server.py) so
// that DynamoDB's conditional writes and transactions stay atomic, or any
// endpoint given in AWS_ENDPOINT_URL (LocalStack, a moto someone started).
package emulator

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
)

// Region is the region every emulator config uses.
const Region = "us-east-1"

// Config returns an aws.Config for the emulator at endpoint: dummy static
// credentials, Region, and few retries. Clients built from it never reach AWS.
func Config(ctx context.Context, endpoint string) (aws.Config, error) {
	cfg, err := config.LoadDefaultConfig(ctx,
		config.WithRegion(Region),
		config.WithCredentialsProvider(credentials.NewStaticCredentialsProvider("test", "test", "")),
		config.WithBaseEndpoint(endpoint),
		// The emulator is local: retry throttling-free, and never wait long.
		config.WithRetryer(func() aws.Retryer { return seenRetries{retry.AddWithMaxAttempts(retry.NewStandard(), 3)} }),
		// Connections are kept alive: moto_server.py serves each on a thread
		// of its own (and lets one request at a time into moto). One
		// connection per request, against a server that served one
		// connection at a time, now and then lost an answer: the transport
		// closed the connection before the body was read, and the SDK's
		// retry of a conditional write that had landed failed its own
		// condition.
	)
	if err != nil {
		return aws.Config{}, fmt.Errorf("load emulator config: %w", err)
	}
	return cfg, nil
}

// Moto is a running moto server started by Start.
type Moto struct {
	Endpoint string
	cmd      *exec.Cmd
	exited   chan struct{} // closed once moto has exited and been reaped
}

// Start starts localstack/moto_server.py with the repository's .venv
// Python (or $AGENTSFLEET_PYTHON) on addr ("127.0.0.1:0" picks a free port)
// and waits until it answers.
func Start(ctx context.Context, addr string) (*Moto, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("moto address %q: %w", addr, err)
	}
	root, err := RepoRoot()
	if err != nil {
		return nil, err
	}
	python := os.Getenv("AGENTSFLEET_PYTHON")
	if python == "" {
		python = filepath.Join(root, ".venv", "bin", "python")
	}
	if _, err := os.Stat(python); err != nil {
		return nil, fmt.Errorf("moto needs the Python virtualenv at %s (run `make venv` or `make test`): %w", python, err)
	}
	cmd := exec.Command(python, filepath.Join(root, "localstack", "moto_server.py"), "--host", host, "--port", port)
	cmd.Stderr = nil // moto logs every request there; keep test output readable
	if name := os.Getenv("AGENTSFLEET_MOTO_LOG"); name != "" {
		// Debugging the emulator: its request log and tracebacks to a file.
		f, err := os.OpenFile(name, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			return nil, fmt.Errorf("AGENTSFLEET_MOTO_LOG: %w", err)
		}
		defer f.Close()
		cmd.Stderr = f
	}
	cmd.SysProcAttr = procAttr()
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, fmt.Errorf("moto stdout: %w", err)
	}
	m := &Moto{cmd: cmd}
	if err := m.start(); err != nil {
		return nil, fmt.Errorf("start moto: %w", err)
	}
	lines := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if ep, ok := strings.CutPrefix(sc.Text(), "listening on "); ok {
				lines <- ep
			}
		}
		close(lines)
	}()
	select {
	case ep, ok := <-lines:
		if !ok {
			<-m.exited
			return nil, errors.New("moto exited before listening (is moto installed in the virtualenv?)")
		}
		m.Endpoint = ep
	case <-time.After(60 * time.Second):
		m.Stop()
		return nil, errors.New("moto did not start within 60s")
	case <-ctx.Done():
		m.Stop()
		return nil, ctx.Err()
	}
	if err := waitReady(ctx, m.Endpoint); err != nil {
		m.Stop()
		return nil, err
	}
	return m, nil
}

// start starts moto from a goroutine that keeps its thread until moto has
// exited and been reaped. The kernel sends Pdeathsig (see procAttr) when
// the thread that forked the child ends, not the process, and the Go
// runtime ends a thread whenever a goroutine locked to it returns: forked
// from any thread, moto could be stopped by unrelated code of the same
// binary that locks a thread (sandboxd's browser once did, in the runner's
// tests).
func (m *Moto) start() error {
	started := make(chan error, 1)
	m.exited = make(chan struct{})
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		if err := m.cmd.Start(); err != nil {
			started <- err
			return
		}
		started <- nil
		_ = m.cmd.Wait()
		close(m.exited)
	}()
	return <-started
}

// Stop ends the server and waits for it.
func (m *Moto) Stop() {
	if m == nil || m.cmd.Process == nil {
		return
	}
	_ = syscall.Kill(-m.cmd.Process.Pid, syscall.SIGTERM)
	select {
	case <-m.exited:
	case <-time.After(5 * time.Second):
		_ = syscall.Kill(-m.cmd.Process.Pid, syscall.SIGKILL)
		<-m.exited
	}
}

func waitReady(ctx context.Context, ep string) error {
	deadline := time.Now().Add(30 * time.Second)
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, ep+"/moto-api/data.json", nil)
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			resp.Body.Close()
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("moto at %s not ready: %w", ep, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// RepoRoot finds the repository (the folder holding go.mod and
// localstack/) from the working directory upwards, else from the running
// executable's folder upwards: bin/agentsfleet run from any folder still
// finds the virtualenv of the clone it was built in.
func RepoRoot() (string, error) {
	var starts []string
	if wd, err := os.Getwd(); err == nil {
		starts = append(starts, wd)
	}
	if exe, err := os.Executable(); err == nil {
		if exe, err = filepath.EvalSymlinks(exe); err == nil {
			starts = append(starts, filepath.Dir(exe))
		}
	}
	for _, dir := range starts {
		for {
			if isRepo(dir) {
				return dir, nil
			}
			parent := filepath.Dir(dir)
			if parent == dir {
				break
			}
			dir = parent
		}
	}
	return "", errors.New("find the agentsfleet repository (for its moto virtualenv): no go.mod with localstack/ above the working directory or the agentsfleet binary; run from the clone, or set AWS_ENDPOINT_URL to a running emulator")
}

func isRepo(dir string) bool {
	_, err1 := os.Stat(filepath.Join(dir, "go.mod"))
	_, err2 := os.Stat(filepath.Join(dir, "localstack", "moto_server.py"))
	return err1 == nil && err2 == nil
}

// seenRetries logs why a request to the emulator is retried. A retry there
// is rare and worth seeing: a conditional write retried after its first
// attempt landed fails its own condition, and the log says what the first
// attempt met.
type seenRetries struct{ aws.Retryer }

func (r seenRetries) IsErrorRetryable(err error) bool {
	ok := r.Retryer.IsErrorRetryable(err)
	if ok {
		log.Printf("emulator: retrying a request after: %v", err)
	}
	return ok
}
