//go:build linux

package runner_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	afrun "github.com/agentsfleet/agentsfleet/shared/run"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/agentsfleet/agentsfleet/shared/awstest"
	"github.com/agentsfleet/agentsfleet/shared/fleet"
	"github.com/agentsfleet/agentsfleet/shared/invoke"
	"github.com/agentsfleet/agentsfleet/shared/model"
	"github.com/agentsfleet/agentsfleet/shared/model/scripted"
	"github.com/agentsfleet/agentsfleet/shared/runner"
	"github.com/agentsfleet/agentsfleet/shared/sandbox"
	"github.com/agentsfleet/agentsfleet/shared/sandbox/launch/launchtest"
	"github.com/agentsfleet/agentsfleet/shared/sandbox/sandboxtest"
	"github.com/agentsfleet/agentsfleet/shared/store"
)

func TestMain(m *testing.M) { awstest.Main(m) }

var ctx = context.Background()

// env is a runner over a fresh table, a workdir of its own served by
// in-process sandboxes, and local functions.
type env struct {
	t        testing.TB
	store    *store.Store
	db       *dynamodb.Client
	table    string
	work     string
	sandbox  *launchtest.Launcher
	local    *invoke.Local
	cfg      runner.Config
	mu       sync.Mutex
	notes    []runner.Note
	onNote   func(runner.Note)
	runner   *runner.Runner
	modelHit int
}

func newEnv(t testing.TB, script string, opts ...func(*runner.Config)) *env {
	t.Helper()
	db := dynamodb.NewFromConfig(awstest.Config(t))
	table := awstest.UniqueName(t, "run")
	if err := store.CreateTable(ctx, db, table); err != nil {
		t.Fatal(err)
	}
	e := &env{t: t, store: store.New(db, table), db: db, table: table, work: filepath.Join(sandboxtest.Base(t), "work")}
	sandboxtest.Mkdir(t, e.work)
	// Commands run as an unprivileged uid when the tests run as root.
	if err := os.Chmod(e.work, 0o777); err != nil {
		t.Fatal(err)
	}
	e.sandbox = launchtest.New(t, sandbox.Dirs{Workdir: e.work})
	e.local = invoke.NewLocal(nil)
	t.Cleanup(e.local.Close)
	m, err := scripted.Parse([]byte(script), t.Name()+".toml")
	if err != nil {
		t.Fatal(err)
	}
	e.cfg = runner.Config{Store: e.store, Model: counting{m, &e.mu, &e.modelHit}, DefaultModel: "scripted",
		Sandboxes: e.sandbox, Invoker: e.local, Observer: e.observe}
	for _, o := range opts {
		o(&e.cfg)
	}
	if e.cfg.After != nil {
		// A runner that waits on an injected clock waits for a lease to
		// lapse by the store's clock: the store reads the same one.
		e.store = store.New(db, table, store.WithClock(e.cfg.Now))
		e.cfg.Store = e.store
	}
	e.runner, err = runner.New(e.cfg)
	if err != nil {
		t.Fatal(err)
	}
	e.local.Register(invoke.Runner, e.runner.Handle)
	return e
}

// counting counts model calls.
type counting struct {
	model.Model
	mu *sync.Mutex
	n  *int
}

func (c counting) Converse(ctx context.Context, req model.Request) (model.Response, error) {
	c.mu.Lock()
	*c.n++
	c.mu.Unlock()
	return c.Model.Converse(ctx, req)
}

func (e *env) observe(n runner.Note) {
	e.mu.Lock()
	e.notes = append(e.notes, n)
	f := e.onNote
	e.mu.Unlock()
	if f != nil {
		f(n)
	}
}

// fleet creates a fleet from a Definition in TOML.
func (e *env) fleet(def string) *fleet.Definition {
	e.t.Helper()
	d, err := fleet.ParseTOML([]byte(def))
	if err != nil {
		e.t.Fatal(err)
	}
	if _, err := e.store.CreateFleet(ctx, store.NewFleet{Name: d.Name, Definition: d.Canonical(), Hash: d.Hash()}); err != nil {
		e.t.Fatal(err)
	}
	return d
}

// start records a run of the fleet and returns its id.
func (e *env) start(d *fleet.Definition, input string) string {
	e.t.Helper()
	r, _, err := e.store.CreateRun(ctx, store.NewRun{Fleet: d.Name, Source: store.SourceAPI, Input: []byte(input),
		Limits: store.Budget{Tokens: d.Limits.Budget.Tokens, ToolCalls: int64(d.Limits.Budget.ToolCalls)}})
	if err != nil {
		e.t.Fatal(err)
	}
	return r.ID
}

// events returns the run's events.
func (e *env) events(runID string) []store.Event {
	e.t.Helper()
	var all []store.Event
	from := int64(1)
	for {
		evs, next, err := e.store.ListEvents(ctx, runID, from, 100)
		if err != nil {
			e.t.Fatal(err)
		}
		all = append(all, evs...)
		if next == 0 {
			return all
		}
		from = next
	}
}

// ended returns the run's status and its run.ended data.
func (e *env) ended(runID string) (store.Run, afrun.RunEnded) {
	e.t.Helper()
	run, err := e.store.GetRun(ctx, runID)
	if err != nil {
		e.t.Fatal(err)
	}
	evs := e.events(runID)
	var end afrun.RunEnded
	if len(evs) == 0 || evs[len(evs)-1].Type != afrun.EventRunEnded {
		e.t.Fatalf("run %s (%s) has no run.ended last: %v", runID, run.Status, types(evs))
	}
	if err := json.Unmarshal(evs[len(evs)-1].Data, &end); err != nil {
		e.t.Fatal(err)
	}
	return run, end
}

func types(evs []store.Event) []string {
	out := make([]string, len(evs))
	for i, ev := range evs {
		out[i] = ev.Type
	}
	return out
}

// results returns the run's tool.result data, in order.
func (e *env) results(runID string) []afrun.ToolResult {
	var out []afrun.ToolResult
	for _, ev := range e.events(runID) {
		if ev.Type == afrun.EventToolResult {
			var r afrun.ToolResult
			json.Unmarshal(ev.Data, &r)
			out = append(out, r)
		}
	}
	return out
}

func (e *env) write(name, content string) {
	e.t.Helper()
	if err := os.WriteFile(filepath.Join(e.work, name), []byte(content), 0o666); err != nil {
		e.t.Fatal(err)
	}
}

func (e *env) read(name string) string {
	e.t.Helper()
	b, err := os.ReadFile(filepath.Join(e.work, name))
	if err != nil {
		e.t.Fatal(err)
	}
	return string(b)
}

// definition is a fleet allowing tools.
func definition(name string, tools ...string) string {
	return `name = "` + name + `"
instructions = "Do as asked."
[x-agentsfleet]
tools = ["` + strings.Join(tools, `", "`) + `"]
`
}

func wait(t testing.TB, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); !cond(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

func readFile(dir, name string) (string, error) {
	b, err := os.ReadFile(filepath.Join(dir, name))
	return string(b), err
}
