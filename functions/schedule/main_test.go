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

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/agentsfleet/agentsfleet/shared/awstest"
	"github.com/agentsfleet/agentsfleet/shared/fault"
	"github.com/agentsfleet/agentsfleet/shared/fleet"
	"github.com/agentsfleet/agentsfleet/shared/invoke"
	"github.com/agentsfleet/agentsfleet/shared/schedule/eventbridge"
	"github.com/agentsfleet/agentsfleet/shared/schedule/keeper"
	"github.com/agentsfleet/agentsfleet/shared/store"
)

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
		_, err := settings(cfg, func(k string) string { return tc.env[k] }, slog.New(slog.DiscardHandler))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("settings(%v) = %v, want an error with %q", tc.env, err, tc.want)
		}
	}
}

// TestFireSampleEvents: the sample events, naming schedules made on the
// emulator, fire through the wired Keeper: the cron one delivered twice
// starts one run, the follow-up starts one and is removed.
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
	cfg, err := settings(awsCfg, func(k string) string { return env[k] }, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Scrub != nil {
		t.Error("Scrub wired without AGENTSFLEET_FUNCTION_WEBTOOLS")
	}
	ctx := t.Context()
	if err := cfg.Scheduler.(*eventbridge.Scheduler).EnsureGroup(ctx); err != nil {
		t.Fatal(err)
	}
	local := invoke.NewLocal(slog.New(slog.DiscardHandler))
	t.Cleanup(local.Close)
	local.Register(invoke.Runner, func(context.Context, []byte) ([]byte, error) { return nil, nil })
	cfg.Invoker = local
	k, err := keeper.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	d, err := fleet.ParseTOML([]byte("name = \"acme-triage\"\ninstructions = \"Triage.\"\n"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cfg.Store.CreateFleet(ctx, store.NewFleet{Name: d.Name, Definition: d.Canonical(), Hash: d.Hash()}); err != nil {
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
		if err := k.Fire(ctx, b); err != nil {
			t.Fatalf("Fire(%s): %v", b, err)
		}
	}
	fire(events[0], cron.ID)
	fire(events[0], cron.ID) // Scheduler delivers at least once
	fire(events[1], follow.ID)
	page, err := cfg.Store.ListRuns(ctx, d.Name, "", 10)
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
