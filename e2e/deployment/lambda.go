package deployment

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// function is one Lambda function of the template: its bootstrap, the
// environment the template gives it, and the containers (processes, each
// under a Runtime API of its own) that serve its invocations, one
// invocation at a time each, as Lambda's execution environments do.
type function struct {
	d         *Deployment
	id        string // the template's logical id
	name, arn string
	role      string // the logical id of its execution role
	bootstrap string
	env       []string
	timeout   time.Duration
	memoryMiB int
	// retries and onFailure are its asynchronous invocation config
	// (AWS::Lambda::EventInvokeConfig): attempts after the first, and the
	// destination's ARN.
	retries   int
	onFailure string
	// limit is how many containers may run at once (its reserved
	// concurrency, or the harness' cap).
	limit int
	aws   *endpoint // its AWS endpoint, which records its calls

	work chan *invocation

	mu         sync.Mutex
	containers map[*container]bool
	idle       int // containers waiting for an invocation
	starting   int
	waiting    int // invocations not yet taken

	invocations, completed atomic.Int64

	// metrics are the EMF documents of its output, as CloudWatch Logs
	// extracts them.
	metricsMu sync.Mutex
	metrics   []map[string]any
}

// invocation is one invocation on its way through a container.
type invocation struct {
	id      string
	payload []byte
	// async marks an Event invocation; dropped one whose retries the
	// harness has been told to skip (see Deployment.Kill).
	async   bool
	dropped atomic.Bool
	done    chan outcome // buffered: one outcome
	f       *function
}

// finish delivers the invocation's outcome.
func (inv *invocation) finish(o outcome) {
	inv.f.completed.Add(1)
	inv.done <- o
}

// outcome is what the function answered: a payload, or an error in the
// shape Lambda reports ({"errorMessage", "errorType"}).
type outcome struct {
	payload []byte
	err     *FunctionError
}

// FunctionError is a function's error answer, as Lambda's Invoke returns
// it with X-Amz-Function-Error.
type FunctionError struct {
	Message string `json:"errorMessage"`
	Type    string `json:"errorType"`
}

func (e *FunctionError) Error() string { return e.Type + ": " + e.Message }

func (e *FunctionError) body() []byte {
	b, _ := json.Marshal(e)
	return b
}

// Invoke runs payload on the function and returns its answer, as a
// RequestResponse invocation does: a new container starts when none is
// idle (up to the function's concurrency), and one that does not answer
// within the function's timeout is killed.
func (f *function) Invoke(ctx context.Context, payload []byte) ([]byte, error) {
	inv := f.enqueue(payload, false)
	select {
	case o := <-inv.done:
		if o.err != nil {
			return nil, o.err
		}
		return o.payload, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// InvokeAsync queues payload as an Event invocation: attempted, retried
// after a failure as the function's event invoke config says (Lambda
// waits a minute, then two; the harness waits RetryDelay and twice it),
// and sent to the on-failure destination when every attempt failed.
func (f *function) InvokeAsync(payload []byte) {
	payload = append([]byte(nil), payload...)
	f.d.wg.Add(1)
	go func() {
		defer f.d.wg.Done()
		var last outcome
		attempts := 0
		for attempts <= f.retries {
			if attempts > 0 {
				select {
				case <-time.After(time.Duration(attempts) * f.d.opts.RetryDelay):
				case <-f.d.closed:
					return
				}
			}
			attempts++
			inv := f.enqueue(payload, true)
			select {
			case last = <-inv.done:
			case <-f.d.closed:
				return
			}
			if last.err == nil || inv.dropped.Load() {
				return
			}
			f.logf("async invocation attempt %d failed: %v", attempts, last.err)
		}
		if f.onFailure != "" {
			f.d.sendToDestination(f, payload, last, attempts)
		}
	}()
}

func (f *function) enqueue(payload []byte, async bool) *invocation {
	f.invocations.Add(1)
	inv := &invocation{id: newRequestID(), payload: payload, async: async, done: make(chan outcome, 1), f: f}
	f.mu.Lock()
	f.waiting++
	start := f.waiting > f.idle+f.starting && len(f.containers)+f.starting < f.limit
	if start {
		f.starting++
	}
	f.mu.Unlock()
	if start {
		go f.startContainer()
	}
	f.d.wg.Add(1)
	go func() {
		defer f.d.wg.Done()
		select {
		case f.work <- inv:
		case <-f.d.closed:
			inv.finish(outcome{err: &FunctionError{Type: "Harness.Closed", Message: "the deployment was closed"}})
		}
	}()
	return inv
}

// container is one execution environment: a bootstrap process and the
// Runtime API it polls.
type container struct {
	f    *function
	cmd  *exec.Cmd
	srv  *http.Server
	dead chan struct{}

	mu      sync.Mutex
	current *invocation
	timer   *time.Timer
	killed  string // why the harness killed it
}

func (f *function) startContainer() {
	defer func() {
		f.mu.Lock()
		f.starting--
		f.mu.Unlock()
	}()
	c := &container{f: f, dead: make(chan struct{})}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		f.logf("start a container: %v", err)
		return
	}
	c.srv = &http.Server{Handler: http.HandlerFunc(c.serveRuntime), ReadHeaderTimeout: 10 * time.Second}
	go c.srv.Serve(ln)
	env := append(append([]string(nil), f.env...), "AWS_LAMBDA_RUNTIME_API="+ln.Addr().String())
	c.cmd = exec.Command(f.bootstrap)
	c.cmd.Dir = filepath.Dir(f.bootstrap)
	c.cmd.Env = env
	w := &prefixWriter{f: f}
	c.cmd.Stdout, c.cmd.Stderr = w, w
	c.cmd.SysProcAttr = procAttr()
	if err := c.cmd.Start(); err != nil {
		f.logf("start %s: %v", f.bootstrap, err)
		c.srv.Close()
		return
	}
	f.mu.Lock()
	f.containers[c] = true
	f.mu.Unlock()
	f.d.wg.Add(1)
	go func() {
		defer f.d.wg.Done()
		err := c.cmd.Wait()
		c.srv.Close()
		f.mu.Lock()
		delete(f.containers, c)
		f.mu.Unlock()
		close(c.dead)
		c.mu.Lock()
		inv, why := c.current, c.killed
		c.current = nil
		if c.timer != nil {
			c.timer.Stop()
		}
		c.mu.Unlock()
		if inv != nil {
			if why == "" {
				why = fmt.Sprintf("Runtime exited with error: %v", err)
			}
			inv.finish(outcome{err: &FunctionError{Type: "Runtime.ExitError", Message: why}})
		}
	}()
}

// kill stops the container's process group, failing its invocation with
// why.
func (c *container) kill(why string) {
	c.mu.Lock()
	if c.killed == "" {
		c.killed = why
	}
	c.mu.Unlock()
	if c.cmd.Process != nil {
		syscall.Kill(-c.cmd.Process.Pid, syscall.SIGKILL)
	}
}

// serveRuntime is the Lambda Runtime API (2018-06-01) for one container.
func (c *container) serveRuntime(w http.ResponseWriter, r *http.Request) {
	const base = "/2018-06-01/runtime/"
	path := strings.TrimPrefix(r.URL.Path, base)
	switch {
	case r.Method == http.MethodGet && path == "invocation/next":
		c.next(w, r)
	case r.Method == http.MethodPost && path == "init/error":
		body, _ := io.ReadAll(r.Body)
		c.f.logf("init error: %s", body)
		w.WriteHeader(http.StatusAccepted)
		c.kill("Runtime.InitError: " + string(body))
	case r.Method == http.MethodPost && strings.HasPrefix(path, "invocation/"):
		id, kind, _ := strings.Cut(strings.TrimPrefix(path, "invocation/"), "/")
		body, _ := io.ReadAll(r.Body)
		c.mu.Lock()
		inv := c.current
		if inv == nil || inv.id != id {
			c.mu.Unlock()
			http.Error(w, `{"errorMessage":"unknown request id","errorType":"InvalidRequestID"}`, http.StatusBadRequest)
			return
		}
		c.current = nil
		c.timer.Stop()
		c.mu.Unlock()
		switch kind {
		case "response":
			inv.finish(outcome{payload: body})
		case "error":
			var fe FunctionError
			if json.Unmarshal(body, &fe) != nil || fe.Message == "" {
				fe = FunctionError{Type: "Unhandled", Message: string(body)}
			}
			if t := r.Header.Get("Lambda-Runtime-Function-Error-Type"); fe.Type == "" && t != "" {
				fe.Type = t
			}
			inv.finish(outcome{err: &fe})
		default:
			http.Error(w, "unknown path", http.StatusNotFound)
			return
		}
		w.WriteHeader(http.StatusAccepted)
	default:
		http.Error(w, "unknown path "+r.URL.Path, http.StatusNotFound)
	}
}

// next hands the container the next invocation, with the headers Lambda
// sends: the request id, the deadline, the function's ARN and a trace id.
func (c *container) next(w http.ResponseWriter, r *http.Request) {
	f := c.f
	f.mu.Lock()
	f.idle++
	f.mu.Unlock()
	var inv *invocation
	select {
	case inv = <-f.work:
	case <-r.Context().Done():
	case <-c.dead:
	case <-f.d.closed:
	}
	f.mu.Lock()
	f.idle--
	if inv != nil {
		f.waiting--
	}
	f.mu.Unlock()
	if inv == nil {
		// The container is going: no answer at all, as the Runtime API
		// gives none to an environment being shut down.
		panic(http.ErrAbortHandler)
	}
	deadline := time.Now().Add(f.timeout)
	c.mu.Lock()
	c.current = inv
	c.timer = time.AfterFunc(f.timeout, func() {
		c.kill(fmt.Sprintf("Task timed out after %.2f seconds", f.timeout.Seconds()))
	})
	c.mu.Unlock()
	h := w.Header()
	h.Set("Lambda-Runtime-Aws-Request-Id", inv.id)
	h.Set("Lambda-Runtime-Deadline-Ms", strconv.FormatInt(deadline.UnixMilli(), 10))
	h.Set("Lambda-Runtime-Invoked-Function-Arn", f.arn)
	h.Set("Lambda-Runtime-Trace-Id", "Root=1-"+inv.id[:8]+"-"+inv.id[9:13]+inv.id[14:18]+inv.id[19:23]+inv.id[24:]+";Sampled=0")
	h.Set("Content-Type", "application/json")
	w.Write(inv.payload)
}

// Kill ends every container of the function at once, failing what they
// were running. With drop, the asynchronous invocations they ran are not
// retried, as if every retry had failed too (the store unreachable for as
// long), and sent nowhere.
func (f *function) Kill(why string, drop bool) int {
	f.mu.Lock()
	cs := make([]*container, 0, len(f.containers))
	for c := range f.containers {
		cs = append(cs, c)
	}
	f.mu.Unlock()
	for _, c := range cs {
		c.mu.Lock()
		if inv := c.current; inv != nil && drop && inv.async {
			inv.dropped.Store(true)
		}
		c.mu.Unlock()
		c.kill(why)
	}
	for _, c := range cs {
		<-c.dead
	}
	return len(cs)
}

func (f *function) logf(format string, a ...any) {
	fmt.Fprintf(&prefixWriter{f: f}, "harness: "+format+"\n", a...)
}

// prefixWriter copies a function's output to the deployment's log, the
// function's logical id before each line, and keeps its EMF documents: a
// line that is a JSON object with an _aws member (CloudWatch Logs reads
// such a line as metrics).
type prefixWriter struct {
	f       *function
	partial []byte // a line not yet ended
}

func (w *prefixWriter) Write(p []byte) (int, error) {
	w.partial = append(w.partial, p...)
	for {
		i := bytes.IndexByte(w.partial, '\n')
		if i < 0 {
			break
		}
		line := w.partial[:i]
		w.partial = w.partial[i+1:]
		var doc map[string]any
		if bytes.HasPrefix(line, []byte("{")) && json.Unmarshal(line, &doc) == nil && doc["_aws"] != nil {
			w.f.metricsMu.Lock()
			w.f.metrics = append(w.f.metrics, doc)
			w.f.metricsMu.Unlock()
		}
	}
	if out := w.f.d.opts.Log; out != nil {
		var b bytes.Buffer
		for _, line := range strings.SplitAfter(string(p), "\n") {
			if line != "" {
				b.WriteString(w.f.id + "| " + line)
			}
		}
		if !bytes.HasSuffix(b.Bytes(), []byte("\n")) {
			b.WriteByte('\n')
		}
		w.f.d.logMu.Lock()
		out.Write(b.Bytes())
		w.f.d.logMu.Unlock()
	}
	return len(p), nil
}

func newRequestID() string {
	var b [16]byte
	if _, err := randRead(b[:]); err != nil {
		panic(err)
	}
	h := fmt.Sprintf("%x", b)
	return h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}

var errClosed = errors.New("the deployment is closed")
