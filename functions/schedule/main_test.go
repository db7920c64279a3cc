package main

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/scheduler"

	"github.com/agentsfleet/agentsfleet/shared/awstest"
	"github.com/agentsfleet/agentsfleet/shared/deploy"
	"github.com/agentsfleet/agentsfleet/shared/deploy/schedulefn"
	"github.com/agentsfleet/agentsfleet/shared/fault"
	"github.com/agentsfleet/agentsfleet/shared/fleet"
	"github.com/agentsfleet/agentsfleet/shared/invoke"
	"github.com/agentsfleet/agentsfleet/shared/schedule/eventbridge"
	"github.com/agentsfleet/agentsfleet/shared/schedule/keeper"
	"github.com/agentsfleet/agentsfleet/shared/store"
)

// The settings, by the components' names.
const (
	envTable  = store.EnvTable
	envRunner = invoke.EnvRunner
	envGroup  = eventbridge.EnvGroup
	envTarget = eventbridge.EnvTarget
	envRole   = eventbridge.EnvRole
)

// build is what main builds, with the settings of env and inv (nil:
// Lambda's) calling the other functions.
func build(awsCfg aws.Config, env map[string]string, inv invoke.Invoker) (*keeper.Keeper, error) {
	return schedulefn.New(context.Background(), deploy.Env{Getenv: func(k string) string { return env[k] },
		AWS: awsCfg, Log: slog.New(slog.DiscardHandler), Invoker: inv})
}

func TestMain(m *testing.M) { awstest.Main(m) }

var events = []string{"../../events/schedule/cron.json", "../../events/schedule/follow-up.json"}

// The sample events are payloads Fire reads: the Input Scheduler sends,
// its scheduled-time attribute filled in.
func TestSampleEvents(t *testing.T) {
	t.Parallel()
	for _, name := range events {
		b, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		p, err := eventbridge.ParsePayload(b)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if _, err := time.Parse(time.RFC3339, p.ScheduledTime); err != nil || p.Fleet == "" || !strings.HasPrefix(p.ScheduleID, "sch_") {
			t.Errorf("%s: %+v, %v", name, p, err)
		}
	}
}

func TestSettingsAreChecked(t *testing.T) {
	t.Parallel()
	cfg := awstest.Config(t)
	for _, tc := range []struct {
		env  map[string]string
		want string
	}{
		{map[string]string{}, "AGENTSFLEET_TABLE, AGENTSFLEET_FUNCTION_RUNNER, AGENTSFLEET_SCHEDULE_GROUP, AGENTSFLEET_SCHEDULE_TARGET_ARN, AGENTSFLEET_SCHEDULE_ROLE_ARN not set"},
		{map[string]string{envTable: "t", envRunner: "r", envGroup: "g", envTarget: "arn:t"}, "AGENTSFLEET_SCHEDULE_ROLE_ARN not set"},
		{map[string]string{envTable: "t", envRunner: "r", envGroup: "bad group", envTarget: "arn:t", envRole: "arn:r"}, `group name "bad group"`},
	} {
		if _, err := build(cfg, tc.env, nil); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("build(%v) = %v, want an error with %q", tc.env, err, tc.want)
		}
	}
}

// TestFireSampleEvents: the sample events, naming schedules made on the
// emulator, fire through the handler main registers: the cron one
// delivered twice starts one run, the follow-up starts one and is removed.
func TestFireSampleEvents(t *testing.T) {
	t.Parallel()
	awsCfg := awstest.Config(t)
	table, group := awstest.UniqueName(t, "sched"), awstest.UniqueName(t, "sched")
	if err := store.CreateTable(context.Background(), dynamodb.NewFromConfig(awsCfg), table); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{envTable: table, envRunner: "agentsfleet-runner", envGroup: group,
		envTarget: "arn:aws:lambda:us-east-1:123456789012:function:agentsfleet-schedule",
		envRole:   "arn:aws:iam::123456789012:role/agentsfleet-scheduler"}
	ctx := t.Context()
	sched, err := eventbridge.New(scheduler.NewFromConfig(awsCfg), eventbridge.Config{Group: group, TargetARN: env[envTarget], RoleARN: env[envRole]})
	if err != nil {
		t.Fatal(err)
	}
	if err := sched.EnsureGroup(ctx); err != nil {
		t.Fatal(err)
	}
	// Without AGENTSFLEET_FUNCTION_WEBTOOLS nothing is scrubbed: the
	// schedules' messages below are saved with no call to a webtools
	// function, which this invoker does not have.
	local := invoke.NewLocal(slog.New(slog.DiscardHandler))
	t.Cleanup(local.Close)
	local.Register(invoke.Runner, func(context.Context, []byte) ([]byte, error) { return nil, nil })
	k, err := build(awsCfg, env, local)
	if err != nil {
		t.Fatal(err)
	}
	st := store.New(dynamodb.NewFromConfig(awsCfg), table)
	handler := invoke.Handler(k.Handle) // as main registers it
	d, err := fleet.ParseTOML([]byte("name = \"acme-triage\"\ninstructions = \"Triage.\"\n"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.CreateFleet(ctx, store.NewFleet{Name: d.Name, Definition: d.Canonical(), Hash: d.Hash()}); err != nil {
		t.Fatal(err)
	}
	cron, err := k.Create(ctx, d.Name, store.ActorPerson, "alice", keeper.Input{Expression: "cron(0 8 * * ? *)", Message: "morning triage"})
	if err != nil {
		t.Fatal(err)
	}
	follow, err := k.Create(ctx, d.Name, store.ActorFleet, "run_1",
		keeper.Input{Expression: "at(" + time.Now().UTC().Add(time.Hour).Format("2006-01-02T15:04:05") + ")", Message: "re-check"})
	if err != nil {
		t.Fatal(err)
	}
	fire := func(name, id string) {
		t.Helper()
		b, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]string
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatal(err)
		}
		m["schedule_id"] = id
		b, _ = json.Marshal(m)
		if _, err := handler.Invoke(ctx, b); err != nil {
			t.Fatalf("Invoke(%s): %v", b, err)
		}
	}
	fire(events[0], cron.ID)
	fire(events[0], cron.ID) // Scheduler delivers at least once
	fire(events[1], follow.ID)
	page, err := st.ListRuns(ctx, d.Name, "", 10)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]int{}
	for _, r := range page.Runs {
		if r.Source != store.SourceSchedule {
			t.Errorf("run %s has source %s", r.ID, r.Source)
		}
		got[r.ScheduleID]++
	}
	if got[cron.ID] != 1 || got[follow.ID] != 1 || len(page.Runs) != 2 {
		t.Errorf("runs by schedule %v; want one each", got)
	}
	if _, err := k.Get(ctx, d.Name, follow.ID); !errors.Is(err, fault.SchedNotFound) {
		t.Errorf("the follow-up after firing: %v; want it removed", err)
	}
}
