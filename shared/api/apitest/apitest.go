// Package apitest serves the real HTTP API for tests: shared/api over a
// fresh table on the emulator (shared/awstest, so the test binary's
// TestMain calls awstest.Main), a runner on a scripted model behind
// invoke.Local, and, when asked, schedules kept by a real keeper over the
// emulator's EventBridge Scheduler. Nothing in it is a mock: it is the
// product's own parts, wired as `agentsfleet dev` wires them, minus the
// sandboxes.
package apitest

import (
	"context"
	"io"
	"log/slog"
	"net/http/httptest"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/scheduler"

	"github.com/agentsfleet/agentsfleet/shared/api"
	"github.com/agentsfleet/agentsfleet/shared/awstest"
	"github.com/agentsfleet/agentsfleet/shared/improve"
	"github.com/agentsfleet/agentsfleet/shared/improve/agent"
	"github.com/agentsfleet/agentsfleet/shared/invoke"
	"github.com/agentsfleet/agentsfleet/shared/model/scripted"
	"github.com/agentsfleet/agentsfleet/shared/runner"
	"github.com/agentsfleet/agentsfleet/shared/sandbox/launch"
	"github.com/agentsfleet/agentsfleet/shared/schedule/eventbridge"
	"github.com/agentsfleet/agentsfleet/shared/schedule/keeper"
	"github.com/agentsfleet/agentsfleet/shared/scope"
	"github.com/agentsfleet/agentsfleet/shared/store"
)

// Fixtures the API's clients test with.
const (
	// PlanScript plans, then answers: a run makes run.started, tool.call,
	// plan.updated, tool.result and run.ended.
	PlanScript = `[[turn]]
[[turn.tool_call]]
name = "update_plan"
arguments = { plan = [{ step = "look at {{input}}", status = "completed" }] }

[[turn]]
text = "done: {{input}}"
`
	// OpsTOML is a fleet holding update_plan.
	OpsTOML = `name = "ops"
instructions = "Keep things running."
[x-agentsfleet]
tools = ["update_plan"]
`
	// TightTOML's runs fail: their first model call spends more than the
	// budget.
	TightTOML = `name = "tight"
instructions = "Keep things running."
[x-agentsfleet]
tools = ["update_plan"]
[x-agentsfleet.limits.budget]
tokens = 1
`
)

// Options shape a Server; the zero Options answer each run with its input.
type Options struct {
	// Script is the scripted model's script (TOML); "" answers
	// "done: {{input}}".
	Script string
	// Schedules keeps schedules in the emulator's Scheduler; without it the
	// schedule routes answer that schedules are not configured.
	Schedules bool
	// ChatScript is the improvement chats' agent's script (TOML); ""
	// answers "noted".
	ChatScript string
	// Runner and API adjust the configurations before they are used.
	Runner func(*runner.Config)
	API    func(*api.Config)
}

// Server is the API served over HTTP on loopback.
type Server struct {
	URL    string
	HTTP   *httptest.Server
	Store  *store.Store
	Local  *invoke.Local
	Keeper *keeper.Keeper // nil without Options.Schedules
	// Admin is a key with every scope.
	Admin string
}

// New starts a Server, stopped when the test ends.
func New(t testing.TB, o Options) *Server {
	t.Helper()
	ctx := context.Background()
	cfg := awstest.Config(t)
	db := dynamodb.NewFromConfig(cfg)
	table := awstest.UniqueName(t, "api")
	if err := store.CreateTable(ctx, db, table); err != nil {
		t.Fatal(err)
	}
	s := &Server{Store: store.New(db, table), Local: invoke.NewLocal(nil)}
	t.Cleanup(s.Local.Close)
	script := o.Script
	if script == "" {
		script = "[[turn]]\ntext = \"done: {{input}}\"\n"
	}
	m, err := scripted.Parse([]byte(script), "apitest.toml")
	if err != nil {
		t.Fatal(err)
	}
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	rcfg := runner.Config{Store: s.Store, Model: m, DefaultModel: "scripted", Sandboxes: launch.None{Why: "no sandboxes in API tests"},
		Invoker: s.Local, Log: quiet}
	acfg := api.Config{Store: s.Store, Invoker: s.Local, Log: quiet}
	if o.Schedules {
		sched, err := eventbridge.New(scheduler.NewFromConfig(cfg), eventbridge.Config{Group: table,
			TargetARN: "arn:aws:lambda:us-east-1:123456789012:function:agentsfleet-schedule",
			RoleARN:   "arn:aws:iam::123456789012:role/agentsfleet-scheduler"})
		if err != nil {
			t.Fatal(err)
		}
		if err := sched.EnsureGroup(ctx); err != nil {
			t.Fatal(err)
		}
		if s.Keeper, err = keeper.New(keeper.Config{Store: s.Store, Scheduler: sched, Invoker: s.Local, Log: quiet}); err != nil {
			t.Fatal(err)
		}
		acfg.Schedules = s.Keeper
		rcfg.Schedules = s.Keeper.Book()
	}
	if o.Runner != nil {
		o.Runner(&rcfg)
	}
	if o.API != nil {
		o.API(&acfg)
	}
	rn, err := runner.New(rcfg)
	if err != nil {
		t.Fatal(err)
	}
	chatScript := o.ChatScript
	if chatScript == "" {
		chatScript = "[[turn]]\ntext = \"noted\"\n"
	}
	cm, err := scripted.Parse([]byte(chatScript), "apitest-chat.toml")
	if err != nil {
		t.Fatal(err)
	}
	chats, err := agent.New(agent.Config{Store: s.Store, Model: cm, DefaultModel: "scripted", Invoker: s.Local, Log: quiet})
	if err != nil {
		t.Fatal(err)
	}
	// The runner function's handler, as its main registers it.
	s.Local.Register(invoke.Runner, improve.Dispatch(rn.Handle, chats.Handle))
	a, err := api.New(acfg)
	if err != nil {
		t.Fatal(err)
	}
	s.HTTP = httptest.NewServer(a)
	t.Cleanup(s.HTTP.Close)
	s.URL = s.HTTP.URL
	if _, s.Admin, err = s.Store.CreateKey(ctx, "admin", scope.Names()); err != nil {
		t.Fatal(err)
	}
	return s
}
