//go:build linux

package runner_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	afrun "github.com/agentsfleet/agentsfleet/shared/run"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/agentsfleet/agentsfleet/shared/awstest"
	"github.com/agentsfleet/agentsfleet/shared/runner"
	"github.com/agentsfleet/agentsfleet/shared/sandbox"
	"github.com/agentsfleet/agentsfleet/shared/sandbox/client"
	"github.com/agentsfleet/agentsfleet/shared/sandbox/launch"
	"github.com/agentsfleet/agentsfleet/shared/sandbox/sandboxtest"
	"github.com/agentsfleet/agentsfleet/shared/sandbox/server"
	"github.com/agentsfleet/agentsfleet/shared/store"
)

// freshLauncher starts each run's sandbox over an empty agent folder, as a
// new Fargate task has: only a restore brings the fleet's files back. It
// is no launch.Placer, so the runner keeps the folder.
type freshLauncher struct {
	t           testing.TB
	work, agent string
	mu          sync.Mutex
	runs        map[string]*freshSandbox
	started     int
}

type freshSandbox struct {
	ts    *httptest.Server
	sb    *launch.Sandbox
	tools []io.Closer
}

var _ launch.Launcher = (*freshLauncher)(nil)

func (l *freshLauncher) Acquire(_ context.Context, spec launch.Spec) (*launch.Sandbox, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if r, ok := l.runs[spec.RunID]; ok {
		return r.sb, nil
	}
	if err := os.RemoveAll(l.agent); err != nil {
		return nil, err
	}
	if err := os.Mkdir(l.agent, 0o777); err != nil {
		return nil, err
	}
	if err := os.Chmod(l.agent, 0o777); err != nil { // for the commands' uid
		return nil, err
	}
	roots, err := sandbox.New(sandbox.Dirs{Workdir: l.work, Agent: l.agent})
	if err != nil {
		return nil, err
	}
	b := make([]byte, 16)
	rand.Read(b)
	tok := hex.EncodeToString(b)
	tools := server.Tools(server.Config{Roots: roots, Timeout: spec.ToolTimeout})
	srv, err := server.New(server.Options{Token: tok, Tools: tools, Agent: server.AgentRoot(roots), Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		return nil, err
	}
	ts := httptest.NewServer(srv)
	c, err := client.New(client.Config{URL: ts.URL, Token: tok})
	if err != nil {
		ts.Close()
		return nil, err
	}
	r := &freshSandbox{ts: ts, sb: &launch.Sandbox{ID: "fresh-" + spec.RunID, Client: c}}
	for _, t := range tools {
		if c, ok := t.(io.Closer); ok {
			r.tools = append(r.tools, c)
		}
	}
	l.runs[spec.RunID] = r
	l.started++
	return r.sb, nil
}

func (l *freshLauncher) Release(_ context.Context, runID string) error {
	l.mu.Lock()
	r, ok := l.runs[runID]
	delete(l.runs, runID)
	l.mu.Unlock()
	if ok {
		r.ts.CloseClientConnections()
		r.ts.Close()
		for _, c := range r.tools {
			c.Close()
		}
	}
	return nil
}

// folderEnv is a runner whose sandboxes start empty, keeping the fleet's
// folder in a moto S3 bucket.
func folderEnv(t *testing.T, script, agent string, opts ...func(*runner.Config)) (*env, *freshLauncher, *s3.Client, string) {
	t.Helper()
	s3c := s3.NewFromConfig(awstest.Config(t), func(o *s3.Options) { o.UsePathStyle = true })
	bucket := strings.ToLower(awstest.UniqueName(t, "folder"))
	if _, err := s3c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(bucket)}); err != nil {
		t.Fatal(err)
	}
	l := &freshLauncher{t: t, agent: agent, runs: map[string]*freshSandbox{}}
	e := newEnv(t, script, func(c *runner.Config) {
		c.Sandboxes = l
		c.Folders = runner.S3Folders{Presign: s3.NewPresignClient(s3c), Client: s3c, Bucket: bucket}
		for _, o := range opts {
			o(c)
		}
	})
	l.work = e.work
	t.Cleanup(func() {
		l.mu.Lock()
		var ids []string
		for id := range l.runs {
			ids = append(ids, id)
		}
		l.mu.Unlock()
		for _, id := range ids {
			l.Release(ctx, id)
		}
	})
	return e, l, s3c, bucket
}

// notesScript reads the fleet's notes, writing them when there are none.
func notesScript(agent string) string {
	return fmt.Sprintf(`
[[turn]]
[[turn.tool_call]]
name = "bash"
arguments = { command = "cat %[1]s/notes.txt 2>/dev/null || { echo no notes yet; echo remember the build flag > %[1]s/notes.txt; }" }

[[turn]]
text = "bash said: {{output \"bash\"}}"
`, agent)
}

func folderEvents(e *env, runID string) (types []string, saved *afrun.FolderSaved, notSaved *afrun.FolderNotSaved) {
	for _, ev := range e.events(runID) {
		switch ev.Type {
		case afrun.EventFolderSaved:
			saved = &afrun.FolderSaved{}
			json.Unmarshal(ev.Data, saved)
		case afrun.EventFolderNotSaved:
			notSaved = &afrun.FolderNotSaved{}
			json.Unmarshal(ev.Data, notSaved)
		default:
			continue
		}
		types = append(types, ev.Type)
	}
	return types, saved, notSaved
}

// TestFleetFolderIsKeptAcrossRuns: run 1 writes /agent/notes.txt with
// bash in a sandbox that starts empty; the runner saves the folder to S3
// as the run ends, and run 2, in a new empty sandbox, reads it back.
func TestFleetFolderIsKeptAcrossRuns(t *testing.T) {
	t.Parallel()
	e, l, s3c, bucket := folderEnvWithScript(t)
	d := e.fleet(definition("memory", "bash"))

	first := e.start(d, "take notes")
	if err := e.runner.Run(ctx, first); err != nil {
		t.Fatal(err)
	}
	run, end := e.ended(first)
	if run.Status != store.StatusSucceeded || !strings.Contains(end.Answer, "no notes yet") {
		t.Fatalf("run 1: %s, answer %q", run.Status, end.Answer)
	}
	if types, saved, _ := folderEvents(e, first); saved == nil || saved.Files != 1 || saved.Key != runner.FolderKey("memory") {
		t.Fatalf("run 1's folder events %v, saved %+v", types, saved)
	}
	obj, err := s3c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(bucket), Key: aws.String(runner.FolderKey("memory"))})
	if err != nil || aws.ToInt64(obj.ContentLength) == 0 {
		t.Fatalf("no folder in the bucket: %v", err)
	}

	second := e.start(d, "read the notes")
	if err := e.runner.Run(ctx, second); err != nil {
		t.Fatal(err)
	}
	run, end = e.ended(second)
	if want := "bash said: remember the build flag"; run.Status != store.StatusSucceeded || !strings.HasPrefix(end.Answer, want) {
		t.Fatalf("run 2: %s, answer %q, want %q", run.Status, end.Answer, want)
	}
	if l.started != 2 {
		t.Errorf("%d sandboxes started, want 2 (one per run)", l.started)
	}
	if _, saved, notSaved := folderEvents(e, second); saved == nil || notSaved != nil {
		t.Errorf("run 2: saved %+v, not saved %+v", saved, notSaved)
	}
}

// TestOverlappingSaveIsRefused: another run saves the fleet's folder while
// this one works; this run's save is refused, and its events say so.
func TestOverlappingSaveIsRefused(t *testing.T) {
	t.Parallel()
	e, _, s3c, bucket := folderEnvWithScript(t)
	d := e.fleet(definition("overlap", "bash"))
	key := runner.FolderKey("overlap")
	e.onNote = func(n runner.Note) {
		if n.Event != nil && n.Event.Type == afrun.EventToolResult {
			// The other run's save lands after this run restored.
			if _, err := s3c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(key),
				Body: bytes.NewReader([]byte("another run's folder"))}); err != nil {
				t.Error(err)
			}
		}
	}
	id := e.start(d, "take notes")
	if err := e.runner.Run(ctx, id); err != nil {
		t.Fatal(err)
	}
	run, _ := e.ended(id)
	types, saved, notSaved := folderEvents(e, id)
	if run.Status != store.StatusSucceeded || saved != nil || notSaved == nil || !strings.Contains(notSaved.Reason, "another run of the fleet saved it meanwhile") {
		t.Fatalf("run %s, folder events %v, not saved %+v", run.Status, types, notSaved)
	}
	out, err := s3c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)})
	if err != nil {
		t.Fatal(err)
	}
	defer out.Body.Close()
	if b, _ := io.ReadAll(out.Body); string(b) != "another run's folder" {
		t.Errorf("the stored folder was overwritten: %.40q", b)
	}
}

// folderEnvWithScript is folderEnv with notesScript over its agent folder.
func folderEnvWithScript(t *testing.T, opts ...func(*runner.Config)) (*env, *freshLauncher, *s3.Client, string) {
	t.Helper()
	agent := filepath.Join(sandboxtest.Base(t), "agent")
	return folderEnv(t, notesScript(agent), agent, opts...)
}

// TestFolderIsSavedByTheInvocationThatEnds: the run writes its notes, then
// is handed over before the deadline; the invocation that ends it makes no
// sandbox call, yet saves the folder the run's sandbox holds.
func TestFolderIsSavedByTheInvocationThatEnds(t *testing.T) {
	t.Parallel()
	clock := &steppingClock{step: 5 * time.Minute}
	clock.t.Store(time.Now().UnixNano())
	e, l, _, _ := folderEnvWithScript(t, func(c *runner.Config) { c.Now = clock.Now; c.Margin = time.Minute })
	d := e.fleet(definition("handover", "bash"))
	id := e.start(d, "take notes")
	dctx, cancel := context.WithDeadline(ctx, clock.Now().Add(12*time.Minute))
	defer cancel()
	if err := e.runner.Run(dctx, id); err != nil {
		t.Fatal(err)
	}
	e.local.Wait()
	run, end := e.ended(id)
	if run.Status != store.StatusSucceeded || !strings.Contains(end.Answer, "no notes yet") {
		t.Fatalf("run %s, answer %q", run.Status, end.Answer)
	}
	if types, saved, notSaved := folderEvents(e, id); saved == nil || saved.Files != 1 {
		t.Fatalf("folder events %v, saved %+v, not saved %+v", types, saved, notSaved)
	}
	if l.started != 1 {
		t.Errorf("%d sandboxes started, want 1: the second invocation gets the run's sandbox back", l.started)
	}
}
